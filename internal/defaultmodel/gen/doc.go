// Command gen writes the embedded default model, smallcnn.onnx, with seeded
// weights so that regenerating it gives the same bytes.
package main

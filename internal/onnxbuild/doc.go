// Package onnxbuild writes ONNX model files (ModelProto wire format) from Go.
// It is the inverse of package onnx for the subset clinfer's tests and tools
// need: the embedded default model, handcrafted test models and fuzz seeds.
// In the data flow of DESIGN.md it sits before onnx.Read: it makes the bytes
// the frontend reads.
package onnxbuild

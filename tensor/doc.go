// Package tensor holds the host-side data every other clinfer package passes
// around: element types, shapes, strided (ROI) views over host memory, and the
// f16/bf16 <-> f32 conversions.
//
// In the data flow of DESIGN.md, tensors are what a Go program hands to an
// InferRequest (SetTensor) and what it reads back (Tensor); the ONNX frontend
// stores initializers as tensors on Constant nodes of the graph, and every
// device reads and writes them at the edges of a request.
package tensor

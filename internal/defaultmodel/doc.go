// Package defaultmodel embeds the small CNN that `make run`, cmd/infer and
// cmd/benchmark use when no model is given. It is an ordinary ONNX file
// (smallcnn.onnx), read through the same frontend as any user model; it is
// regenerated from gen/main.go by `go generate ./internal/defaultmodel`.
//
// The network: Conv+BatchNormalization+Relu, MaxPool, a depthwise Conv with
// HardSwish, a pointwise Conv with a residual Add, a strided Conv with Clip
// (Relu6), GlobalAveragePool, Flatten, Gemm and Softmax — the shapes of the
// mobile CNNs clinfer targets, at a size that runs in milliseconds.
package defaultmodel

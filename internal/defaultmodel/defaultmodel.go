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

import _ "embed" // for go:embed

//go:generate go run ./gen -o smallcnn.onnx

// ONNX is the encoded model.
//
//go:embed smallcnn.onnx
var ONNX []byte

// Name is the model's file name, for messages.
const Name = "smallcnn.onnx"

// InputName is the model's only input: f32[batch,3,64,64].
const InputName = "image"

// OutputName is the model's only output: f32[batch,10] class probabilities.
const OutputName = "probs"

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

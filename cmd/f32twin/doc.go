// Command f32twin writes the float32 twin of a float16 ONNX model: the
// model onnxconverter-common's float16 conversion started from, as far as
// it can be recovered. Every FLOAT16 tensor (initializers, Constant and
// other tensor attributes, in subgraphs too) becomes FLOAT, every FLOAT16
// value type (inputs, outputs, value_info) FLOAT, and every Cast to
// FLOAT16 a Cast to FLOAT (the converter's Casts then cast f32 to f32).
// The weights hold the f16 values exactly, so the twin computes what the
// f16 model computes without its per-op rounding: with it the benchmarks
// separate precision (f16 storage, Casts) from kernels, on clinfer and on
// ONNX Runtime alike.
//
//	go run ./cmd/f32twin -i isnet_medium_f16.onnx -o isnet_medium_f32.onnx
//
// `make models` makes .cache/models/isnet_medium_f32.onnx this way. It sits
// beside the ONNX frontend (onnx/), outside the data flow of DESIGN.md: it
// rewrites the protobuf wire format field by field (protowire), keeping
// every field it does not convert byte for byte, and refuses models with
// external data.
package main

// Package onnx is clinfer's ONNX frontend: it decodes .onnx model files
// (protobuf, with external data) into a *graph.Model, and TensorProto .pb
// files into tensors.
//
// In the data flow of DESIGN.md, onnx.ReadFile is the first step: its Model is
// what Core.CompileModel hands to a device plugin. The frontend decodes the
// protobuf wire format itself (google.golang.org/protobuf/encoding/protowire,
// no generated code) and bounds every length against the input, so a
// malformed or hostile file yields an error, never a panic or a huge
// allocation.
//
// Each ONNX node is imported through one explicit, versioned op table
// (ops.go): an entry maps an op type, domain and opset range to an importer
// that emits graph nodes in the op set's newest-opset form. Every op of
// graph's op table with a Since version imports as itself from that opset
// on; the rows of ops_<family>.go convert the older and the other forms,
// so the file of an op's conversions is named by its family. Values that old
// opsets passed as attributes become constant inputs (Slice starts/ends,
// Squeeze/Unsqueeze axes, Split sizes, Clip bounds, Pad pads, Reduce axes),
// Upsample and Resize-10 become Resize, and Softmax/LogSoftmax before opset 13
// (which coerce their input to 2-D) become Flatten, Softmax and a Reshape back
// to the input's shape. Ops, domains or opset versions outside the table fail
// with an error wrapping ErrUnsupportedOp; attribute values whose meaning the
// op set cannot express fail with ErrUnsupportedAttribute.
//
// Naming: a node's friendly name is its ONNX name, or "<OpType>_<index>" when
// it has none, made unique; every output port carries its ONNX value name;
// Parameters and Results are named after the graph inputs and outputs, and
// Constants after their initializers.
//
// Cast's "to" attribute is stored as int64(tensor.ElementType), not as the
// ONNX data type number.
package onnx

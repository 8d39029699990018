// Package ir is clinfer's OpenVINO IR frontend and serializer: it reads
// IR v10 and v11 models (the .xml document and its .bin weights, what
// OpenVINO's model converter, optimum-intel and the Open Model Zoo
// produce) into a *graph.Model, and writes a *graph.Model as IR, as
// ov::serialize does.
//
// In the data flow of DESIGN.md it sits beside onnx/: ReadFile (reached
// through Core.ReadModel for a .xml path) is the first step, and its Model
// is what Core.CompileModel hands to a device plugin. Write (reached
// through Model.SerializeIR) is the way back.
//
// Each layer is converted through one explicit import table (ops.go and
// the families' rows in ops_<family>.go): an OpenVINO op type from the
// opset that introduced its version maps onto the op set of graph (ONNX's
// newest-opset semantics), as one node or a few (NotEqual is Not(Equal),
// StridedSlice is Slice, Squeeze and Unsqueeze, MVN is written out in
// reductions...). A layer takes its semantics from the newest row of its
// type not after its opset. IR's attribute-era inputs become the op set's
// attributes where the op set wants them (Gather's axis, Transpose's
// order) and the other way round (Pad's pads); a convolution followed by
// the Add of a per-channel constant becomes one Conv with a bias, as ONNX
// writes it; the LSTM, GRU and RNN sequences and cells become ONNX's ops
// run batch first, their weights rearranged to ONNX's gate order and bias
// layout; a TensorIterator becomes a Loop whose body slices its part of
// each sliced input. Unknown ops, opsets and attribute values, and malformed
// documents, are errors (*LayerError names the layer's id, name, type and
// opset) wrapping ErrInvalidModel, ErrUnsupportedOp,
// ErrUnsupportedAttribute, ErrUnsupportedType or ErrWeights; the reader
// never panics on malformed input (FuzzReadIR).
//
// Dimensions are static, dynamic ("?", -1) or bounded ("1..10", kept as
// graph.Dim's Min and Max); constants take every element type clinfer
// has, including i4 and u4 (two to a byte) and strings (OpenVINO's
// packing). Compressed weights keep their decompression subgraphs
// (Convert, Subtract, Multiply) as Cast, Sub and Mul, with OpenVINO's
// runtime info (decompression, dequantization) in RT.Extra under "ir:".
// Runtime info clinfer uses is read into graph.RTInfo: fused_names,
// affinity, and a Parameter's or Result's layout (ExtraLayout).
//
// The writer writes each node whose op has an exact equivalent in
// OpenVINO's opsets as that op (the export rows beside the import rows)
// and the others in clinfer's own opset ("clinfer"), which OpenVINO does
// not read but this reader takes back attribute for attribute. Reading
// what Write wrote gives the same graph, up to attributes spelled at their
// defaults and the names of constants the standard ops carry as
// attributes; TestRoundTripBackendModels checks this for every ONNX
// backend model clinfer imports, and that the read-back models compute
// the expected outputs.
package ir

package onnx

// windowImports convert the window generators' ONNX output_datatype
// attribute into an element type.
var windowImports = []opEntry{
	{"HannWindow", "", 17, 0, same(dataTypeAttr("output_datatype"))},
	{"HammingWindow", "", 17, 0, same(dataTypeAttr("output_datatype"))},
	{"BlackmanWindow", "", 17, 0, same(dataTypeAttr("output_datatype"))},
	{"MelWeightMatrix", "", 17, 0, same(dataTypeAttr("output_datatype"))},
}

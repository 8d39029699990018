package onnx

// shapeImports converts EyeLike's ONNX dtype.
var shapeImports = []opEntry{
	{"EyeLike", "", 9, 0, same(dataTypeAttr("dtype"))},
}

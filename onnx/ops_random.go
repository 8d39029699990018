package onnx

// randomImports convert the random ops' ONNX dtype attribute into an
// element type.
var randomImports = []opEntry{
	{"RandomUniform", "", 1, 0, same(dataTypeAttr("dtype"))},
	{"RandomNormal", "", 1, 0, same(dataTypeAttr("dtype"))},
	{"RandomUniformLike", "", 1, 0, same(dataTypeAttr("dtype"))},
	{"RandomNormalLike", "", 1, 0, same(dataTypeAttr("dtype"))},
	{"Multinomial", "", 7, 0, same(dataTypeAttr("dtype"))},
	{"Bernoulli", "", 15, 0, same(dataTypeAttr("dtype"))},
}

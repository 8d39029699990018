package onnx

// gemmImports drops Gemm's legacy broadcast attribute (opsets before 7).
var gemmImports = []opEntry{
	{"Gemm", "", 1, 7, same(drop("broadcast"))},
}

package onnx

// compareImports converts the comparisons and logic ops of opsets before 7 (legacy broadcast attributes).
var compareImports = []opEntry{
	{"Equal", "", 1, 7, legacyBroadcast},
	{"Greater", "", 1, 7, legacyBroadcast},
	{"Less", "", 1, 7, legacyBroadcast},
	{"And", "", 1, 7, legacyBroadcast},
	{"Or", "", 1, 7, legacyBroadcast},
	{"Xor", "", 1, 7, legacyBroadcast},
}

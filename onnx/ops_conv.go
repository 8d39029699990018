package onnx

var autoPads = []string{"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}

// convImports checks the convolutions' auto_pad.
var convImports = []opEntry{
	{"Conv", "", 1, 0, same(enum("auto_pad", autoPads...))},
	{"ConvTranspose", "", 1, 0, same(enum("auto_pad", autoPads...))},
}

package ir

// colorImports are the colour conversions of opset8, the op set's own.
var colorImports = []importRow{
	{"NV12toRGB", 8, same("NV12toRGB")},
	{"NV12toBGR", 8, same("NV12toBGR")},
}

// colorExports write them back.
var colorExports = map[string]exportFunc{
	"NV12toRGB": sameAs("NV12toRGB", 8),
	"NV12toBGR": sameAs("NV12toBGR", 8),
}

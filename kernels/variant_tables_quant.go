package kernels

// quantFamilies are the variant tables of the fused integer ops
// (graph.OpQuantizedConv, graph.OpQuantizedFullyConnected): int8 data
// with exact i32 accumulation and the requantization epilogue. Integers
// are a precision of the same machinery: the planner, the tuner and the
// tests pick these variants as they pick the float ones.
var quantFamilies = []Family{
	{
		Name: "qconv", Ops: "QuantizedConv of one group with a KxK window, any dilation, host weights",
		Algorithms: []Algorithm{
			{
				Name: "fma", Entries: []string{"qconv2d_blocked"}, Defines: "-DALG_FMA",
				Doc:       "register-blocked direct convolution, MR output channels x VW pixels per item; 8-bit data shifted by its zero point, products summed with f32 fma in runs short enough to stay exact integers, each run added to an i32 accumulator",
				Params:    []Param{vwParam, {Name: "MR", Values: []int{8, 16, 24}, Define: true, Doc: "output channels per work item"}, wgParam},
				WorkGroup: groupWG,
			},
			{
				Name: "int", Entries: []string{"qconv2d_blocked"}, Defines: "-DALG_INT",
				Doc:       "the same blocking with i32 vector arithmetic on the widened 8-bit data (vectorised char math)",
				Params:    []Param{vwParam, {Name: "MR", Values: []int{4, 8, 16}, Define: true, Doc: "output channels per work item"}, wgParam},
				WorkGroup: groupWG,
			},
			{
				Name: "dot4", Entries: []string{"qconv2d_blocked"}, Defines: "-DALG_DOT4", IntegerDot: true,
				Doc:       "four input channels packed to a uint per pixel and weight, multiplied with cl_khr_integer_dot_product's packed 4x8-bit dot products; the zero points applied once per output",
				Params:    []Param{{Name: "VW", Values: []int{4, 8}, Define: true, Doc: "pixels per work item"}, {Name: "MR", Values: []int{4, 8}, Define: true, Doc: "output channels per work item"}, wgParam},
				WorkGroup: groupWG,
			},
		},
	},
	{
		Name: "qdwconv", Ops: "depthwise QuantizedConv (group = C = OC), dilation 1, windows up to 7x7",
		Algorithms: []Algorithm{
			{
				Name: "direct", Entries: []string{"qdwconv2d"},
				Doc:       "RB output rows x VW pixels of one plane per item; 8-bit data shifted by its zero point, products summed exactly with f32 fma (a window of at most 49 taps)",
				Params:    []Param{vwParam, {Name: "RB", Values: []int{2, 4, 8}, Define: true, Doc: "output rows per work item"}, wgParam},
				WorkGroup: groupWG,
			},
		},
	},
	{
		Name: "qgemm", Ops: "QuantizedFullyConnected",
		Algorithms: []Algorithm{
			{
				Name: "fma", Entries: []string{"qfc_blocked"}, Defines: "-DALG_FMA",
				Doc:       "VW output columns of one row per item; f32 fma over runs of K short enough to stay exact, added to an i32 accumulator",
				Params:    []Param{vwParam, wgParam},
				WorkGroup: groupWG,
			},
			{
				Name: "int", Entries: []string{"qfc_blocked"}, Defines: "-DALG_INT",
				Doc:       "the same with i32 vector arithmetic",
				Params:    []Param{vwParam, wgParam},
				WorkGroup: groupWG,
			},
		},
	},
}

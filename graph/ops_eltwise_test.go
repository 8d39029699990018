package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

func TestBroadcastShapes(t *testing.T) {
	cases := []struct {
		name    string
		a, b    PartialShape
		want    string
		wantErr bool
	}{
		{"same", shp(2, 3), shp(2, 3), "[2,3]", false},
		{"scalar", shp(2, 3), shp(), "[2,3]", false},
		{"prepend ones", shp(4, 1, 3), shp(5, 1), "[4,5,3]", false},
		{"ones both ways", shp(1, 3), shp(2, 1), "[2,3]", false},
		{"named through 1", shp("N", 3), shp(1, 3), "[N,3]", false},
		{"named vs static", shp("N", 3), shp(7, 3), "[7,3]", false},
		{"same names", shp("N", 3), shp("N", 1), "[N,3]", false},
		{"different names", shp("N", 3), shp("M", 3), "[?,3]", false},
		{"static 1 vs dynamic", shp(1), shp(-1), "[?]", false},
		{"mismatch", shp(2, 3), shp(4, 3), "", true},
		{"unknown rank", DynamicRank, shp(2), "[...]", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := BroadcastShapes(tc.a, tc.b)
			if tc.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.a.String())
				assert.Contains(t, err.Error(), tc.b.String())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.String())
			// Broadcasting is symmetric up to names.
			rev, err := BroadcastShapes(tc.b, tc.a)
			require.NoError(t, err)
			assert.Equal(t, got.Rank(), rev.Rank())
		})
	}
}

func TestInferUnary(t *testing.T) {
	floatOps := []string{"Sqrt", "Exp", "Log", "Reciprocal", "Floor", "Ceil", "Round", "Sin", "Cos",
		"LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "Selu", "Celu", "Gelu", "Mish",
		"Softplus", "Softsign", "ThresholdedRelu", "Softmax", "LogSoftmax", "Hardmax"}
	numericOps := []string{"Erf", "Abs", "Sign", "Neg", "Relu"}
	var cases []inferCase
	for _, o := range append(floatOps, numericOps...) {
		cases = append(cases,
			inferCase{name: o + "/static", op: o, inputs: ins(par(shp(2, 3, 4))), want: []PartialShape{shp(2, 3, 4)}},
			inferCase{name: o + "/named", op: o, inputs: ins(par(shp("batch", 3, -1))), want: []PartialShape{shp("batch", 3, -1)}},
			inferCase{name: o + "/f16", op: o, inputs: ins(parT(tensor.F16, shp(5, 1))), want: []PartialShape{shp(5, 1)}},
			inferCase{name: o + "/bool rejected", op: o, inputs: ins(parT(tensor.Bool, shp(2))), err: "element type boolean"},
		)
	}
	for _, o := range floatOps {
		if o == "Softmax" || o == "LogSoftmax" || o == "Hardmax" {
			cases = append(cases, inferCase{name: o + "/unknown rank", op: o, inputs: ins(par(DynamicRank)), want: []PartialShape{DynamicRank}})
			continue
		}
		cases = append(cases,
			inferCase{name: o + "/int rejected", op: o, inputs: ins(parT(tensor.I32, shp(2))), err: "want a floating-point type"},
			inferCase{name: o + "/unknown rank", op: o, inputs: ins(par(DynamicRank)), want: []PartialShape{DynamicRank}},
		)
	}
	for _, o := range numericOps {
		cases = append(cases, inferCase{name: o + "/i32", op: o, inputs: ins(parT(tensor.I32, shp(7))), want: []PartialShape{shp(7)}})
	}
	cases = append(cases,
		inferCase{name: "Neg/u8 rejected", op: "Neg", inputs: ins(parT(tensor.U8, shp(2))), err: "signed"},
		inferCase{name: "Softmax/axis", op: "Softmax", attrs: Attrs{"axis": int64(1)}, inputs: ins(par(shp(2, 3))), want: []PartialShape{shp(2, 3)}},
		inferCase{name: "Softmax/bad axis", op: "Softmax", attrs: Attrs{"axis": int64(2)}, inputs: ins(par(shp(2, 3))), err: "axis 2 is out of range for rank 2"},
		inferCase{name: "LogSoftmax/scalar", op: "LogSoftmax", inputs: ins(par(shp())), err: "scalar"},
		inferCase{name: "Not", op: "Not", inputs: ins(parT(tensor.Bool, shp("N", 2))), want: []PartialShape{shp("N", 2)}},
		inferCase{name: "Not/f32 rejected", op: "Not", inputs: ins(par(shp(2))), err: "want boolean"},
		inferCase{name: "Identity", op: "Identity", inputs: ins(parT(tensor.I64, shp("N"))), want: []PartialShape{shp("N")}},
		inferCase{name: "Dropout/one output", op: "Dropout", inputs: ins(par(shp(2, "S"))), want: []PartialShape{shp(2, "S")}},
		inferCase{name: "Dropout/mask", op: "Dropout", outs: 2, inputs: ins(par(shp(2, "S")), cf32(0.5)),
			want: []PartialShape{shp(2, "S"), shp(2, "S")}, types: []tensor.ElementType{tensor.F32, tensor.Bool}},
		inferCase{name: "Relu/two outputs", op: "Relu", outs: 2, inputs: ins(par(shp(2))), err: "has 2 outputs, want 1"},
	)
	runInferCases(t, cases)
}

func TestInferBinary(t *testing.T) {
	var cases []inferCase
	for _, o := range []string{"Add", "Sub", "Mul", "Div", "Pow"} {
		cases = append(cases,
			inferCase{name: o + "/same", op: o, inputs: ins(par(shp(2, 3)), par(shp(2, 3))), want: []PartialShape{shp(2, 3)}},
			inferCase{name: o + "/broadcast", op: o, inputs: ins(par(shp("N", 1, 4)), par(shp(3, 1))), want: []PartialShape{shp("N", 3, 4)}},
			inferCase{name: o + "/scalar", op: o, inputs: ins(par(shp()), par(shp(5))), want: []PartialShape{shp(5)}},
			inferCase{name: o + "/mismatch", op: o, inputs: ins(par(shp(2, 3)), par(shp(4, 3))), err: "shapes [2,3] and [4,3] cannot be broadcast"},
			inferCase{name: o + "/unknown rank", op: o, inputs: ins(par(DynamicRank), par(shp(4, 3))), want: []PartialShape{DynamicRank}},
		)
	}
	for _, o := range []string{"Add", "Sub", "Mul", "Div"} {
		cases = append(cases,
			inferCase{name: o + "/type mismatch", op: o, inputs: ins(par(shp(2)), parT(tensor.F16, shp(2))), err: "input 1 has element type f16 but input 0 has f32"},
			inferCase{name: o + "/i64", op: o, inputs: ins(parT(tensor.I64, shp(2)), parT(tensor.I64, shp(1))), want: []PartialShape{shp(2)}},
			inferCase{name: o + "/bool rejected", op: o, inputs: ins(parT(tensor.Bool, shp(2)), parT(tensor.Bool, shp(2))), err: "numeric"},
		)
	}
	cases = append(cases, inferCase{name: "Pow/int exponent", op: "Pow", inputs: ins(par(shp(2)), parT(tensor.I64, shp())), want: []PartialShape{shp(2)}})
	for _, o := range []string{"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"} {
		cases = append(cases,
			inferCase{name: o + "/bool out", op: o, inputs: ins(par(shp("N", 3)), par(shp(3))), want: []PartialShape{shp("N", 3)}, types: []tensor.ElementType{tensor.Bool}},
			inferCase{name: o + "/type mismatch", op: o, inputs: ins(par(shp(3)), parT(tensor.I64, shp(3))), err: "element type i64"},
		)
	}
	for _, o := range []string{"And", "Or", "Xor"} {
		cases = append(cases,
			inferCase{name: o, op: o, inputs: ins(parT(tensor.Bool, shp(2, 1)), parT(tensor.Bool, shp(4))), want: []PartialShape{shp(2, 4)}},
			inferCase{name: o + "/f32 rejected", op: o, inputs: ins(par(shp(2)), par(shp(2))), err: "want boolean"},
		)
	}
	for _, o := range []string{"Max", "Min", "Sum", "Mean"} {
		cases = append(cases,
			inferCase{name: o + "/one", op: o, inputs: ins(par(shp("N", 2))), want: []PartialShape{shp("N", 2)}},
			inferCase{name: o + "/three", op: o, inputs: ins(par(shp(2, 1, 1)), par(shp(3, 1)), par(shp(4))), want: []PartialShape{shp(2, 3, 4)}},
			inferCase{name: o + "/mismatch", op: o, inputs: ins(par(shp(2)), par(shp(3))), err: "cannot be broadcast"},
			inferCase{name: o + "/types", op: o, inputs: ins(par(shp(2)), parT(tensor.F64, shp(2))), err: "element type f64"},
		)
	}
	cases = append(cases,
		inferCase{name: "Where", op: "Where", inputs: ins(parT(tensor.Bool, shp("N", 1)), par(shp(1, 4)), par(shp())), want: []PartialShape{shp("N", 4)}, types: []tensor.ElementType{tensor.F32}},
		inferCase{name: "Where/cond type", op: "Where", inputs: ins(par(shp(2)), par(shp(2)), par(shp(2))), err: "condition has element type f32"},
		inferCase{name: "Where/xy types", op: "Where", inputs: ins(parT(tensor.Bool, shp(2)), par(shp(2)), parT(tensor.I32, shp(2))), err: "element type i32"},
		inferCase{name: "Clip/no bounds", op: "Clip", inputs: ins(par(shp("N", 3))), want: []PartialShape{shp("N", 3)}},
		inferCase{name: "Clip/bounds", op: "Clip", inputs: ins(par(shp(2, 3)), par(shp()), par(shp())), want: []PartialShape{shp(2, 3)}},
		inferCase{name: "Clip/only max", op: "Clip", inputs: ins(par(shp(2, 3)), Output{}, par(shp())), want: []PartialShape{shp(2, 3)}},
		inferCase{name: "Clip/bound type", op: "Clip", inputs: ins(par(shp(2)), parT(tensor.F16, shp())), err: "element type f16"},
		inferCase{name: "Clip/bound shape", op: "Clip", inputs: ins(par(shp(2)), par(shp(2))), err: "want a scalar"},
		inferCase{name: "PRelu/channel slope", op: "PRelu", inputs: ins(par(shp("N", 3, 8, 8)), par(shp(3, 1, 1))), want: []PartialShape{shp("N", 3, 8, 8)}},
		inferCase{name: "PRelu/bad slope", op: "PRelu", inputs: ins(par(shp(1, 3, 8, 8)), par(shp(4, 1, 1))), err: "slope shape [4,1,1] cannot be broadcast to [1,3,8,8]"},
	)
	runInferCases(t, cases)
}

func TestInferNodeInputCount(t *testing.T) {
	n := NewNode("Add", "lonely", []Output{par(shp(2))}, nil, 1)
	err := InferNode(n)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"lonely"`)
	assert.Contains(t, err.Error(), "has 1 inputs, want 2 to 2")

	n = NewNode("Frobnicate", "weird", nil, nil, 1)
	err = InferNode(n)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"Frobnicate" is not in the op set`)

	n = NewNode("Relu", "missing", []Output{{}}, nil, 1)
	err = InferNode(n)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "required input 0 is missing")
}

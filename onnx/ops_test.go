package onnx

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// oneNode builds a model of a single node reading x (and initializers) and
// returns the node that produces its first output, after import.
func oneNode(t *testing.T, opset int64, n tNode, x tValue, inits ...[]byte) *graph.Node {
	t.Helper()
	var outs []tValue
	for _, o := range n.out {
		if o != "" {
			outs = append(outs, fv(o))
		}
	}
	m := tModel{opset: opset, nodes: []tNode{n}, inits: inits, inputs: []tValue{x}, outputs: outs}
	model, err := Read(m.bytes())
	require.NoError(t, err)
	return model.Results[0].Inputs[0].Node
}

func constInts(t *testing.T, n *graph.Node, i int) []int64 {
	t.Helper()
	v, ok := n.ConstInput(i)
	require.True(t, ok, "input %d of %s is a constant", i, n)
	return v.I64()
}

func constFloats(t *testing.T, n *graph.Node, i int) []float32 {
	t.Helper()
	v, ok := n.ConstInput(i)
	require.True(t, ok, "input %d of %s is a constant", i, n)
	return v.F32()
}

func TestLegacyAttributesBecomeInputs(t *testing.T) {
	x := fv("x", 1, 3, 4, 5)
	tests := []struct {
		name   string
		opset  int64
		node   tNode
		op     string
		inputs map[int][]int64 // constant i64 inputs by index
		absent []int           // omitted inputs
		nIn    int
		shape  string
	}{
		{"Slice-1", 9, tNode{op: "Slice", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInts("starts", 1), aInts("ends", 3), aInts("axes", 2)}},
			"Slice", map[int][]int64{1: {1}, 2: {3}, 3: {2}}, nil, 4, "[1,3,2,5]"},
		{"Slice-1 without axes", 9, tNode{op: "Slice", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInts("starts", 0, 1), aInts("ends", 1, 2)}},
			"Slice", map[int][]int64{1: {0, 1}, 2: {1, 2}}, nil, 3, "[1,1,4,5]"},
		{"Squeeze-11", 11, tNode{op: "Squeeze", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInts("axes", 0)}},
			"Squeeze", map[int][]int64{1: {0}}, nil, 2, "[3,4,5]"},
		{"Squeeze-11 without axes", 11, tNode{op: "Squeeze", in: []string{"x"}, out: []string{"y"}},
			"Squeeze", nil, nil, 1, "[3,4,5]"},
		{"Unsqueeze-11", 11, tNode{op: "Unsqueeze", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInts("axes", 0, 5)}},
			"Unsqueeze", map[int][]int64{1: {0, 5}}, nil, 2, "[1,1,3,4,5,1]"},
		{"Reshape-4", 4, tNode{op: "Reshape", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInts("shape", 6, -1)}},
			"Reshape", map[int][]int64{1: {6, -1}}, nil, 2, "[6,10]"},
		{"ReduceMean-13", 13, tNode{op: "ReduceMean", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInts("axes", 2, 3), aInt("keepdims", 0)}},
			"ReduceMean", map[int][]int64{1: {2, 3}}, nil, 2, "[1,3]"},
		{"ReduceSum-11", 11, tNode{op: "ReduceSum", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInts("axes", 1)}},
			"ReduceSum", map[int][]int64{1: {1}}, nil, 2, "[1,1,4,5]"},
		{"ReduceMax-11 all axes", 11, tNode{op: "ReduceMax", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInt("keepdims", 0)}},
			"ReduceMax", nil, nil, 1, "[]"},
		{"Split-11 sizes", 11, tNode{op: "Split", in: []string{"x"}, out: []string{"y", "z"}, attrs: []tAttr{aInt("axis", 1), aInts("split", 1, 2)}},
			"Split", map[int][]int64{1: {1, 2}}, nil, 2, "[1,1,4,5]"},
		{"Pad-2", 2, tNode{op: "Pad", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInts("pads", 0, 0, 1, 1, 0, 0, 1, 1)}},
			"Pad", map[int][]int64{1: {0, 0, 1, 1, 0, 0, 1, 1}}, nil, 2, "[1,3,6,7]"},
		{"Clip-6 max only", 6, tNode{op: "Clip", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aFloat("max", 6)}},
			"Clip", nil, []int{1}, 3, "[1,3,4,5]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := oneNode(t, tc.opset, tc.node, x)
			assert.Equal(t, tc.op, n.OpType)
			require.Len(t, n.Inputs, tc.nIn)
			for i, want := range tc.inputs {
				assert.Equal(t, want, constInts(t, n, i), "input %d", i)
			}
			for _, i := range tc.absent {
				assert.Nil(t, n.Inputs[i].Node, "input %d is omitted", i)
			}
			for _, a := range []string{"starts", "ends", "axes", "split", "shape", "pads", "min", "max"} {
				assert.False(t, n.Attrs.Has(a), "attribute %s moved to an input", a)
			}
			if tc.shape != "" {
				assert.Equal(t, tc.shape, n.Outputs[0].Shape.String())
			}
		})
	}
}

func TestLegacyConversions(t *testing.T) {
	x := fv("x", 1, 2, 3, 4)
	t.Run("Split-11 equal parts", func(t *testing.T) {
		n := oneNode(t, 11, tNode{op: "Split", in: []string{"x"}, out: []string{"a", "b"}, attrs: []tAttr{aInt("axis", 3)}}, x)
		assert.Equal(t, int64(2), n.Attrs.Int("num_outputs", 0))
		require.Len(t, n.Outputs, 2)
		assert.Equal(t, "a", n.Outputs[0].Name)
		assert.Equal(t, "b", n.Outputs[1].Name)
		assert.Equal(t, "[1,2,3,2]", n.Outputs[1].Shape.String())
	})
	t.Run("Clip-6 bounds", func(t *testing.T) {
		n := oneNode(t, 6, tNode{op: "Clip", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aFloat("min", -1), aFloat("max", 6)}}, x)
		assert.InDeltaSlice(t, []float32{-1}, constFloats(t, n, 1), 0)
		assert.InDeltaSlice(t, []float32{6}, constFloats(t, n, 2), 0)
		assert.Equal(t, 0, n.Inputs[1].Node.Value.Rank(), "bounds are scalars")
	})
	t.Run("Pad-2 value and mode", func(t *testing.T) {
		n := oneNode(t, 2, tNode{op: "Pad", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInts("pads", 0, 0, 0, 1, 0, 0, 0, 1), aFloat("value", 2.5), aStr("mode", "constant")}}, x)
		assert.InDeltaSlice(t, []float32{2.5}, constFloats(t, n, 2), 0)
		assert.Equal(t, "constant", n.Attrs.String("mode", ""))
		assert.False(t, n.Attrs.Has("value"))
	})
	t.Run("Pad-2 bad mode", func(t *testing.T) {
		m := tModel{opset: 2, nodes: []tNode{{op: "Pad", name: "p", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInts("pads", 0, 0, 0, 0, 0, 0, 0, 0), aStr("mode", "mirror")}}}, inputs: []tValue{x}, outputs: []tValue{fv("y")}}
		_, err := Read(m.bytes())
		assert.ErrorIs(t, err, ErrUnsupportedAttribute)
		assert.ErrorContains(t, err, "mirror")
	})
	t.Run("Upsample-7", func(t *testing.T) {
		n := oneNode(t, 7, tNode{op: "Upsample", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aFloats("scales", 1, 1, 2, 2)}}, x)
		assert.Equal(t, "Resize", n.OpType)
		assert.Nil(t, n.Inputs[1].Node, "no roi")
		assert.InDeltaSlice(t, []float32{1, 1, 2, 2}, constFloats(t, n, 2), 0)
		assert.Equal(t, "asymmetric", n.Attrs.String("coordinate_transformation_mode", ""))
		assert.Equal(t, "floor", n.Attrs.String("nearest_mode", ""))
		assert.Equal(t, "nearest", n.Attrs.String("mode", ""))
		assert.Equal(t, "[1,2,6,8]", n.Outputs[0].Shape.String())
	})
	t.Run("Resize-10 downsampling", func(t *testing.T) {
		n := oneNode(t, 10, tNode{op: "Resize", in: []string{"x", "s"}, out: []string{"y"}, attrs: []tAttr{aStr("mode", "nearest")}}, x,
			rawTensor("s", f32Tensor(tensor.Shape{4}, 1, 1, 0.5, 0.5)))
		assert.Equal(t, "ceil", n.Attrs.String("nearest_mode", ""))
		assert.Equal(t, "asymmetric", n.Attrs.String("coordinate_transformation_mode", ""))
	})
	t.Run("Resize-11 empty roi and scales", func(t *testing.T) {
		empty := rawTensor("e", f32Tensor(tensor.Shape{0}))
		n := oneNode(t, 11, tNode{op: "Resize", in: []string{"x", "e", "e", "sz"}, out: []string{"y"}}, x,
			empty, rawTensor("sz", i64Tensor(1, 2, 6, 8)))
		require.Len(t, n.Inputs, 4)
		assert.Nil(t, n.Inputs[1].Node)
		assert.Nil(t, n.Inputs[2].Node)
		assert.Equal(t, []int64{1, 2, 6, 8}, constInts(t, n, 3))
	})
	t.Run("Softmax-11 coerced", func(t *testing.T) {
		n := oneNode(t, 11, tNode{op: "Softmax", name: "sm", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInt("axis", 1)}}, x)
		require.Equal(t, "Reshape", n.OpType)
		assert.Equal(t, "y", n.Outputs[0].Name)
		assert.Equal(t, "[1,2,3,4]", n.Outputs[0].Shape.String())
		sm := n.Inputs[0].Node
		assert.Equal(t, "Softmax", sm.OpType)
		assert.Equal(t, "sm", sm.Name)
		assert.Equal(t, int64(-1), sm.Attrs.Int("axis", 0))
		flat := sm.Inputs[0].Node
		assert.Equal(t, "Flatten", flat.OpType)
		assert.Equal(t, int64(1), flat.Attrs.Int("axis", 0))
		assert.Equal(t, "[1,24]", flat.Outputs[0].Shape.String())
		assert.Equal(t, "Shape", n.Inputs[1].Node.OpType)
	})
	t.Run("LogSoftmax-11 last axis", func(t *testing.T) {
		n := oneNode(t, 11, tNode{op: "LogSoftmax", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInt("axis", 3)}}, x)
		assert.Equal(t, "LogSoftmax", n.OpType)
		assert.Equal(t, int64(-1), n.Attrs.Int("axis", 0))
	})
	t.Run("Cast-6 to", func(t *testing.T) {
		n := oneNode(t, 6, tNode{op: "Cast", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInt("to", dtFloat16)}}, x)
		assert.Equal(t, int64(tensor.F16), n.Attrs.Int("to", 0))
		assert.Equal(t, tensor.F16, n.Outputs[0].Type)
	})
	t.Run("Cast-1 string to", func(t *testing.T) {
		n := oneNode(t, 1, tNode{op: "Cast", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aStr("to", "INT64")}}, x)
		assert.Equal(t, int64(tensor.I64), n.Attrs.Int("to", 0))
	})
	t.Run("Concat-1 default axis", func(t *testing.T) {
		n := oneNode(t, 1, tNode{op: "Concat", in: []string{"x", "x"}, out: []string{"y"}}, x)
		assert.Equal(t, "[1,4,3,4]", n.Outputs[0].Shape.String())
	})
	t.Run("BatchNormalization-7", func(t *testing.T) {
		s := rawTensor("s", f32Tensor(tensor.Shape{2}, 1, 1))
		n := oneNode(t, 7, tNode{op: "BatchNormalization", in: []string{"x", "s", "s", "s", "s"}, out: []string{"y", "", "", "", ""},
			attrs: []tAttr{aFloat("epsilon", 1e-3), aFloat("momentum", 0.9), aInt("spatial", 1)}}, x, s)
		assert.Len(t, n.Outputs, 1)
		assert.InDelta(t, 1e-3, n.Attrs.Float("epsilon", 0), 1e-9)
		assert.False(t, n.Attrs.Has("momentum"))
		assert.False(t, n.Attrs.Has("spatial"))
	})
	t.Run("Dropout-7", func(t *testing.T) {
		n := oneNode(t, 7, tNode{op: "Dropout", in: []string{"x"}, out: []string{"y", "mask"}, attrs: []tAttr{aFloat("ratio", 0.3)}}, x)
		assert.Equal(t, "Dropout", n.OpType)
		assert.Len(t, n.Inputs, 1)
		assert.Empty(t, n.Attrs)
	})
	t.Run("Add-6 suffix broadcast", func(t *testing.T) {
		n := oneNode(t, 6, tNode{op: "Add", in: []string{"x", "b"}, out: []string{"y"}, attrs: []tAttr{aInt("broadcast", 1)}}, x,
			rawTensor("b", f32Tensor(tensor.Shape{4}, 1, 2, 3, 4)))
		assert.Empty(t, n.Attrs)
		assert.Equal(t, "[1,2,3,4]", n.Outputs[0].Shape.String())
	})
	for _, op := range []string{"Add", "Sub", "Mul", "Div"} {
		t.Run(op+"-6 axis broadcast of a constant", func(t *testing.T) {
			n := oneNode(t, 6, tNode{op: op, in: []string{"x", "b"}, out: []string{"y"}, attrs: []tAttr{aInt("broadcast", 1), aInt("axis", 1)}}, x,
				rawTensor("b", f32Tensor(tensor.Shape{2}, 1, 2)))
			assert.Equal(t, op, n.OpType)
			assert.Empty(t, n.Attrs)
			v, ok := n.ConstInput(1)
			require.True(t, ok)
			assert.Equal(t, tensor.Shape{2, 1, 1}, v.Shape())
			assert.Equal(t, []float32{1, 2}, v.F32())
			assert.Equal(t, "[1,2,3,4]", n.Outputs[0].Shape.String())
		})
	}
	t.Run("Add-6 axis broadcast of an input", func(t *testing.T) {
		m := tModel{opset: 6, nodes: []tNode{{op: "Add", name: "add", in: []string{"x", "b"}, out: []string{"y"}, attrs: []tAttr{aInt("broadcast", 1), aInt("axis", 0)}}},
			inputs: []tValue{x, fv("b", 1, 2)}, outputs: []tValue{fv("y")}}
		model, err := Read(m.bytes())
		require.NoError(t, err)
		n := model.Results[0].Inputs[0].Node
		un := n.Inputs[1].Node
		require.Equal(t, "Unsqueeze", un.OpType)
		assert.Equal(t, []int64{2, 3}, constInts(t, un, 1))
		assert.Equal(t, "[1,2,1,1]", un.Outputs[0].Shape.String())
		assert.Equal(t, "[1,2,3,4]", n.Outputs[0].Shape.String())
	})
	t.Run("Add-6 axis broadcast that does not fit", func(t *testing.T) {
		m := tModel{opset: 6, nodes: []tNode{{op: "Add", name: "add", in: []string{"x", "b"}, out: []string{"y"}, attrs: []tAttr{aInt("broadcast", 1), aInt("axis", 3)}}},
			inputs: []tValue{x, fv("b", 4, 1)}, outputs: []tValue{fv("y")}}
		_, err := Read(m.bytes())
		assert.ErrorIs(t, err, ErrInvalidModel)
		assert.ErrorContains(t, err, `"add"`)
	})
	t.Run("PRelu-6 channel slope", func(t *testing.T) {
		n := oneNode(t, 6, tNode{op: "PRelu", in: []string{"x", "s"}, out: []string{"y"}}, x, rawTensor("s", f32Tensor(tensor.Shape{2}, 0.1, 0.2)))
		v, ok := n.ConstInput(1)
		require.True(t, ok)
		assert.Equal(t, tensor.Shape{2, 1, 1}, v.Shape())
	})
	t.Run("MaxPool indices with storage_order", func(t *testing.T) {
		m := tModel{opset: 12, nodes: []tNode{{op: "MaxPool", name: "mp", in: []string{"x"}, out: []string{"y", "i"}, attrs: []tAttr{aInts("kernel_shape", 2, 2), aInt("storage_order", 1)}}},
			inputs: []tValue{x}, outputs: []tValue{fv("y"), fv("i")}}
		model, err := Read(m.bytes())
		require.NoError(t, err)
		n := model.Results[0].Inputs[0].Node
		assert.Equal(t, int64(1), n.Attrs.Int("storage_order", 0))
		assert.Len(t, n.Outputs, 2)
	})
	t.Run("MaxPool storage_order without indices is dropped", func(t *testing.T) {
		n := oneNode(t, 12, tNode{op: "MaxPool", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInts("kernel_shape", 2, 2), aInt("storage_order", 1)}}, x)
		assert.False(t, n.Attrs.Has("storage_order"))
	})
	t.Run("MaxPool bad storage_order", func(t *testing.T) {
		m := tModel{opset: 12, nodes: []tNode{{op: "MaxPool", name: "mp", in: []string{"x"}, out: []string{"y", "i"}, attrs: []tAttr{aInts("kernel_shape", 2, 2), aInt("storage_order", 2)}}},
			inputs: []tValue{x}, outputs: []tValue{fv("y"), fv("i")}}
		_, err := Read(m.bytes())
		assert.ErrorIs(t, err, ErrUnsupportedAttribute)
		assert.ErrorContains(t, err, "storage_order")
	})
	// A reduction whose axes are an input in its opset but that carries
	// an axes attribute is malformed; accepting it made the CPU (which
	// read the attribute) and the GPU (which followed shape inference,
	// reading the input) disagree. Found by FuzzGraphsCPUvsGPU.
	for _, c := range []struct {
		op    string
		opset int64
	}{{"ReduceSum", 13}, {"ReduceMean", 18}, {"ReduceMax", 18}, {"ReduceL2", 18}} {
		t.Run(c.op+" axes attribute at opset "+fmt.Sprint(c.opset), func(t *testing.T) {
			m := tModel{opset: c.opset, nodes: []tNode{{op: c.op, name: "r", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInts("axes", 1)}}},
				inputs: []tValue{x}, outputs: []tValue{fv("y")}}
			_, err := Read(m.bytes())
			assert.ErrorIs(t, err, ErrUnsupportedAttribute)
			assert.ErrorContains(t, err, `"r"`)
			assert.ErrorContains(t, err, "input 1")
		})
	}
	t.Run("ReduceSum-11 axes attribute becomes the input", func(t *testing.T) {
		n := oneNode(t, 11, tNode{op: "ReduceSum", in: []string{"x"}, out: []string{"y"}, attrs: []tAttr{aInts("axes", 1)}}, x)
		v, ok := n.ConstInts(1)
		require.True(t, ok)
		assert.Equal(t, []int64{1}, v)
		assert.False(t, n.Attrs.Has("axes"))
	})
	t.Run("BatchNormalization spatial=0", func(t *testing.T) {
		s := rawTensor("s", f32Tensor(tensor.Shape{2}, 1, 1))
		m := tModel{opset: 7, nodes: []tNode{{op: "BatchNormalization", name: "bn", in: []string{"x", "s", "s", "s", "s"}, out: []string{"y"}, attrs: []tAttr{aInt("spatial", 0)}}},
			inits: [][]byte{s}, inputs: []tValue{x}, outputs: []tValue{fv("y")}}
		_, err := Read(m.bytes())
		assert.ErrorIs(t, err, ErrUnsupportedAttribute)
		assert.ErrorContains(t, err, `"bn"`)
		assert.ErrorContains(t, err, "spatial")
	})
}

func TestConstantNode(t *testing.T) {
	tests := []struct {
		name  string
		attr  tAttr
		typ   tensor.ElementType
		shape tensor.Shape
		f64   []float64
	}{
		{"value", aTensor("value", rawTensor("", i64Tensor(7, 8))), tensor.I64, tensor.Shape{2}, []float64{7, 8}},
		{"value_float", aFloat("value_float", 2.5), tensor.F32, tensor.Shape{}, []float64{2.5}},
		{"value_floats", aFloats("value_floats", 1, 2), tensor.F32, tensor.Shape{2}, []float64{1, 2}},
		{"value_int", aInt("value_int", -3), tensor.I64, tensor.Shape{}, []float64{-3}},
		{"value_ints", aInts("value_ints", 4, 5, 6), tensor.I64, tensor.Shape{3}, []float64{4, 5, 6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tModel{opset: 13, nodes: []tNode{{op: "Constant", name: "k", out: []string{"c"}, attrs: []tAttr{tc.attr}}}, outputs: []tValue{fv("c")}}
			model, err := Read(m.bytes())
			require.NoError(t, err)
			n := model.Results[0].Inputs[0].Node
			assert.Equal(t, graph.OpConstant, n.OpType)
			assert.Equal(t, "k", n.Name)
			assert.Equal(t, "c", n.Outputs[0].Name)
			assert.Equal(t, tc.typ, n.Value.Type())
			assert.Equal(t, tc.shape, n.Value.Shape())
			assert.InDeltaSlice(t, tc.f64, n.Value.Float64s(), 1e-6)
		})
	}
}

func TestLookupOpVersions(t *testing.T) {
	tests := []struct {
		op      string
		domain  string
		version int64
		ok      bool
		since   int64
	}{
		{"Slice", "", 9, true, 1},
		{"Slice", "", 10, true, 10},
		{"Squeeze", "", 12, true, 1},
		{"Squeeze", "", 13, true, 13},
		{"ReduceSum", "", 13, true, 13},
		{"ReduceMean", "", 17, true, 1},
		{"ReduceMean", "", 18, true, 18},
		{"Upsample", "", 10, false, 0},
		{"Resize", "", 9, false, 0},
		{"HardSwish", "", 13, false, 0},
		{"Relu", "", maxOpset + 1, false, 0},
		{"Relu", "", 0, false, 0},
		{"Relu", "com.microsoft", 1, false, 0},
	}
	for _, tc := range tests {
		e, ok := lookupOp(tc.op, tc.domain, tc.version)
		assert.Equal(t, tc.ok, ok, "%s opset %d", tc.op, tc.version)
		if ok {
			assert.Equal(t, tc.since, e.Since, "%s opset %d", tc.op, tc.version)
		}
	}
	// Ranges of one op must not overlap.
	for i, a := range opTable {
		for _, b := range opTable[i+1:] {
			if a.OpType != b.OpType || a.Domain != b.Domain {
				continue
			}
			aEnd, bEnd := a.Until, b.Until
			if aEnd == 0 {
				aEnd = 1 << 30
			}
			if bEnd == 0 {
				bEnd = 1 << 30
			}
			assert.False(t, a.Since < bEnd && b.Since < aEnd, "%s: ranges [%d,%d) and [%d,%d) overlap", a.OpType, a.Since, a.Until, b.Since, b.Until)
		}
	}
}

func TestOpsets(t *testing.T) {
	for _, c := range []struct {
		op           string
		since, until int64
		ok           bool
	}{
		{"Relu", 1, 0, true},
		{"HardSwish", 14, 0, true},
		{"Pad", 1, 0, true},
		{"Upsample", 7, 10, true},
		{"Scatter", 9, 11, true},
		{"FusedConv", 0, 0, false},
		{"NoSuchOp", 0, 0, false},
	} {
		since, until, ok := Opsets(c.op)
		assert.Equal(t, c.ok, ok, c.op)
		assert.Equal(t, [2]int64{c.since, c.until}, [2]int64{since, until}, c.op)
	}
	assert.Subset(t, OpTypes(), []string{"Relu", "Upsample", "Constant", "ReduceLogSum"})
	assert.NotContains(t, OpTypes(), "FusedConv")
	// Every op of graph's op set with a Since version imports from it on,
	// and no family row overlaps the rows made from graph's table (the
	// overlap check above covers every pair).
	for _, op := range graph.OpTypes() {
		s, _ := graph.Lookup(op)
		if s.Since == 0 {
			continue
		}
		e, ok := lookupOp(op, "", maxOpset)
		require.True(t, ok, "%s", op)
		assert.LessOrEqual(t, e.Since, s.Since, "%s", op)
	}
}

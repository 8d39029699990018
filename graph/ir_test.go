package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

func TestModelLookups(t *testing.T) {
	m := smallModel(t)
	assert.Same(t, m.Parameters[0], m.Parameter("x"))
	assert.Nil(t, m.Parameter("nope"))
	assert.Same(t, m.Results[0], m.Result("out"))
	assert.Nil(t, m.Result("nope"))
	assert.Nil(t, m.Node("nope"))

	cons, err := m.Consumers()
	require.NoError(t, err)
	relu := m.Node("relu")
	assert.Equal(t, []Input{{Node: m.Node("add"), Index: 0}, {Node: m.Node("add"), Index: 1}}, cons[relu.Out(0)])
	assert.Len(t, cons[m.Parameters[0].Out(0)], 1)

	w, ok := m.Node("conv").ConstInput(1)
	require.True(t, ok)
	assert.Equal(t, tensor.Shape{4, 3, 3, 3}, w.Shape())
	_, ok = m.Node("conv").ConstInput(0)
	assert.False(t, ok)
	_, ok = m.Node("conv").ConstInput(5)
	assert.False(t, ok)

	assert.Equal(t, []string{"conv", "bn"}, m.Node("conv").OriginalNames())
	assert.Equal(t, []string{"relu"}, relu.OriginalNames())
	assert.Equal(t, "relu:0", relu.Out(0).String())
	assert.Equal(t, "<none>", Output{}.String())
	assert.Equal(t, "Relu(relu)", relu.String())
	assert.Equal(t, tensor.F32, relu.Out(0).Port().Type)
}

func TestCloneCyclicModel(t *testing.T) {
	m := smallModel(t)
	m.Node("relu").Inputs[0] = m.Node("add").Out(0)
	c := m.Clone()
	require.Len(t, c.Results, 1)
	err := c.Validate()
	require.ErrorIs(t, err, ErrInvalidModel)
	assert.Contains(t, err.Error(), "cycle")
}

func TestConstantInferSyncsPort(t *testing.T) {
	c := NewConstant("k", tensor.MustNew(tensor.F32, tensor.Shape{2}))
	c.Value = tensor.MustNew(tensor.F16, tensor.Shape{3, 1})
	require.NoError(t, InferNode(c))
	assert.Equal(t, tensor.F16, c.Outputs[0].Type)
	assert.Equal(t, "[3,1]", c.Outputs[0].Shape.String())
	c.Value = nil
	assert.ErrorContains(t, InferNode(c), `"k"`)
}

func TestIntValues(t *testing.T) {
	mk := func(typ tensor.ElementType, raw []byte) *tensor.Tensor {
		x, err := tensor.FromBytes(typ, tensor.Shape{int64(len(raw) / typ.Size())}, raw)
		require.NoError(t, err)
		return x
	}
	cases := []struct {
		name string
		x    *tensor.Tensor
		want []int64
		ok   bool
	}{
		{"i64", mk(tensor.I64, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), []int64{-1}, true},
		{"i32", mk(tensor.I32, []byte{2, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff}), []int64{2, -2}, true},
		{"i16", mk(tensor.I16, []byte{0xfd, 0xff}), []int64{-3}, true},
		{"i8", mk(tensor.I8, []byte{0xfc}), []int64{-4}, true},
		{"u8", mk(tensor.U8, []byte{0xfc}), []int64{252}, true},
		{"empty", mk(tensor.I64, nil), []int64{}, true},
		{"f32", mk(tensor.F32, []byte{0, 0, 0x80, 0x3f}), nil, false},
		{"nil", nil, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := IntValues(tc.x)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
	t.Run("strided view", func(t *testing.T) {
		x, err := tensor.FromI64(tensor.Shape{2, 3}, []int64{1, 2, 3, 4, 5, 6})
		require.NoError(t, err)
		v, err := x.View([]int64{0, 1}, []int64{2, 3})
		require.NoError(t, err)
		got, ok := IntValues(v)
		require.True(t, ok)
		assert.Equal(t, []int64{2, 3, 5, 6}, got)
	})
}

func TestNormalizeAxis(t *testing.T) {
	n := NewNode("Relu", "r", nil, nil, 1)
	cases := []struct {
		axis    int64
		rank    int
		want    int
		wantErr bool
	}{
		{0, 3, 0, false}, {2, 3, 2, false}, {-1, 3, 2, false}, {-3, 3, 0, false},
		{3, 3, 0, true}, {-4, 3, 0, true}, {0, 0, 0, true},
	}
	for _, tc := range cases {
		got, err := NormalizeAxis(n, tc.axis, tc.rank)
		if tc.wantErr {
			assert.ErrorContains(t, err, `"r"`, "axis %d rank %d", tc.axis, tc.rank)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "axis %d rank %d", tc.axis, tc.rank)
	}
}

func TestSymbolicArithmeticKeepsNames(t *testing.T) {
	// Reshape(x, Concat(Shape(x)[0] * 1, Shape(x)[1] + 0, -1)) keeps both
	// symbolic names and solves the -1.
	x := NewParameter("x", tensor.F32, shp("B", "S", 4, 8))
	s := NewNode("Shape", "s", []Output{x.Out(0)}, nil, 1)
	b := NewNode("Slice", "b", []Output{s.Out(0), ci64(0), ci64(1)}, nil, 1)
	b1 := NewNode("Mul", "b1", []Output{b.Out(0), ci64(1)}, nil, 1)
	sq := NewNode("Slice", "sq", []Output{s.Out(0), ci64(1), ci64(2)}, nil, 1)
	sq0 := NewNode("Add", "sq0", []Output{sq.Out(0), ci64(0)}, nil, 1)
	c := NewNode("Concat", "c", []Output{b1.Out(0), sq0.Out(0), ci64(-1)}, Attrs{"axis": int64(0)}, 1)
	r := NewNode("Reshape", "r", []Output{x.Out(0), c.Out(0)}, nil, 1)
	inferAll(t, s, b, b1, sq, sq0, c, r)
	assert.Equal(t, "[B,S,32]", r.Outputs[0].Shape.String())

	// x*2 loses the name.
	b2 := NewNode("Mul", "b2", []Output{b.Out(0), ci64(2)}, nil, 1)
	c2 := NewNode("Concat", "c2", []Output{b2.Out(0), ci64(-1)}, Attrs{"axis": int64(0)}, 1)
	r2 := NewNode("Reshape", "r2", []Output{x.Out(0), c2.Out(0)}, nil, 1)
	inferAll(t, b2, c2, r2)
	assert.Equal(t, "[?,?]", r2.Outputs[0].Shape.String())
}

func TestPartialShapeHelpers(t *testing.T) {
	assert.True(t, shp("N", 3).Compatible(tensor.Shape{5, 3}))
	assert.False(t, shp("N", 3).Compatible(tensor.Shape{5, 4}))
	assert.False(t, shp("N", 3).Compatible(tensor.Shape{5}))
	assert.True(t, DynamicRank.Compatible(tensor.Shape{1, 2, 3}))
	assert.Equal(t, "[...]", DynamicRank.String())
	assert.Equal(t, -1, DynamicRank.Rank())
	s, ok := shp(2, 3).ToShape()
	require.True(t, ok)
	assert.Equal(t, tensor.Shape{2, 3}, s)
	_, ok = shp(2, "N").ToShape()
	assert.False(t, ok)
}

func TestBoundedDims(t *testing.T) {
	p := PartialShape{RankKnown: true, Dims: []Dim{StaticDim(1), BoundedDim(100, 200), BoundedDim(0, 8), BoundedDim(3, 0)}}
	assert.Equal(t, "[1,100..200,..8,3..]", p.String())
	assert.True(t, p.Compatible(tensor.Shape{1, 100, 0, 3}))
	assert.True(t, p.Compatible(tensor.Shape{1, 200, 8, 1 << 20}))
	assert.False(t, p.Compatible(tensor.Shape{1, 99, 8, 3}), "below the lower bound")
	assert.False(t, p.Compatible(tensor.Shape{1, 201, 8, 3}), "above the upper bound")
	assert.False(t, p.Compatible(tensor.Shape{1, 150, 9, 3}))
	assert.False(t, p.Compatible(tensor.Shape{1, 150, 8, 2}))
	named := Dim{Size: -1, Name: "batch", Min: 1, Max: 8}
	assert.Equal(t, "batch:1..8", named.String())
	assert.False(t, DynamicDim("N").Bounded())
	assert.True(t, named.Bounded())
}

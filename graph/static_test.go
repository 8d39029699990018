package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

// inferAll infers every node in order; the nodes must be given producers
// first.
func inferAll(t *testing.T, nodes ...*Node) {
	t.Helper()
	for _, n := range nodes {
		require.NoError(t, InferNode(n), "node %s", n)
	}
}

func TestStaticValue(t *testing.T) {
	t.Run("constant", func(t *testing.T) {
		c := ci64(3, 4)
		v, ok := StaticValue(c)
		require.True(t, ok)
		assert.Equal(t, []int64{3, 4}, v.I64())
	})
	t.Run("omitted", func(t *testing.T) {
		_, ok := StaticValue(Output{})
		assert.False(t, ok)
	})
	t.Run("shape of static", func(t *testing.T) {
		x := par(shp(2, 3, 4))
		s := NewNode("Shape", "s", []Output{x}, Attrs{"start": int64(1)}, 1)
		inferAll(t, s)
		v, ok := StaticValue(s.Out(0))
		require.True(t, ok)
		assert.Equal(t, tensor.I64, v.Type())
		assert.Equal(t, []int64{3, 4}, v.I64())
	})
	t.Run("shape of dynamic", func(t *testing.T) {
		s := NewNode("Shape", "s", []Output{par(shp("N", 3))}, nil, 1)
		inferAll(t, s)
		_, ok := StaticValue(s.Out(0))
		assert.False(t, ok)
		// The static tail is still known.
		g := NewNode("Gather", "g", []Output{s.Out(0), ci64(1)}, nil, 1)
		inferAll(t, g)
		v, ok := StaticValue(g.Out(0))
		require.True(t, ok)
		assert.Equal(t, []int64{3}, v.I64())
	})
	t.Run("arithmetic and cast", func(t *testing.T) {
		s := NewNode("Shape", "s", []Output{par(shp(2, 3, 5))}, nil, 1)
		h := NewNode("Gather", "h", []Output{s.Out(0), scalarI64(1)}, nil, 1)
		w := NewNode("Gather", "w", []Output{s.Out(0), scalarI64(2)}, nil, 1)
		hw := NewNode("Mul", "hw", []Output{h.Out(0), w.Out(0)}, nil, 1)
		m := NewNode("Sub", "m", []Output{hw.Out(0), scalarI64(1)}, nil, 1)
		d := NewNode("Div", "d", []Output{m.Out(0), scalarI64(2)}, nil, 1)
		a := NewNode("Add", "a", []Output{d.Out(0), scalarI64(100)}, nil, 1)
		c := NewNode("Cast", "c", []Output{a.Out(0)}, Attrs{"to": int64(tensor.I32)}, 1)
		inferAll(t, s, h, w, hw, m, d, a, c)
		v, ok := StaticValue(c.Out(0))
		require.True(t, ok)
		assert.Equal(t, tensor.I32, v.Type())
		assert.Equal(t, tensor.Shape{}, v.Shape())
		assert.Equal(t, []int32{107}, v.I32())
	})
	t.Run("slice and concat", func(t *testing.T) {
		s := NewNode("Shape", "s", []Output{par(shp(2, 3, 5, 7))}, nil, 1)
		sl := NewNode("Slice", "sl", []Output{s.Out(0), ci64(-1), ci64(0), ci64(0), ci64(-2)}, nil, 1)
		cc := NewNode("Concat", "cc", []Output{sl.Out(0), ci64(9)}, Attrs{"axis": int64(0)}, 1)
		inferAll(t, s, sl, cc)
		v, ok := StaticValue(cc.Out(0))
		require.True(t, ok)
		assert.Equal(t, []int64{7, 3, 9}, v.I64())
	})
	t.Run("float constant is returned as is", func(t *testing.T) {
		v, ok := StaticValue(cf32(1.5))
		require.True(t, ok)
		assert.Equal(t, tensor.F32, v.Type())
	})
	t.Run("bounded depth", func(t *testing.T) {
		prev := ci64(4, 5)
		var nodes []*Node
		for range 3 * maxSymDepth {
			n := NewNode("Identity", "id", []Output{prev}, nil, 1)
			nodes = append(nodes, n)
			prev = n.Out(0)
		}
		inferAll(t, nodes...)
		_, ok := StaticValue(prev)
		assert.False(t, ok, "evaluation past the depth bound gives up")
		_, ok = StaticValue(nodes[maxSymDepth-2].Out(0))
		assert.True(t, ok, "a short chain evaluates")
	})
	t.Run("runtime data", func(t *testing.T) {
		a := NewNode("Add", "a", []Output{parT(tensor.I64, shp(2)), ci64(1, 1)}, nil, 1)
		inferAll(t, a)
		_, ok := StaticValue(a.Out(0))
		assert.False(t, ok)
	})
}

// TestReshapeFromShapeChain is the pattern real models use to flatten:
// Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])).
func TestReshapeFromShapeChain(t *testing.T) {
	cases := []struct {
		name string
		in   PartialShape
		want string
	}{
		{"static", shp(2, 3, 4, 4), "[2,48]"},
		{"named batch", shp("batch", 3, 4, 4), "[batch,48]"},
		{"anonymous batch", shp(-1, 3, 4, 4), "[?,?]"},
		{"dynamic inner", shp("batch", 3, "H", 4), "[batch,?]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := NewParameter("x", tensor.F32, tc.in)
			s := NewNode("Shape", "s", []Output{x.Out(0)}, nil, 1)
			g := NewNode("Gather", "g", []Output{s.Out(0), scalarI64(0)}, Attrs{"axis": int64(0)}, 1)
			u := NewNode("Unsqueeze", "u", []Output{g.Out(0), ci64(0)}, nil, 1)
			c := NewNode("Concat", "c", []Output{u.Out(0), ci64(-1)}, Attrs{"axis": int64(0)}, 1)
			r := NewNode("Reshape", "r", []Output{x.Out(0), c.Out(0)}, nil, 1)
			m := NewModel("m", []*Node{x}, []*Node{NewResult("out", r.Out(0))})
			require.NoError(t, m.Validate())
			assert.Equal(t, tc.want, r.Outputs[0].Shape.String())
			assert.Equal(t, tc.want, m.Results[0].Outputs[0].Shape.String())
		})
	}
}

func TestExpandConstantOfShapeFromShape(t *testing.T) {
	x := NewParameter("x", tensor.F32, shp("N", 8))
	s := NewNode("Shape", "s", []Output{x.Out(0)}, nil, 1)
	cos := NewNode("ConstantOfShape", "cos", []Output{s.Out(0)}, nil, 1)
	e := NewNode("Expand", "e", []Output{par(shp(1, 1)), s.Out(0)}, nil, 1)
	inferAll(t, s, cos, e)
	assert.Equal(t, "[N,8]", cos.Outputs[0].Shape.String())
	assert.Equal(t, "[N,8]", e.Outputs[0].Shape.String())
}

package graph

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

// shp builds a PartialShape: an int is a static dim, -1 an anonymous
// dynamic dim, a string a named dynamic dim.
func shp(dims ...any) PartialShape {
	p := PartialShape{Dims: []Dim{}, RankKnown: true}
	for _, d := range dims {
		switch d := d.(type) {
		case int:
			if d < 0 {
				p.Dims = append(p.Dims, DynamicDim(""))
			} else {
				p.Dims = append(p.Dims, StaticDim(int64(d)))
			}
		case string:
			p.Dims = append(p.Dims, DynamicDim(d))
		default:
			panic(fmt.Sprintf("shp: bad dim %v", d))
		}
	}
	return p
}

var paramSeq int

// par returns the output of a fresh f32 parameter of shape s.
func par(s PartialShape) Output { return parT(tensor.F32, s) }

// parT returns the output of a fresh parameter of type t and shape s.
func parT(t tensor.ElementType, s PartialShape) Output {
	paramSeq++
	return NewParameter(fmt.Sprintf("p%d", paramSeq), t, s).Out(0)
}

// ci64 returns the output of an i64 constant vector.
func ci64(v ...int64) Output {
	paramSeq++
	t, err := tensor.FromI64(tensor.Shape{int64(len(v))}, v)
	if err != nil {
		panic(err)
	}
	return NewConstant(fmt.Sprintf("c%d", paramSeq), t).Out(0)
}

// cf32 returns the output of an f32 constant vector.
func cf32(v ...float32) Output {
	paramSeq++
	t, err := tensor.FromF32(tensor.Shape{int64(len(v))}, v)
	if err != nil {
		panic(err)
	}
	return NewConstant(fmt.Sprintf("c%d", paramSeq), t).Out(0)
}

// scalarI64 returns the output of a rank-0 i64 constant.
func scalarI64(v int64) Output {
	paramSeq++
	t, err := tensor.FromI64(tensor.Shape{}, []int64{v})
	if err != nil {
		panic(err)
	}
	return NewConstant(fmt.Sprintf("c%d", paramSeq), t).Out(0)
}

// op builds and infers one node.
func op(t *testing.T, opType string, attrs Attrs, outs int, in ...Output) *Node {
	t.Helper()
	n := NewNode(opType, "the_"+opType, in, attrs, outs)
	require.NoError(t, InferNode(n))
	return n
}

// inferCase is one row of the table-driven inference tests.
type inferCase struct {
	name   string
	op     string
	attrs  Attrs
	outs   int // default 1
	inputs func() []Output
	want   []PartialShape
	types  []tensor.ElementType // nil: the first input's type
	err    string               // substring of the expected error
}

func runInferCases(t *testing.T, cases []inferCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			outs := tc.outs
			if outs == 0 {
				outs = 1
			}
			in := tc.inputs()
			n := NewNode(tc.op, "node_"+tc.name, in, tc.attrs, outs)
			err := InferNode(n)
			if tc.err != "" {
				require.Error(t, err)
				require.Contains(t, err.Error(), tc.err)
				require.Contains(t, err.Error(), "node_"+tc.name, "error must name the node")
				return
			}
			require.NoError(t, err)
			require.Len(t, tc.want, outs, "test case lists every output")
			for i, w := range tc.want {
				require.Equal(t, w.String(), n.Outputs[i].Shape.String(), "output %d shape", i)
				require.Equal(t, w.RankKnown, n.Outputs[i].Shape.RankKnown, "output %d rank known", i)
				wantT := in[0].Type()
				if tc.types != nil {
					wantT = tc.types[i]
				}
				require.Equal(t, wantT, n.Outputs[i].Type, "output %d type", i)
			}
		})
	}
}

func ins(o ...Output) func() []Output { return func() []Output { return o } }

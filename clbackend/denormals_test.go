package clbackend

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// TestFlushesDenormals: only the f32/f16 multiply-accumulate kernels are
// built with flushOption.
func TestFlushesDenormals(t *testing.T) {
	for _, c := range []struct {
		file, defines string
		want          bool
	}{
		{"conv_bcast.cl", "-DVW=16", true},
		{"gemm_fully_connected.cl", "-DHALF", true},
		{"kernelfusion_dense_chain.cl", "", true},
		{"gemm_fused.cl", "-DDOUBLE", false},
		{"gemm_matmul.cl", "-DT=double -DIS_DOUBLE", false},
		{"gemm_det.cl", "", false},
		{"eltwise_binary.cl", "-DBINARY_OP=GREATER", false},
		{"eltwise_unary.cl", "-DUNARY_OP=SIGN", false},
		{"compare_where.cl", "", false},
	} {
		assert.Equal(t, c.want, flushesDenormals(c.file, c.defines), "%s %s", c.file, c.defines)
	}
}

// TestDenormalsKeptInComparisons: a comparison and Sign on the GPU see a
// denormal as the non-zero value it is, as the CPU device does (a kernel
// built with -cl-denorms-are-zero read 1e-40 > 0 as false on POCL).
func TestDenormalsKeptInComparisons(t *testing.T) {
	p := newGPU(t)
	in, err := tensor.FromF32(tensor.Shape{6}, []float32{1e-40, -1e-40, 0, 1, -2, 1e-39})
	require.NoError(t, err)
	zt, err := tensor.FromF32(tensor.Shape{1}, []float32{0})
	require.NoError(t, err)
	model := func(op string, ins ...graph.Output) *graph.Model {
		x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(6))
		n := graph.NewNode(op, "node", append([]graph.Output{x.Out(0)}, ins...), nil, 1)
		return graph.NewModel(op, []*graph.Node{x}, []*graph.Node{graph.NewResult("y", n.Out(0))})
	}
	gt, _ := runModel(t, p, model("Greater", graph.NewConstant("zero", zt).Out(0)), in)
	assert.Equal(t, []bool{true, false, false, true, false, true}, gt[0].Contiguous().Bool())
	sign, _ := runModel(t, p, model("Sign"), in)
	assert.Equal(t, []float32{1, -1, 0, 1, -1, 1}, sign[0].Contiguous().F32())
}

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
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(6))
	zt, err := tensor.FromF32(tensor.Shape{1}, []float32{0})
	require.NoError(t, err)
	zero := graph.NewConstant("zero", zt).Out(0)
	gt := graph.NewNode("Greater", "gt", []graph.Output{x.Out(0), zero}, nil, 1)
	sign := graph.NewNode("Sign", "sign", []graph.Output{x.Out(0)}, nil, 1)
	m := graph.NewModel("denormals", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", gt.Out(0)), graph.NewResult("s", sign.Out(0))})
	in, err := tensor.FromF32(tensor.Shape{6}, []float32{1e-40, -1e-40, 0, 1, -2, 1e-39})
	require.NoError(t, err)
	out, cm := runModel(t, p, m, in)
	assert.Equal(t, []bool{true, false, false, true, false, true}, out[0].Contiguous().Bool())
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, r.SetTensor("x", in))
	require.NoError(t, r.Infer(t.Context()))
	s, err := r.Tensor("s")
	require.NoError(t, err)
	assert.Equal(t, []float32{1, -1, 0, 1, -1, 1}, s.Contiguous().F32())
}

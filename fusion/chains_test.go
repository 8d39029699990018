package fusion_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// TestFuseElementwiseChains fuses x*0.5 + b -> Sigmoid -> *x (a broadcast
// bias, a scalar constant, x read twice) into one generated KernelFusion
// node ahead of a Softmax, and leaves alone an op whose output a Result
// also reads (Relu) and the chain of one it would leave behind (Add); the
// CPU computes the same with and without the pass. Without
// Options.Chains (the CPU device) the pass changes nothing; an excluded
// op type (GPU_DISABLED_OPS) splits the chain around it.
func TestFuseElementwiseChains(t *testing.T) {
	b := newBuilder(t)
	x := b.param("x", 2, 3, 4, 5)
	half := b.scalar(0.5)
	e := b.op("Mul", nil, b.op("Sigmoid", nil, b.op("Add", nil, b.op("Mul", nil, x, half), b.rand(-1, 1, 3, 1, 1))), x)
	relu := b.op("Relu", nil, x)
	m := b.model(b.op("Softmax", graph.Attrs{"axis": int64(-1)}, e), b.op("Add", nil, relu, half), relu)
	ins := randomInputs(t, m, 3, nil)

	_, rep := transform(t, m, ins, fusion.FuseElementwiseChains())
	assert.Zero(t, rep.Passes[0].Rewrites, "no chains for a device that does not generate them")
	_, rep = transformWith(t, m, ins, fusion.Options{Chains: &fusion.ChainOptions{Exclude: map[string]bool{"Sigmoid": true}}}, fusion.FuseElementwiseChains())
	assert.Equal(t, 1, rep.Passes[0].Rewrites, "Sigmoid excluded: Mul(Sigmoid, x) is a chain of one, Add(Mul(x, 0.5), b) one of two")

	tm, rep := transformWith(t, m, ins, fusion.Options{Chains: &fusion.ChainOptions{}}, fusion.FuseElementwiseChains(), fusion.DeadCodeRemoval())
	assert.Equal(t, 1, rep.Passes[0].Rewrites)
	chains := kernelFusions(t, tm)
	require.Len(t, chains, 1)
	c := chains[0]
	assert.Equal(t, graph.GeneratedKernel, c.Attrs.String(graph.AttrKernel, ""))
	assert.Equal(t, graph.LaunchElementwise, c.Attrs.String(graph.AttrLaunch, ""))
	assert.Len(t, c.Inputs, 2, "x and the bias; the scalar stays in the body")
	assert.Equal(t, []string{"Mul_2", "Add_4", "Sigmoid_5", "Mul_6"}, c.RT.FusedNames)
	assert.Equal(t, []float32{0.5, 0, 0}, c.Attrs.Floats(graph.AttrParams, nil), "the scalar and Sigmoid's two attribute slots")
	assert.Equal(t, 1, opCount(t, tm, "Relu"))
	assert.Equal(t, 1, opCount(t, tm, "Add"), "the Add after the shared Relu stays")
}

// TestFuseReductionChains fuses (x - b)^2 -> ReduceMean over the last axis
// into one generated KernelFusion node launched by rows, its axes kept in
// the body, and leaves alone a reduction over a middle axis and a
// reduction of an op another node also reads; the CPU computes the same
// with and without the pass.
func TestFuseReductionChains(t *testing.T) {
	b := newBuilder(t)
	x := b.param("x", 2, 3, 8)
	d := b.op("Sub", nil, x, b.rand(-1, 1, 8))
	mean := b.op("ReduceMean", graph.Attrs{"keepdims": int64(1)}, b.op("Mul", nil, d, d), b.ints(-1))
	e := b.op("Exp", nil, x)
	middle := b.op("ReduceSum", graph.Attrs{"keepdims": int64(0)}, b.op("Relu", nil, x), b.ints(1))
	shared := b.op("ReduceL2", graph.Attrs{"keepdims": int64(0)}, e, b.ints(-1))
	m := b.model(mean, middle, shared, e)
	ins := randomInputs(t, m, 5, nil)
	tm, rep := transformWith(t, m, ins, fusion.Options{Chains: &fusion.ChainOptions{}}, fusion.FuseElementwiseChains(), fusion.DeadCodeRemoval())
	assert.Equal(t, 1, rep.Passes[0].Rewrites)
	chains := kernelFusions(t, tm)
	require.Len(t, chains, 1)
	c := chains[0]
	assert.Equal(t, graph.LaunchReduceRows, c.Attrs.String(graph.AttrLaunch, ""))
	assert.Len(t, c.Inputs, 2, "x and b; the axes stay in the body")
	assert.Equal(t, graph.ShapeOf(2, 3, 1), c.Outputs[0].Shape, "keepdims")
	assert.Equal(t, 1, opCount(t, tm, "ReduceSum"), "a middle axis is not a row")
	assert.Equal(t, 1, opCount(t, tm, "ReduceL2"), "Exp is read by a Result too: a chain of one")
}

// kernelFusions returns the KernelFusion nodes of m.
func kernelFusions(t *testing.T, m *graph.Model) []*graph.Node {
	nodes, err := m.Nodes()
	require.NoError(t, err)
	var out []*graph.Node
	for _, n := range nodes {
		if n.OpType == graph.OpKernelFusion {
			out = append(out, n)
		}
	}
	return out
}

// TestFuseQuantizeTails fuses a squeeze-excitation gate Mul and the
// QuantizeLinear after it into one generated KernelFusion node that
// stores u8, and leaves alone a QuantizeLinear whose Add another node
// also reads (a chain of one) and a lone QuantizeLinear; the CPU computes
// the same bytes with and without the pass.
func TestFuseQuantizeTails(t *testing.T) {
	b := newBuilder(t)
	x := b.param("x", 1, 4, 3, 5)
	s, z := b.scalar(0.02), b.constOf(tensor.U8, tensor.Shape{}, 128)
	gated := b.op("QuantizeLinear", nil, b.op("Mul", nil, x, b.op("Sigmoid", nil, b.param("gate", 1, 4, 1, 1))), s, z)
	sum := b.op("Add", nil, x, b.rand(-1, 1, 5))
	m := b.model(gated, b.op("QuantizeLinear", nil, sum, s, z), b.op("Relu", nil, sum), b.op("QuantizeLinear", nil, x, s, z))
	ins := randomInputs(t, m, 5, nil)
	tm, rep := transformWith(t, m, ins, fusion.Options{Chains: &fusion.ChainOptions{}}, fusion.FuseElementwiseChains(), fusion.DeadCodeRemoval())
	assert.Equal(t, 1, rep.Passes[0].Rewrites)
	chains := kernelFusions(t, tm)
	require.Len(t, chains, 1)
	assert.Equal(t, tensor.U8, chains[0].Outputs[0].Type)
	assert.Len(t, chains[0].Inputs, 2, "x and the gate; the scale and zero point stay in the body")
	assert.Equal(t, 2, opCount(t, tm, "QuantizeLinear"), "the shared Add's and the lone one")
}

// TestFuseQuantizeChainsBeforeKernelFusions: a squeeze-excitation
// residual x + x*gate whose only reader is a QuantizeLinear becomes one
// generated chain storing u8 ahead of FuseSEResidual; without the
// QuantizeLinear FuseSEResidual keeps it.
func TestFuseQuantizeChainsBeforeKernelFusions(t *testing.T) {
	for _, quant := range []bool{true, false} {
		b := newBuilder(t)
		x, gate := b.param("x", 1, 4, 3, 5), b.param("gate", 1, 4, 1, 1)
		y := b.op("Add", nil, x, b.op("Mul", nil, x, gate))
		if quant {
			y = b.op("QuantizeLinear", nil, y, b.scalar(0.02), b.constOf(tensor.U8, tensor.Shape{}, 128))
		}
		m := b.model(y)
		passes := append(append([]fusion.Pass{fusion.FuseQuantizeChains()}, fusion.KernelFusionPasses()...), fusion.FuseElementwiseChains(), fusion.DeadCodeRemoval())
		tm, _ := transformWith(t, m, randomInputs(t, m, 9, nil), fusion.Options{Chains: &fusion.ChainOptions{}}, passes...)
		fused := kernelFusions(t, tm)
		require.Len(t, fused, 1)
		if quant {
			assert.Equal(t, graph.GeneratedKernel, fused[0].Attrs.String(graph.AttrKernel, ""))
			assert.Equal(t, tensor.U8, fused[0].Outputs[0].Type)
			assert.Zero(t, opCount(t, tm, "QuantizeLinear"))
		} else {
			assert.Equal(t, "se_residual", fused[0].Attrs.String(graph.AttrKernel, ""))
		}
	}
}

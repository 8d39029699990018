package clbackend

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// needOpenCL skips a test in a build without OpenCL, saying how to get one.
func needOpenCL(t testing.TB) {
	t.Helper()
	if !cl.Enabled {
		t.Skip("built without OpenCL (CGO_ENABLED=0 or -tags noopencl); TestNotBuilt covers this build. Rebuild with cgo and `apt-get install pocl-opencl-icd ocl-icd-opencl-dev` to run it")
	}
}

// pinned are the properties of a compile that forces kernel variant v (a
// Variant's String, or a list KeyKernelVariants takes) and runs on the
// device's worker threads (GPU_IN_THREAD=NO), where TestVariantsMatchCPU
// and TestQuantizedVariantsBitExact run every variant: POCL keys its
// kernel cache by OpenCL device, so the same variant program compiled on
// the in-thread companion (AUTO's choice for a small model) is a second
// cold build of it (a conv or GEMM variant: the costly ones). extra adds
// properties.
func pinned(v string, extra ...string) map[string]string {
	props := map[string]string{KeyKernelVariants: v, KeyInThread: inThreadNo}
	for i := 0; i+1 < len(extra); i += 2 {
		props[extra[i]] = extra[i+1]
	}
	return props
}

// newGPU returns the GPU plugin over the machine's OpenCL devices, closed
// when the test ends.
func newGPU(t testing.TB) *Plugin {
	t.Helper()
	needOpenCL(t)
	p, err := New()
	require.NoError(t, err, "the GPU plugin needs an OpenCL device; for a CPU one run `apt-get install pocl-opencl-icd`")
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// twinGPU returns a plugin whose GPU.0 and GPU.1 are the same OpenCL
// device, so per-device behaviour is testable on a one-device machine.
func twinGPU(t testing.TB) *Plugin {
	t.Helper()
	needOpenCL(t)
	devs, err := enumerate()
	require.NoError(t, err)
	p, err := newPlugin([]*cl.Device{devs[0], devs[0]})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// chainModel is x f32[2,3] -> Relu -> Add(c, same shape) -> Mul(scalar s)
// -> Identity -> y, plus z = x + w (two parameters): every op and both
// broadcast forms of the engine.
func chainModel(t testing.TB) *graph.Model {
	t.Helper()
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, 3))
	w := graph.NewParameter("w", tensor.F32, graph.ShapeOf(2, 3))
	cv, err := tensor.FromF32(tensor.Shape{2, 3}, []float32{0.5, -1, 2, -3, 0.25, 1})
	require.NoError(t, err)
	c := graph.NewConstant("c", cv)
	sv, err := tensor.FromF32(tensor.Shape{}, []float32{-2})
	require.NoError(t, err)
	s := graph.NewConstant("s", sv)
	relu := graph.NewNode("Relu", "relu", []graph.Output{x.Out(0)}, nil, 1)
	add := graph.NewNode("Add", "add", []graph.Output{relu.Out(0), c.Out(0)}, nil, 1)
	mul := graph.NewNode("Mul", "mul", []graph.Output{s.Out(0), add.Out(0)}, nil, 1)
	id := graph.NewNode("Identity", "identity", []graph.Output{mul.Out(0)}, nil, 1)
	sum := graph.NewNode("Add", "sum", []graph.Output{x.Out(0), w.Out(0)}, nil, 1)
	y := graph.NewResult("y", id.Out(0))
	z := graph.NewResult("z", sum.Out(0))
	return graph.NewModel("chain", []*graph.Node{x, w}, []*graph.Node{y, z})
}

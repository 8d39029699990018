// HETERO over the GPU and CPU devices needs a build with OpenCL; the
// HETERO logic itself is tested without it in package hetero (over the CPU
// and a test device).

//go:build cgo && !noopencl

package tests

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/hetero"
	"github.com/clinfer/clinfer/internal/npy"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
	"github.com/clinfer/clinfer/tests/devicetest"

	_ "github.com/clinfer/clinfer/cpu_fallback" // registers the "CPU" device
)

const heteroGPUCPU = "HETERO:GPU,CPU"

// TestHeteroSuites runs the shared device suite on HETERO over GPU and CPU.
func TestHeteroSuites(t *testing.T) {
	devicetest.Run(t, func(t *testing.T) driver.Plugin {
		p, err := hetero.New()
		require.NoError(t, err)
		require.NoError(t, p.SetProperties(map[string]string{driver.KeyDevicePriorities: "GPU,CPU"}))
		return p
	})
}

// TestRealModelsHETERO runs the real models under HETERO:GPU,CPU against
// ONNX Runtime's outputs.
func TestRealModelsHETERO(t *testing.T) { conformance.RealModels(t, heteroGPUCPU) }

// clsCase reads the PP-OCR cls case: its model, inputs and reference
// outputs' directory.
func clsCase(t *testing.T) (*graph.Model, *conformance.RealCase, string) {
	t.Helper()
	root, err := conformance.RepoRoot()
	require.NoError(t, err)
	dir := filepath.Join(root, "tests", "testdata", "realmodels", "cls")
	c, err := conformance.ReadRealCase(filepath.Join(dir, "case.json"))
	require.NoError(t, err)
	path, err := conformance.ModelPath(c.Model)
	require.NoError(t, err, "run `make models`")
	m, err := onnx.ReadFile(path)
	require.NoError(t, err)
	return m, c, dir
}

// infer compiles m on device through core and runs it on the case's
// inputs, returning the outputs by name and the compiled model.
func infer(t *testing.T, core *driver.Core, m *graph.Model, device string, c *conformance.RealCase) (map[string]*tensor.Tensor, driver.CompiledModel) {
	t.Helper()
	cm, err := core.CompileModel(context.Background(), m, device, nil)
	require.NoError(t, err, "compile on %s", device)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })
	return runCompiled(t, cm, c), cm
}

// bindCase binds the case's inputs to r.
func bindCase(t *testing.T, r driver.InferRequest, c *conformance.RealCase) {
	t.Helper()
	for _, in := range c.Inputs {
		x, err := in.Tensor()
		require.NoError(t, err)
		require.NoError(t, r.SetTensor(in.Name, x))
	}
}

// heteroCore returns a Core whose HETERO device's GPU has disabled those
// op types.
func heteroCore(t *testing.T, disabled string) *driver.Core {
	t.Helper()
	core := newHeteroCore(t, disabled)
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	return core
}

// newHeteroCore is heteroCore for a caller that closes the Core itself.
func newHeteroCore(t *testing.T, disabled string) *driver.Core {
	t.Helper()
	core := driver.NewCore()
	p, err := core.Plugin(heteroGPUCPU)
	require.NoError(t, err)
	if disabled != "" {
		require.NoError(t, p.(*hetero.Plugin).SetDeviceProperties("GPU", map[string]string{clbackend.KeyDisabledOps: disabled}))
	}
	return core
}

// TestHeteroOpTheGPUDoesNotSupport disables ops on the GPU: their nodes
// run on the CPU, and the outputs equal the CPU device's alone.
func TestHeteroOpTheGPUDoesNotSupport(t *testing.T) {
	m, c, _ := clsCase(t)
	cpuCore := driver.NewCore()
	defer cpuCore.Close()
	want, _ := infer(t, cpuCore, m, "CPU", c)
	cases := []struct {
		name, disabled string
		minSubmodels   int
	}{
		{"MaxPool", "MaxPool", 3},          // one node in the middle: GPU, CPU, GPU
		{"HardSigmoid", "HardSigmoid", 10}, // nine nodes: back and forth
		{"Softmax", "Softmax", 2},          // the last op
		// Most of the model on the CPU: a fused node runs whole on one device,
		// so the SE blocks (FuseSEBlock) and the residual Adds fused into their
		// convolutions go with the Convs; the rest stays on the GPU.
		{"ConvAndRelu", "Conv,Relu", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			core := heteroCore(t, tc.disabled)
			got, cm := infer(t, core, m, heteroGPUCPU, c)
			n, err := cm.Property(hetero.KeyNumberOfSubmodels)
			require.NoError(t, err)
			k, err := strconv.Atoi(n)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, k, tc.minSubmodels, "%s", hetero.KeyNumberOfSubmodels)
			devs, err := cm.Property(driver.KeyExecutionDevices)
			require.NoError(t, err)
			assert.ElementsMatch(t, []string{"GPU", "CPU"}, strings.Fields(devs), "%s", driver.KeyExecutionDevices)
			for name, w := range want {
				assert.NoError(t, conformance.Compare(got[name], w, conformance.RealModelTolerance), "output %q", name)
			}
		})
	}
}

// TestHeteroPinnedHalfHalf pins the first half of the cls model's op
// nodes to the CPU and the rest to the GPU.
func TestHeteroPinnedHalfHalf(t *testing.T) {
	m, c, dir := clsCase(t)
	nodes, err := m.Nodes()
	require.NoError(t, err)
	var ops []*graph.Node
	for _, n := range nodes {
		switch n.OpType {
		case graph.OpParameter, graph.OpConstant, graph.OpResult:
		default:
			ops = append(ops, n)
		}
	}
	for i, n := range ops {
		if i < len(ops)/2 {
			n.RT.Affinity = "CPU"
		} else {
			n.RT.Affinity = "GPU"
		}
	}
	got, cm := infer(t, heteroCore(t, ""), m, heteroGPUCPU, c)
	devs, err := cm.Property(driver.KeyExecutionDevices)
	require.NoError(t, err)
	assert.Equal(t, "CPU GPU", devs)
	n, err := cm.Property(hetero.KeyNumberOfSubmodels)
	require.NoError(t, err)
	assert.Equal(t, "2", n)
	for _, o := range c.Outputs {
		want, err := npy.ReadFile(filepath.Join(dir, o.File))
		require.NoError(t, err)
		assert.NoError(t, conformance.Compare(got[o.Name], want, conformance.RealModelTolerance), "output %q against ONNX Runtime", o.Name)
	}
}

// fallbackOps are ops every real model has at least one of: disabled on
// the GPU, they send part of each model to the CPU.
const fallbackOps = "HardSigmoid,Resize,Softmax,Sigmoid,ReduceMean"

// TestRealModelsHETEROWithCPUFallback runs every real model under
// HETERO:GPU,CPU with fallbackOps disabled on the GPU, so that each runs
// split across both devices, against ONNX Runtime's outputs.
func TestRealModelsHETEROWithCPUFallback(t *testing.T) {
	root, err := conformance.RepoRoot()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(root, "tests", "testdata", "realmodels", "*", "case.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no real-model cases: run `make refs`")
	core := heteroCore(t, fallbackOps)
	for _, f := range files {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c, err := conformance.ReadRealCase(f)
			require.NoError(t, err)
			path, err := conformance.ModelPath(c.Model)
			require.NoError(t, err, "run `make models`")
			m, err := onnx.ReadFile(path)
			require.NoError(t, err)
			q, err := core.QueryModel(context.Background(), m, heteroGPUCPU, nil)
			require.NoError(t, err)
			count := map[string]int{}
			for _, d := range q {
				count[d]++
			}
			assert.Positive(t, count["CPU"], "no node falls back to the CPU")
			assert.Positive(t, count["GPU"], "no node runs on the GPU")
			reps, err := conformance.RunRealCase(context.Background(), core, heteroGPUCPU, dir, c)
			require.NoError(t, err)
			for _, r := range reps {
				t.Logf("%s output %q: max abs diff %.3g (%d nodes on GPU, %d on CPU)", c.Model, r.Name, r.MaxAbsDiff, count["GPU"], count["CPU"])
				assert.NoError(t, r.Err, "output %q", r.Name)
			}
		})
	}
}

// TestHeteroAsyncSplitModel runs several asynchronous requests of the cls
// model split GPU -> CPU -> GPU at once: their stages interleave across
// the devices, and each gives the synchronous request's outputs.
func TestHeteroAsyncSplitModel(t *testing.T) {
	m, c, _ := clsCase(t)
	core := heteroCore(t, "MaxPool")
	want, cm := infer(t, core, m, heteroGPUCPU, c)
	ac, ok := cm.(driver.AsyncCompiledModel)
	require.True(t, ok)
	const n = 4
	reqs := make([]*driver.AsyncInferRequest, n)
	for i := range reqs {
		r, err := ac.CreateAsyncInferRequest()
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, r.Close()) })
		for _, in := range c.Inputs {
			x, err := in.Tensor()
			require.NoError(t, err)
			require.NoError(t, r.SetTensor(in.Name, x))
		}
		reqs[i] = r
	}
	for round := range 3 {
		for _, r := range reqs {
			require.NoError(t, r.StartAsync(context.Background()))
		}
		for i, r := range reqs {
			require.NoError(t, r.Wait(context.Background()), "round %d request %d", round, i)
			for name, w := range want {
				got, err := r.Tensor(name)
				require.NoError(t, err)
				assert.NoError(t, conformance.Compare(got, w, conformance.DefaultTolerance(w.Type())), "round %d request %d output %q", round, i, name)
			}
		}
	}
}

// TestHeteroLinksStayOnDevice splits cls at every HardSigmoid (disabled on
// the GPU): the squeeze-excite blocks' inputs go from one GPU subgraph
// past the CPU's HardSigmoid to the next GPU subgraph's Mul. Those links
// are remote tensors of the GPU's context, copied on the device
// (DeviceToDevice bytes) instead of read back and written again, and the
// outputs still equal the CPU device's.
func TestHeteroLinksStayOnDevice(t *testing.T) {
	m, c, _ := clsCase(t)
	// Static shapes (the case's input shape, as a GPU pipeline fixes
	// them); TestHeteroDynamicLinksStayOnDevice leaves the batch dynamic.
	require.Len(t, c.Inputs, 1)
	x, err := c.Inputs[0].Tensor()
	require.NoError(t, err)
	s := x.Shape()
	m.Parameters[0].Outputs[0].Shape = graph.ShapeOf(s...)
	cpuCore := driver.NewCore()
	defer cpuCore.Close()
	want, _ := infer(t, cpuCore, m, "CPU", c)
	core := heteroCore(t, "HardSigmoid")
	cm, err := core.CompileModel(context.Background(), m, heteroGPUCPU, nil)
	require.NoError(t, err)
	defer cm.Close()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	bindCase(t, r, c)
	require.NoError(t, r.Infer(context.Background()))
	for name, w := range want {
		got, err := r.Tensor(name)
		require.NoError(t, err)
		assert.NoError(t, conformance.Compare(got, w, conformance.RealModelTolerance), "output %q", name)
	}
	hr := r.(*hetero.InferRequest)
	devs, _ := cm.(*hetero.CompiledModel).Submodels()
	subs := hr.SubTransfers()
	var onDevice int64
	for k, tr := range subs {
		if strings.HasPrefix(devs[k], "GPU") {
			onDevice += tr.DeviceToDevice
		} else {
			assert.Zero(t, tr.DeviceToDevice, "subgraph %d on %s", k, devs[k])
		}
	}
	assert.Positive(t, onDevice, "links between GPU subgraphs are copied on the device")
	assert.Equal(t, onDevice, hr.Transfers().DeviceToDevice)
	t.Logf("HETERO:GPU,CPU over cls, %d subgraphs: %s", len(subs), hr.Transfers())
}

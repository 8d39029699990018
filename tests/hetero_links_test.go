//go:build cgo && !noopencl

package tests

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/hetero"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// batchOf stacks n copies of x (whose first dim is 1), copy i scaled by
// 1+i/4 so that the batch's rows differ.
func batchOf(t *testing.T, x *tensor.Tensor, n int64) *tensor.Tensor {
	t.Helper()
	src := x.Contiguous().F32()
	out := make([]float32, 0, int64(len(src))*n)
	for i := range n {
		for _, v := range src {
			out = append(out, v*(1+float32(i)/4))
		}
	}
	s := append(tensor.Shape{n}, x.Shape()[1:]...)
	b, err := tensor.FromF32(s, out)
	require.NoError(t, err)
	return b
}

// cpuRequest returns a request of m compiled on the CPU device, closed
// with the test: the reference outputs.
func cpuRequest(t *testing.T, m *graph.Model) driver.InferRequest {
	t.Helper()
	core := driver.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	cm, err := core.CompileModel(context.Background(), m, "CPU", nil)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	return r
}

// cpuBytes returns the bytes of the inputs and outputs of the CPU
// subgraphs of a HETERO model compiled for static shapes: what its split
// must move to the CPU and back.
func cpuBytes(t *testing.T, cm driver.CompiledModel) (in, out int64) {
	t.Helper()
	devs, subs := cm.(*hetero.CompiledModel).Submodels()
	bytes := func(ps []driver.PortInfo) (n int64) {
		for _, p := range ps {
			s, ok := p.Shape.ToShape()
			require.True(t, ok, "%s has a dynamic shape", p.Name)
			n += s.NumElements() * int64(p.Type.Size())
		}
		return n
	}
	for k, d := range devs {
		if d == "CPU" {
			in += bytes(subs[k].Inputs())
			out += bytes(subs[k].Outputs())
		}
	}
	require.Positive(t, in)
	return in, out
}

// TestHeteroDynamicLinksStayOnDevice is TestHeteroLinksStayOnDevice with
// the batch dim left dynamic, run at batch 1, then 3, then 1 again: the
// links between GPU subgraphs are sized before their producer runs and
// stay on the device, so an inference moves across the host exactly the
// model's input and output and what the CPU subgraphs (the HardSigmoids)
// read and make, as the same split compiled for that static batch does,
// and the outputs equal the CPU device's. Every OpenCL object is
// released by Close.
func TestHeteroDynamicLinksStayOnDevice(t *testing.T) {
	m, c, _ := clsCase(t)
	require.Len(t, c.Inputs, 1)
	x, err := c.Inputs[0].Tensor()
	require.NoError(t, err)
	dims := append([]graph.Dim{graph.DynamicDim("N")}, graph.StaticShape(x.Shape()[1:]).Dims...)
	m.Parameters[0].Outputs[0].Shape = graph.PartialShape{Dims: dims, RankKnown: true}
	name := m.Parameters[0].Name
	runtime.GC()
	base := cl.LiveObjects()
	func() {
		cpuReq := cpuRequest(t, m)

		core := newHeteroCore(t, "HardSigmoid")
		defer func() { assert.NoError(t, core.Close()) }()
		cm, err := core.CompileModel(context.Background(), m, heteroGPUCPU, nil)
		require.NoError(t, err)
		defer cm.Close()
		r, err := cm.CreateInferRequest()
		require.NoError(t, err)
		defer r.Close()
		hr := r.(*hetero.InferRequest)
		for round, n := range []int64{1, 3, 1} {
			xb := batchOf(t, x, n)
			require.NoError(t, cpuReq.SetTensor(name, xb))
			require.NoError(t, cpuReq.Infer(context.Background()))
			require.NoError(t, r.SetTensor(name, xb))
			require.NoError(t, r.Infer(context.Background()), "round %d, batch %d", round, n)
			var outBytes int64
			for _, o := range cm.Outputs() {
				want, err := cpuReq.Tensor(o.Name)
				require.NoError(t, err)
				got, err := r.Tensor(o.Name)
				require.NoError(t, err)
				assert.NoError(t, conformance.Compare(got, want, conformance.RealModelTolerance), "round %d, batch %d, output %q", round, n, o.Name)
				outBytes += got.ByteSize()
			}
			dt := hr.Transfers()

			// The same split compiled for this batch: its CPU subgraphs'
			// ports are what must cross the host, and it moves as much.
			ms := m.Clone()
			ms.Parameters[0].Outputs[0].Shape = graph.StaticShape(xb.Shape())
			sm, err := core.CompileModel(context.Background(), ms, heteroGPUCPU, nil)
			require.NoError(t, err)
			defer sm.Close()
			cpuIn, cpuOut := cpuBytes(t, sm)
			sr, err := sm.CreateInferRequest()
			require.NoError(t, err)
			defer sr.Close()
			require.NoError(t, sr.SetTensor(name, xb))
			require.NoError(t, sr.Infer(context.Background()))
			st := sr.(*hetero.InferRequest).Transfers()

			assert.Equal(t, xb.ByteSize()+cpuOut, dt.HostToDevice, "round %d, batch %d: host->device is the input and what the CPU subgraphs make", round, n)
			assert.Equal(t, outBytes+cpuIn, dt.DeviceToHost, "round %d, batch %d: device->host is the output and what the CPU subgraphs read", round, n)
			assert.Equal(t, st, dt, "round %d, batch %d: dynamic and static splits move the same bytes", round, n)
			assert.Equal(t, sr.(*hetero.InferRequest).HostLinks(), hr.HostLinks(), "round %d, batch %d", round, n)
			t.Logf("batch %d: %s (input %d, output %d bytes; CPU subgraphs read %d, make %d)", n, dt, xb.ByteSize(), outBytes, cpuIn, cpuOut)
		}
	}()
	// Released objects' cleanups run on their own goroutines.
	assert.Eventually(t, func() bool { return assert.ObjectsAreEqual(base, cl.LiveObjects()) }, settle, 10*time.Millisecond,
		"OpenCL objects left: %v (before: %v)", cl.LiveObjects(), base)
}

// blindGPU is the GPU device under another name whose compiled models
// answer OutputShapes truly once, then as a device that cannot tell its
// output shapes before running (every shape nil): HETERO must then move
// their links of dynamic shape through host memory.
type blindGPU struct{ *clbackend.Plugin }

const blindDevice = "BLINDGPU"

func init() {
	driver.Register(blindDevice, func() (driver.Plugin, error) {
		p, err := clbackend.New()
		if err != nil {
			return nil, err
		}
		return &blindGPU{Plugin: p}, nil
	})
}

// Name is the device's registered name.
func (p *blindGPU) Name() string { return blindDevice }

// CompileModel compiles on the GPU and wraps the model as blindModel.
func (p *blindGPU) CompileModel(ctx context.Context, m *graph.Model, props map[string]string) (driver.CompiledModel, error) {
	cm, err := p.Plugin.CompileModel(ctx, m, props)
	if err != nil {
		return nil, err
	}
	return &blindModel{CompiledModel: cm.(*clbackend.CompiledModel)}, nil
}

// blindModel is a GPU compiled model whose OutputShapes knows nothing
// after its first call.
type blindModel struct {
	*clbackend.CompiledModel
	calls atomic.Int32
}

// OutputShapes answers the GPU's shapes on the first call, then nil
// shapes.
func (m *blindModel) OutputShapes(shapes []tensor.Shape, values []*tensor.Tensor) ([]tensor.Shape, error) {
	if m.calls.Add(1) == 1 {
		return m.CompiledModel.OutputShapes(shapes, values)
	}
	return make([]tensor.Shape, len(m.Outputs())), nil
}

// linkModel is x f32[N,2] and s f32[2] -> y = Relu(x), si = Cast(Relu(s))
// to i64, sf = Cast(si) to f32 -> h = HardSigmoid(Neg(y) + sf) -> out =
// Reshape(Mul(y, h), si): the target shape si is computed on the device.
// With HardSigmoid on the CPU the split is GPU (y, si, sf, the Add) ->
// CPU (h) -> GPU (Mul, Reshape): the link y has a dynamic shape, and si
// is a value the last subgraph reads on the host (a Reshape's shape).
func linkModel(t *testing.T) *graph.Model {
	t.Helper()
	x := graph.NewParameter("x", tensor.F32, graph.PartialShape{Dims: []graph.Dim{graph.DynamicDim("N"), graph.StaticDim(2)}, RankKnown: true})
	s := graph.NewParameter("s", tensor.F32, graph.ShapeOf(2))
	node := func(op, name string, attrs graph.Attrs, in ...graph.Output) graph.Output {
		return graph.NewNode(op, name, in, attrs, 1).Out(0)
	}
	y := node("Relu", "y", nil, x.Out(0))
	si := node("Cast", "si", graph.Attrs{"to": int64(tensor.I64)}, node("Relu", "rs", nil, s.Out(0)))
	sf := node("Cast", "sf", graph.Attrs{"to": int64(tensor.F32)}, si)
	h := node("HardSigmoid", "h", nil, node("Add", "a", nil, node("Neg", "q", nil, y), sf))
	out := node("Reshape", "reshaped", nil, node("Mul", "m", nil, y, h), si)
	m := graph.NewModel("links", []*graph.Node{x, s}, []*graph.Node{graph.NewResult("out", out)})
	require.NoError(t, m.InferShapes())
	return m
}

// linkInputs returns linkModel's inputs for batch n: s reshapes [n,2]
// to [2,n].
func linkInputs(t *testing.T, n int64) map[string]*tensor.Tensor {
	t.Helper()
	xs := make([]float32, n*2)
	for i := range xs {
		xs[i] = float32(i%7) - 2.5
	}
	x, err := tensor.FromF32(tensor.Shape{n, 2}, xs)
	require.NoError(t, err)
	s, err := tensor.FromF32(tensor.Shape{2}, []float32{2, float32(n)})
	require.NoError(t, err)
	return map[string]*tensor.Tensor{"x": x, "s": s}
}

// TestHeteroHostLinks: links HETERO cannot keep on the device go through
// host memory and the results stay right. On the GPU, si (a value the
// consumer's plan reads on the host: the Reshape's shape, computed on the
// device) goes through the host, while y (dynamic shape) stays on the
// device; on a device that cannot tell its output shapes before running
// (BLINDGPU, after its first answer), y falls back to the host from the
// inference where that happens on.
func TestHeteroHostLinks(t *testing.T) {
	m := linkModel(t)
	cpuReq := cpuRequest(t, m)
	cases := []struct {
		device string
		// hostY reports, per inference, whether y goes through the host.
		hostY []bool
	}{
		{"GPU", []bool{false, false, false}},
		{blindDevice, []bool{false, true, true}},
	}
	for _, tc := range cases {
		t.Run(tc.device, func(t *testing.T) {
			core := driver.NewCore()
			defer func() { assert.NoError(t, core.Close()) }()
			name := "HETERO:" + tc.device + ",CPU"
			p, err := core.Plugin(name)
			require.NoError(t, err)
			require.NoError(t, p.(*hetero.Plugin).SetDeviceProperties(tc.device, map[string]string{clbackend.KeyDisabledOps: "HardSigmoid"}))
			cm, err := core.CompileModel(context.Background(), m, name, nil)
			require.NoError(t, err)
			defer cm.Close()
			devs, _ := cm.(*hetero.CompiledModel).Submodels()
			require.Equal(t, []string{tc.device, "CPU", tc.device}, devs)
			r, err := cm.CreateInferRequest()
			require.NoError(t, err)
			defer r.Close()
			hr := r.(*hetero.InferRequest)
			for i, n := range []int64{2, 4, 2} {
				for k, v := range linkInputs(t, n) {
					require.NoError(t, cpuReq.SetTensor(k, v))
					require.NoError(t, r.SetTensor(k, v))
				}
				require.NoError(t, cpuReq.Infer(context.Background()))
				require.NoError(t, r.Infer(context.Background()), "inference %d, batch %d", i, n)
				for _, o := range cm.Outputs() {
					want, err := cpuReq.Tensor(o.Name)
					require.NoError(t, err)
					got, err := r.Tensor(o.Name)
					require.NoError(t, err)
					assert.NoError(t, conformance.Compare(got, want, conformance.DefaultTolerance(want.Type())), "inference %d, output %q", i, o.Name)
				}
				// a feeds the CPU, h comes from it; si is read on the host.
				want := []string{"subgraph0/a/hetero", "subgraph0/si/hetero", "subgraph1/h/hetero"}
				if tc.hostY[i] {
					want = []string{"subgraph0/a/hetero", "subgraph0/si/hetero", "subgraph0/y/hetero", "subgraph1/h/hetero"}
				}
				host := hr.HostLinks()
				assert.Equal(t, want, host, "inference %d", i)
				t.Logf("inference %d, batch %d: %s; on the host: %v", i, n, hr.Transfers(), host)
			}
		})
	}
}

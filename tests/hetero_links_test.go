//go:build cgo && !noopencl

package tests

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
		cpuCore := driver.NewCore()
		defer cpuCore.Close()
		cpu, err := cpuCore.CompileModel(context.Background(), m, "CPU", nil)
		require.NoError(t, err)
		defer cpu.Close()
		cpuReq, err := cpu.CreateInferRequest()
		require.NoError(t, err)
		defer cpuReq.Close()

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
	assert.Eventually(t, func() bool { return assert.ObjectsAreEqual(base, cl.LiveObjects()) }, patience, 10*time.Millisecond,
		"OpenCL objects left: %v (before: %v)", cl.LiveObjects(), base)
}

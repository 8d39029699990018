//go:build cgo && !noopencl

package cl_test

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
)

// TestSharedBuffer: a kernel reads what the host wrote into a shared
// buffer's memory before the launch, and the host reads what the kernel
// wrote (through a sub-buffer) once the launch's event is complete, round
// after round, with no transfer or map command.
func TestSharedBuffer(t *testing.T) {
	e := newEnv(t, 0)
	if !e.dev.FineGrainBufferSVM() {
		t.Skip("the OpenCL device has no fine-grained buffer SVM (CL_DEVICE_SVM_FINE_GRAIN_BUFFER): POCL 3.x has it (apt-get install pocl-opencl-icd, via make deps)")
	}
	const n = 100
	alignBits, err := e.dev.MemBaseAddrAlign()
	require.NoError(t, err)
	off := max(alignBits/8, 4)
	in, err := e.ctx.CreateSharedBuffer(cl.MemReadWrite, n*4)
	require.NoError(t, err)
	closeLater(t, in)
	out, err := e.ctx.CreateSharedBuffer(cl.MemReadWrite, off+n*4)
	require.NoError(t, err)
	closeLater(t, out)
	assert.Nil(t, e.buffer(t, cl.MemReadWrite, 4).HostBytes(), "an ordinary buffer has no host memory")
	require.Len(t, in.HostBytes(), n*4)
	sub, err := out.CreateSubBuffer(0, off, n*4)
	require.NoError(t, err)
	closeLater(t, sub)

	k := e.kernel(t, e.program(t, vaddSource), "scale")
	require.NoError(t, k.SetArgs(in, sub, float32(3), int32(n)))
	host := unsafe.Slice((*float32)(unsafe.Pointer(&in.HostBytes()[0])), n)
	res := unsafe.Slice((*float32)(unsafe.Pointer(&out.HostBytes()[off])), n)
	for round := range 3 {
		for i := range host {
			host[i] = float32(i + round)
		}
		done := ev(t)(e.q.EnqueueNDRangeKernel(k, nil, []int{n}, nil, nil))
		require.NoError(t, done.Wait())
		for i, v := range res {
			require.InDelta(t, 3*float32(i+round), v, 1e-6, "round %d element %d", round, i)
		}
	}
}

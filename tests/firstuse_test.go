// The first use of OpenCL from GPU, HETERO, AUTO and BATCH at once needs a
// build with OpenCL.

//go:build cgo && !noopencl

package tests

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/devicetest"
)

// firstUseDevices are compiled on at once, from one Core and from Cores of
// their own: HETERO, AUTO and BATCH hold Cores of their own, whose GPU
// devices enumerate OpenCL beside the first Core's.
var firstUseDevices = []string{"GPU", heteroGPUCPU, "AUTO:GPU,CPU", "BATCH:GPU(2)", "CPU"}

// TestFirstUseAcrossDevices compiles and runs a model on every device at
// once, in fresh processes (devicetest.InFreshProcesses), so that each
// round is the process's first use of OpenCL: it crashed in
// clGetDeviceInfo while another goroutine was in clGetDeviceIDs.
func TestFirstUseAcrossDevices(t *testing.T) {
	devicetest.InFreshProcesses(t, devicetest.FirstUseRounds, func(t *testing.T) {
		shared := driver.NewCore()
		t.Cleanup(func() { assert.NoError(t, shared.Close()) })
		for _, own := range []bool{false, true} {
			for _, device := range firstUseDevices {
				t.Run(fmt.Sprintf("%s/own=%v", device, own), func(t *testing.T) {
					t.Parallel()
					core := shared
					if own {
						core = driver.NewCore()
						t.Cleanup(func() { assert.NoError(t, core.Close()) })
					}
					cm, err := core.CompileModel(context.Background(), devicetest.ReluModel(), device, nil)
					require.NoError(t, err, "compiling on %s", device)
					t.Cleanup(func() { assert.NoError(t, cm.Close()) })
					r, err := cm.CreateInferRequest()
					require.NoError(t, err)
					t.Cleanup(func() { assert.NoError(t, r.Close()) })
					x, err := tensor.FromF32(tensor.Shape{1, 4}, []float32{-1, 2, -3, 4})
					require.NoError(t, err)
					require.NoError(t, r.SetTensor(devicetest.InputName, x))
					require.NoError(t, r.Infer(context.Background()))
					y, err := r.Tensor(devicetest.OutputName)
					require.NoError(t, err)
					assert.Equal(t, []float32{0, 2, 0, 4}, y.Contiguous().F32())
				})
			}
		}
	})
}

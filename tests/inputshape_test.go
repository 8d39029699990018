// The input-shape messages of GPU, HETERO and AUTO need a build with
// OpenCL.

//go:build cgo && !noopencl

package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/devicetest"
)

// TestInputShapeMessages: an input that fits the model's port but not the
// model (devicetest.ConvModel takes sizes from 8 up) is reported as the
// input's fault — which input, which dimension, what fits — in the same
// words on every device, never as an invalid model deep inside it.
func TestInputShapeMessages(t *testing.T) {
	core := driver.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	const want = `input "x" of shape [1,1,4,9] does not fit the model (declared as [1,1,?,?]): dimension 2 is 4: too small, the smallest size that fits there is 8`
	for _, device := range []string{"CPU", "GPU", heteroGPUCPU, "AUTO:GPU,CPU"} {
		t.Run(device, func(t *testing.T) {
			cm, err := core.CompileModel(context.Background(), devicetest.ConvModel(), device, nil)
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, cm.Close()) })
			r, err := cm.CreateInferRequest()
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, r.Close()) })
			require.NoError(t, r.SetTensor(devicetest.InputName, tensor.MustNew(tensor.F32, tensor.Shape{1, 1, 4, 9})), "the shape fits the port")
			err = r.Infer(context.Background())
			require.Error(t, err)
			assert.ErrorIs(t, err, driver.ErrInvalidArgument)
			assert.Contains(t, err.Error(), want)
			assert.NotContains(t, strings.ToLower(err.Error()), "invalid model")

			require.NoError(t, r.SetTensor(devicetest.InputName, tensor.MustNew(tensor.F32, tensor.Shape{1, 1, 8, 9})))
			require.NoError(t, r.Infer(context.Background()), "the smallest size the message names fits")
		})
	}
}

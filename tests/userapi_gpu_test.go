// The GPU device exists only in builds with OpenCL.

//go:build cgo && !noopencl

package tests

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/tests/conformance"
)

// TestUnsetDynamicInputRealModels: on the PP-OCR models (dynamic input
// "x"), Infer with the input never bound fails naming it on every device.
// The GPU used to run det on a made-up f32[1,3,1,1] (returning nil and an
// f32[1,1,32,32] output) and to fail cls with a planning error.
func TestUnsetDynamicInputRealModels(t *testing.T) {
	models := []string{"ch_PP-OCRv4_det_infer.onnx", "ch_ppocr_mobile_v2.0_cls_infer.onnx"}
	core := clinfer.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	for _, name := range models {
		path, err := conformance.ModelPath(name)
		require.NoError(t, err)
		model, err := core.ReadModel(path)
		require.NoError(t, err)
		require.Len(t, model.Inputs(), 1)
		in := model.Inputs()[0]
		require.Equal(t, "x", in.Name)
		require.False(t, in.Shape.IsStatic(), "%s: input %s should be dynamic", name, in.Shape)
		for _, device := range []string{"CPU", "GPU", "HETERO:GPU,CPU"} {
			t.Run(name+"/"+device, func(t *testing.T) {
				cm, err := core.CompileModel(context.Background(), model, device, nil)
				require.NoError(t, err)
				t.Cleanup(func() { assert.NoError(t, cm.Close()) })
				r, err := cm.CreateInferRequest()
				require.NoError(t, err)
				t.Cleanup(func() { assert.NoError(t, r.Close()) })
				err = r.Infer(context.Background())
				require.Error(t, err, "Infer with input x never bound")
				assert.ErrorIs(t, err, clinfer.ErrInvalidArgument)
				assert.Contains(t, err.Error(), `input "x" has no tensor`)
				assert.Contains(t, err.Error(), "SetTensor")
				assert.NotContains(t, err.Error(), "plan")
				_, err = r.Tensor("x")
				assert.ErrorIs(t, err, clinfer.ErrNotFound)
				_, err = cm.Infer(context.Background(), nil)
				assert.ErrorIs(t, err, clinfer.ErrInvalidArgument, "CompiledModel.Infer without x")
			})
		}
	}
}

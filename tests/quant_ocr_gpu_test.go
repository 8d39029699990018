// The GPU device exists only in builds with OpenCL.

//go:build cgo && !noopencl

package tests

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/clinfer/clinfer/clbackend" // registers the "GPU" device
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/textpage"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/quantize"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// runFirstOutput compiles m on the GPU and returns its first output for
// input x and the runtime model's integer convolutions and products
// (RUNTIME_PRECISION u8/i8) and float ones (with why, fusion's
// QUANTIZATION note).
func runFirstOutput(t *testing.T, core *driver.Core, m *graph.Model, x *tensor.Tensor) (y []float32, ints int, floats map[string]string) {
	t.Helper()
	cm, err := core.CompileModel(context.Background(), m, "GPU", nil)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	require.NoError(t, r.SetTensor(cm.Inputs()[0].Name, x))
	require.NoError(t, r.Infer(context.Background()))
	out, err := r.Tensor(cm.Outputs()[0].Name)
	require.NoError(t, err)
	rm, err := cm.RuntimeModel()
	require.NoError(t, err)
	nodes, err := rm.Nodes()
	require.NoError(t, err)
	floats = map[string]string{}
	for _, n := range nodes {
		switch p := n.RT.Extra[driver.RuntimePrecision]; {
		case graph.IntegerPrecision(n) != tensor.Undefined && (p == "u8" || p == "i8"):
			ints++
		case n.OpType == "Conv" || n.OpType == graph.OpFusedConv || n.OpType == "MatMul" || n.OpType == graph.OpFullyConnected:
			floats[n.Name] = n.RT.Extra[fusion.KeyQuantization]
		}
	}
	return append([]float32(nil), out.Contiguous().F32()...), ints, floats
}

// TestQuantizedOCRGPU quantizes PP-OCR det and cls with the post-training
// quantizer (calibrated on the CPU over synthetic text pages and lines),
// writes them as ONNX and reads them back, and runs them on the GPU:
// every convolution of det and cls runs as an int8 kernel but those the
// quantizer or the fusion say why not, and the outputs agree with the
// float models' (det: IoU of the maps binarized at 0.3 on another page;
// cls: the same class on upright and upside-down lines).
func TestQuantizedOCRGPU(t *testing.T) {
	core := driver.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	t.Run("det", func(t *testing.T) {
		path, err := conformance.ModelPath("ch_PP-OCRv4_det_infer.onnx")
		require.NoError(t, err, "run `make models`")
		m, err := onnx.ReadFile(path)
		require.NoError(t, err)
		const size = 256
		var samples []map[string]*tensor.Tensor
		for i := range 3 {
			samples = append(samples, map[string]*tensor.Tensor{"x": textpage.Page(uint32(100+i), size, size).Normalised(textpage.DetMean, textpage.DetStd)})
		}
		q, rep, err := quantize.Model(context.Background(), m, samples, quantize.Options{})
		require.NoError(t, err)
		assert.Empty(t, rep.Float, "det: every Conv quantized")
		blob, err := onnx.Marshal(q)
		require.NoError(t, err)
		back, err := onnx.Read(blob)
		require.NoError(t, err)
		x := textpage.Page(7, size, size).Normalised(textpage.DetMean, textpage.DetStd)
		want, _, _ := runFirstOutput(t, core, m, x)
		got, ints, floats := runFirstOutput(t, core, back, x)
		assert.Empty(t, floats, "det: convolutions left in float on the GPU (why)")
		assert.GreaterOrEqual(t, ints, len(rep.Quantized)-2, "det: int8 kernels (ConvTranspose stays float)")
		inter, union, above := 0, 0, 0
		for i := range want {
			a, b := want[i] > 0.3, got[i] > 0.3
			if a {
				above++
			}
			if a && b {
				inter++
			}
			if a || b {
				union++
			}
		}
		require.Greater(t, above, len(want)/50, "the float map finds text on the page")
		iou := float64(inter) / float64(union)
		t.Logf("det %dx%d int8 on the GPU: %d int8 nodes, IoU %.4f of the maps binarized at 0.3 (%d pixels above in f32)", size, size, ints, iou, above)
		assert.Greater(t, iou, 0.85)
	})
	t.Run("cls", func(t *testing.T) {
		path, err := conformance.ModelPath("ch_ppocr_mobile_v2.0_cls_infer.onnx")
		require.NoError(t, err, "run `make models`")
		m, err := onnx.ReadFile(path)
		require.NoError(t, err)
		var samples []map[string]*tensor.Tensor
		for i := range 8 {
			samples = append(samples, map[string]*tensor.Tensor{"x": textpage.Line(uint32(200+i), 48, 192, i%2 == 1).Normalised(textpage.ClsMean, textpage.ClsStd)})
		}
		q, rep, err := quantize.Model(context.Background(), m, samples, quantize.Options{})
		require.NoError(t, err)
		blob, err := onnx.Marshal(q)
		require.NoError(t, err)
		back, err := onnx.Read(blob)
		require.NoError(t, err)
		agree, maxDiff := 0, 0.0
		const lines = 6
		for i := range lines {
			x := textpage.Line(uint32(300+i), 48, 192, i%2 == 1).Normalised(textpage.ClsMean, textpage.ClsStd)
			want, _, _ := runFirstOutput(t, core, m, x)
			got, ints, floats := runFirstOutput(t, core, back, x)
			assert.Empty(t, floats, "cls: products left in float on the GPU (why)")
			assert.Equal(t, len(rep.Quantized), ints, "cls: every quantized node runs in int8")
			if (want[0] > want[1]) == (got[0] > got[1]) {
				agree++
			}
			for j := range want {
				maxDiff = math.Max(maxDiff, math.Abs(float64(want[j]-got[j])))
			}
		}
		// The synthetic script is not Chinese text: cls's confidence on
		// it is low, so the class, not the probability, is compared.
		t.Logf("cls int8 on the GPU: %d of %d lines classified as in f32 (probabilities within %.3f)", agree, lines, maxDiff)
		assert.Equal(t, lines, agree)
	})
}

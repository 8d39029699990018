package tests

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/internal/npy"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// isnetSize is IS-Net small's input size (static in the model).
const isnetSize = 1024

// isnetScenePixel is the synthetic scene of scripts/ortref/isnet_ref.js
// (bit-identical integer arithmetic): a shaded background and a striped
// figure (an ellipse body, a round head); channel c at (y, x), 0..255.
func isnetScenePixel(c, y, x int64) int64 {
	body := (x-512)*(x-512)*330*330+(y-600)*(y-600)*230*230 <= 230*230*330*330
	head := (x-512)*(x-512)+(y-230)*(y-230) <= 130*130
	if body || head {
		return [3]int64{190 + (y/16)%2*40, 120 + (x/32)%2*30, 80}[c]
	}
	return [3]int64{40 + x*80/1024, 90 + y*60/1024, 160 + (x+y)*40/2048}[c]
}

// isnetScene is the scene normalised as @imgly/background-removal does,
// (pixel - 128) / 256, as IS-Net's f32 [1, 3, 1024, 1024] input.
func isnetScene() *tensor.Tensor {
	v := make([]float32, 3*isnetSize*isnetSize)
	for c := int64(0); c < 3; c++ {
		for y := int64(0); y < isnetSize; y++ {
			for x := int64(0); x < isnetSize; x++ {
				v[(c*isnetSize+y)*isnetSize+x] = float32(isnetScenePixel(c, y, x)-128) / 256
			}
		}
	}
	t, _ := tensor.FromF32(tensor.Shape{1, 3, isnetSize, isnetSize}, v)
	return t
}

// isnetRef is ONNX Runtime's mask of the scene (tests/testdata/
// isnet_small_u8, written by scripts/ortref/isnet_ref.js) as round(mask *
// 255), and the name of the output it is.
func isnetRef(t *testing.T) (*tensor.Tensor, string) {
	t.Helper()
	root, err := conformance.RepoRoot()
	require.NoError(t, err)
	dir := filepath.Join(root, "tests", "testdata", "isnet_small_u8")
	b, err := os.ReadFile(filepath.Join(dir, "case.json"))
	require.NoError(t, err)
	var c struct {
		Output string `json:"output"`
	}
	require.NoError(t, json.Unmarshal(b, &c))
	f, err := os.Open(filepath.Join(dir, "mask_u8.npy.gz"))
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	m, err := npy.Read(zr)
	require.NoError(t, err)
	return m, c.Output
}

// maskAgreement compares a mask with the reference (u8, mask*255): the
// largest and mean absolute difference, and the fraction of pixels on
// opposite sides of 0.5.
func maskAgreement(got []float32, ref []uint8) (maxErr, meanErr, flipped float64) {
	sum, flips := 0.0, 0
	for i, g := range got {
		r := float64(ref[i]) / 255
		d := math.Abs(float64(g) - r)
		maxErr = math.Max(maxErr, d)
		sum += d
		if (float64(g) > 0.5) != (r > 0.5) {
			flips++
		}
	}
	return maxErr, sum / float64(len(got)), float64(flips) / float64(len(got))
}

// isnetTolerance bounds the mask's disagreement with ONNX Runtime's: every
// op but the final Sigmoid computes ONNX Runtime's bits (the integer path
// exactly, Resize in its arithmetic), so what remains is the Sigmoid's
// last bits (1.8e-7 on the GPU) and the reference's own rounding to 1/255
// (up to 1/510), which keeps every pixel on its side of 0.5.
var isnetTolerance = struct{ max, mean, flipped float64 }{max: 0.0025, mean: 0.0013, flipped: 1e-5}

// runIsNet runs IS-Net small on device with the scene and checks its mask
// against ONNX Runtime's within isnetTolerance; it returns the compiled
// model.
func runIsNet(t *testing.T, core *driver.Core, device string) driver.CompiledModel {
	t.Helper()
	path, err := conformance.ModelPath("isnet_small_u8.onnx")
	conformance.SkipOmitted(t, err)
	require.NoError(t, err, "run `make models`")
	m, err := onnx.ReadFile(path)
	require.NoError(t, err)
	ref, out := isnetRef(t)
	cm, err := core.CompileModel(context.Background(), m, device, nil)
	require.NoError(t, err, "compile IS-Net on %s", device)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	require.NoError(t, r.SetTensor(cm.Inputs()[0].Name, isnetScene()))
	start := time.Now()
	require.NoError(t, r.Infer(context.Background()), device)
	took := time.Since(start)
	y, err := r.Tensor(out)
	require.NoError(t, err)
	require.Equal(t, ref.Shape(), y.Shape())
	maxErr, meanErr, flipped := maskAgreement(y.Contiguous().F32(), ref.U8())
	t.Logf("IS-Net small on %s (%v): mask vs ONNX Runtime: max |diff| %.4f, mean %.5f, %.4f%% of pixels on the other side of 0.5",
		device, took.Round(time.Millisecond), maxErr, meanErr, 100*flipped)
	assert.LessOrEqual(t, maxErr, isnetTolerance.max)
	assert.LessOrEqual(t, meanErr, isnetTolerance.mean)
	assert.LessOrEqual(t, flipped, isnetTolerance.flipped)
	return cm
}

// TestIsNetCPU runs IS-Net small (imgly's uint8 model: DynamicQuantizeLinear
// and ConvInteger) on the CPU device against ONNX Runtime's mask.
func TestIsNetCPU(t *testing.T) {
	core := driver.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	runIsNet(t, core, "CPU")
}

// The GPU device exists only in builds with OpenCL; built without it
// (CGO_ENABLED=0 or -tags noopencl) the GPU plugin's constructor error is
// tested in clbackend instead.

//go:build cgo && !noopencl

package tests

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/page"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/preprocess"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// preprocessedDet is PP-OCR det at 1x3x96x128 taking u8 RGB NHWC images
// of any size: swap to BGR, convert, resize, normalise.
func preprocessedDet(t *testing.T, core *plugin.Core) *graph.Model {
	path, err := conformance.ModelPath("ch_PP-OCRv4_det_infer.onnx")
	require.NoError(t, err)
	m, err := core.ReadModel(path)
	require.NoError(t, err)
	require.NoError(t, m.Reshape(map[string]graph.PartialShape{"x": graph.ShapeOf(1, 3, 96, 128)}))
	ppp := preprocess.New(m)
	in := ppp.Input("x")
	in.Tensor().SetElementType(tensor.U8).SetLayout("NHWC").SetColorFormat(preprocess.RGB).SetSpatialDynamicShape()
	in.Preprocess().ConvertColor(preprocess.BGR).ConvertElementType(tensor.F32).Resize(preprocess.ResizeLinear).
		Mean(0.485*255, 0.456*255, 0.406*255).Scale(0.229*255, 0.224*255, 0.225*255)
	in.Model().SetLayout("NCHW")
	out, err := ppp.Build()
	require.NoError(t, err)
	return out
}

// TestPreprocessingOnGPU compiles a model with preprocessing for the GPU:
// it agrees with the CPU, the steps run as GPU kernels with the
// normalisation's scale folded into the first convolution, and export,
// import and the model cache keep them.
func TestPreprocessingOnGPU(t *testing.T) {
	ctx := context.Background()
	core := plugin.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	m := preprocessedDet(t, core)
	img, err := tensor.FromImage(page.Render(256, 192))
	require.NoError(t, err)
	in := map[string]*tensor.Tensor{"x": img}
	run := func(cm *plugin.CompiledModel) *tensor.Tensor {
		out, err := cm.Infer(ctx, in)
		require.NoError(t, err)
		return out["sigmoid_0.tmp_0"]
	}
	cpu, err := core.CompileModel(ctx, m, "CPU", nil)
	require.NoError(t, err)
	defer cpu.Close()
	want := run(cpu)
	gpu, err := core.CompileModel(ctx, m, "GPU", nil)
	require.NoError(t, err)
	defer gpu.Close()
	got := run(gpu)
	require.NoError(t, conformance.Compare(got, want, conformance.Tolerance{Abs: 1e-4, Rel: 1e-3}))

	impls := runtimeImpls(t, gpu)
	for _, step := range []string{"x/preprocess/layout", "x/preprocess/convert_color", "x/preprocess/convert_element_type", "x/preprocess/resize", "x/preprocess/mean"} {
		assert.NotEmpty(t, impls[step], "step %s has no GPU kernel in the runtime model", step)
	}
	assert.Contains(t, impls["x/preprocess/scale"], "conv", "the scale is folded into the first convolution")

	var blob bytes.Buffer
	require.NoError(t, gpu.Export(&blob))
	imported, err := core.ImportModel(ctx, &blob, "GPU", nil)
	require.NoError(t, err)
	defer imported.Close()
	require.NoError(t, conformance.Compare(run(imported), got, conformance.Tolerance{}))

	props := map[string]string{plugin.KeyCacheDir: t.TempDir()}
	for i, want := range []string{"NO", "YES"} {
		cm, err := core.CompileModel(ctx, m, "GPU", props)
		require.NoError(t, err)
		v, err := cm.Property(plugin.KeyLoadedFromCache)
		require.NoError(t, err)
		assert.Equal(t, want, v, "compile %d", i)
		require.NoError(t, conformance.Compare(run(cm), got, conformance.Tolerance{}))
		require.NoError(t, cm.Close())
	}
}

// TestPreprocessingNV12OnGPU: NV12 frames in two planes, of another size
// in each request, become a model's normalised BGR input on the GPU
// (NV12toBGR and a cubic Resize as GPU kernels), as on the CPU.
func TestPreprocessingNV12OnGPU(t *testing.T) {
	ctx := context.Background()
	core := plugin.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1, 3, 8, 12))
	relu := graph.NewNode("Relu", "relu", []graph.Output{x.Out(0)}, nil, 1)
	m := graph.NewModel("m", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", relu.Out(0))})
	require.NoError(t, m.InferShapes())
	ppp := preprocess.New(m)
	in := ppp.Input("x")
	in.Tensor().SetElementType(tensor.U8).SetLayout("NHWC").SetColorFormat(preprocess.NV12TwoPlanes).SetSpatialDynamicShape()
	in.Preprocess().ConvertColor(preprocess.BGR).Resize(preprocess.ResizeCubic).Mean(60, 120, 180).Scale(50)
	in.Model().SetLayout("NCHW")
	pm, err := ppp.Build()
	require.NoError(t, err)
	cpu, err := core.CompileModel(ctx, pm, "CPU", nil)
	require.NoError(t, err)
	defer cpu.Close()
	gpu, err := core.CompileModel(ctx, pm, "GPU", nil)
	require.NoError(t, err)
	defer gpu.Close()
	r := seeded.New(12)
	plane := func(shape ...int64) *tensor.Tensor {
		v := make([]uint8, tensor.Shape(shape).NumElements())
		for i := range v {
			v[i] = uint8(r.Uint32())
		}
		p, err := tensor.FromU8(shape, v)
		require.NoError(t, err)
		return p
	}
	for _, hw := range [][2]int64{{16, 24}, {6, 10}} {
		h, w := hw[0], hw[1]
		feeds := map[string]*tensor.Tensor{"x/y": plane(1, h, w, 1), "x/uv": plane(1, h/2, w/2, 2)}
		want, err := cpu.Infer(ctx, feeds)
		require.NoError(t, err)
		got, err := gpu.Infer(ctx, feeds)
		require.NoError(t, err, "%dx%d", h, w)
		require.Equal(t, tensor.Shape{1, 3, 8, 12}, got["y"].Shape())
		require.NoError(t, conformance.Compare(got["y"], want["y"], conformance.Tolerance{Abs: 1e-4, Rel: 1e-3}), "%dx%d", h, w)
	}
	impls := runtimeImpls(t, gpu)
	assert.Contains(t, impls["x/preprocess/convert_color"], "nv12", "NV12toBGR runs as the GPU's NV12 kernel")
	assert.NotEmpty(t, impls["x/preprocess/resize"], "the resize has no GPU kernel in the runtime model")
}

// runtimeImpls maps each original node of a compiled model to the
// implementation that runs it (the runtime model's IMPL_TYPE).
func runtimeImpls(t *testing.T, cm *plugin.CompiledModel) map[string]string {
	rt, err := cm.RuntimeModel()
	require.NoError(t, err)
	nodes, err := rt.Nodes()
	require.NoError(t, err)
	impls := map[string]string{}
	for _, n := range nodes {
		for _, name := range strings.Split(n.RT.Extra[plugin.RuntimeOriginalNames], ",") {
			impls[name] = n.RT.Extra[plugin.RuntimeImplType]
		}
	}
	return impls
}

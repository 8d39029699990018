package preprocess_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/internal/sentinel"
	"github.com/clinfer/clinfer/preprocess"
	"github.com/clinfer/clinfer/tensor"
)

// model is x: f32 [1,3,h,w] -> Identity -> y.
func model(h, w int64) *graph.Model {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1, 3, h, w))
	n := graph.NewNode("Identity", "id", []graph.Output{x.Out(0)}, nil, 1)
	m := graph.NewModel("m", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", n.Out(0))})
	if err := m.InferShapes(); err != nil {
		panic(err)
	}
	return m
}

func run(t *testing.T, m *graph.Model, in ...*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	p, err := ref.Compile(m)
	require.NoError(t, err)
	out, err := p.Run(in)
	require.NoError(t, err)
	return out
}

// bgrImage is a u8 [1,h,w,3] BGR image with a deterministic pattern.
func bgrImage(h, w int64) *tensor.Tensor {
	v := make([]uint8, h*w*3)
	for i := range v {
		v[i] = uint8((i*37 + i/3*11) % 256)
	}
	x, _ := tensor.FromU8(tensor.Shape{1, h, w, 3}, v)
	return x
}

// linear is cv2.resize's bilinear weight pair for output coordinate o of
// an axis scaled from in to out (half-pixel centres, clamped).
func linear(o, in, out int64) (i0, i1 int64, w1 float64) {
	x := (float64(o)+0.5)*float64(in)/float64(out) - 0.5
	if x < 0 {
		x = 0
	}
	i0 = int64(math.Floor(x))
	if i0 > in-1 {
		i0 = in - 1
	}
	i1 = min(i0+1, in-1)
	return i0, i1, x - float64(i0)
}

// TestImagePreprocessing: u8 BGR NHWC images of any size become the
// model's normalised RGB NCHW f32 input.
func TestImagePreprocessing(t *testing.T) {
	mean := []float32{123.675, 116.28, 103.53}
	std := []float32{58.395, 57.12, 57.375}
	ppp := preprocess.New(model(4, 6))
	in := ppp.Input("x")
	in.Tensor().SetElementType(tensor.U8).SetLayout("NHWC").SetColorFormat(preprocess.BGR).SetSpatialDynamicShape()
	in.Preprocess().ConvertElementType(tensor.F32).ConvertColor(preprocess.RGB).Resize(preprocess.ResizeLinear).Mean(mean...).Scale(std...)
	in.Model().SetLayout("NCHW")
	m, err := ppp.Build()
	require.NoError(t, err)
	assert.Equal(t, "[1,?,?,3]", m.Inputs()[0].Shape.String())
	assert.Equal(t, tensor.U8, m.Inputs()[0].Type)
	for _, size := range [][2]int64{{8, 12}, {5, 7}, {4, 6}} {
		img := bgrImage(size[0], size[1])
		got := run(t, m, img)[0]
		require.Equal(t, tensor.Shape{1, 3, 4, 6}, got.Shape())
		px := img.U8()
		at := func(r, c, ch int64) float64 { return float64(px[(r*size[1]+c)*3+ch]) }
		g := got.F32()
		for c := int64(0); c < 3; c++ {
			for r := int64(0); r < 4; r++ {
				r0, r1, wr := linear(r, size[0], 4)
				for q := int64(0); q < 6; q++ {
					c0, c1, wc := linear(q, size[1], 6)
					src := 2 - c // RGB from BGR
					v := (1-wr)*((1-wc)*at(r0, c0, src)+wc*at(r0, c1, src)) + wr*((1-wc)*at(r1, c0, src)+wc*at(r1, c1, src))
					want := (v - float64(mean[c])) / float64(std[c])
					assert.InDelta(t, want, g[(c*4+r)*6+q], 1e-4, "size %v channel %d (%d,%d)", size, c, r, q)
				}
			}
		}
	}
}

// TestNV12 converts two NV12 planes to the model's RGB input.
func TestNV12(t *testing.T) {
	ppp := preprocess.New(model(2, 4))
	in := ppp.Input("x")
	in.Tensor().SetElementType(tensor.U8).SetLayout("NHWC").SetColorFormat(preprocess.NV12TwoPlanes)
	in.Preprocess().ConvertColor(preprocess.RGB)
	in.Model().SetLayout("NCHW")
	m, err := ppp.Build()
	require.NoError(t, err)
	require.Len(t, m.Parameters, 2)
	assert.Equal(t, "x/y", m.Parameters[0].Name)
	assert.Equal(t, "[1,2,4,1]", m.Parameters[0].Outputs[0].Shape.String())
	assert.Equal(t, "[1,1,2,2]", m.Parameters[1].Outputs[0].Shape.String())
	y, _ := tensor.FromU8(tensor.Shape{1, 2, 4, 1}, []uint8{16, 100, 200, 235, 50, 60, 70, 80})
	uv, _ := tensor.FromU8(tensor.Shape{1, 1, 2, 2}, []uint8{128, 128, 90, 200})
	got := run(t, m, y, uv)[0].F32()
	yv, uvv := y.U8(), uv.U8()
	for r := 0; r < 2; r++ {
		for c := 0; c < 4; c++ {
			yy := 1.164 * (float64(yv[r*4+c]) - 16)
			u, v := float64(uvv[c/2*2])-128, float64(uvv[c/2*2+1])-128
			rgb := []float64{yy + 1.596*v, yy - 0.813*v - 0.391*u, yy + 2.018*u}
			for ch, x := range rgb {
				want := math.RoundToEven(math.Min(math.Max(x, 0), 255))
				assert.InDelta(t, want, got[(ch*2+r)*4+c], 0, "(%d,%d) channel %d", r, c, ch)
			}
		}
	}
}

func TestPostprocessing(t *testing.T) {
	ppp := preprocess.New(model(2, 3))
	ppp.OutputAt(0).Model().SetLayout("NCHW")
	ppp.Output("y").Tensor().SetElementType(tensor.F16).SetLayout("NHWC")
	m, err := ppp.Build()
	require.NoError(t, err)
	x := tensor.MustNew(tensor.F32, tensor.Shape{1, 3, 2, 3})
	for i := range x.F32() {
		x.F32()[i] = float32(i)
	}
	got := run(t, m, x)[0]
	assert.Equal(t, tensor.F16, got.Type())
	require.Equal(t, tensor.Shape{1, 2, 3, 3}, got.Shape())
	v := got.Float64s()
	assert.Equal(t, float64(6), v[1], "pixel (0,0) channel 1 is element 6 of the NCHW output")
}

func TestCustomAndReverse(t *testing.T) {
	ppp := preprocess.New(model(1, 2))
	ppp.Input("x").Preprocess().ReverseChannels().Custom(func(x graph.Output) (graph.Output, error) {
		n := graph.NewNode("Neg", "negate", []graph.Output{x}, nil, 1)
		return n.Out(0), graph.InferNode(n)
	})
	ppp.Input("x").Model().SetLayout("NCHW")
	m, err := ppp.Build()
	require.NoError(t, err)
	x, _ := tensor.FromF32(tensor.Shape{1, 3, 1, 2}, []float32{1, 2, 3, 4, 5, 6})
	got := run(t, m, x)[0].F32()
	assert.Equal(t, []float32{-5, -6, -3, -4, -1, -2}, got)
}

func TestBuildErrors(t *testing.T) {
	cases := []struct {
		name   string
		config func(p *preprocess.PrePostProcessor)
		want   string
	}{
		{"unknown input", func(p *preprocess.PrePostProcessor) { p.Input("z").Tensor().SetElementType(tensor.U8) }, `no input "z"`},
		{"unknown output", func(p *preprocess.PrePostProcessor) { p.Output("q").Tensor().SetElementType(tensor.F16) }, `no output "q"`},
		{"output index", func(p *preprocess.PrePostProcessor) { p.OutputAt(3).Tensor().SetElementType(tensor.F16) }, `no output 3 (outputs: ["y"])`},
		{"input index", func(p *preprocess.PrePostProcessor) { p.InputAt(2).Tensor().SetElementType(tensor.U8) }, `no input 2 (inputs: ["x"])`},
		{"bad layout", func(p *preprocess.PrePostProcessor) { p.Input("x").Tensor().SetLayout("NHHW") }, "names axis H twice"},
		{"mean per channel without a layout", func(p *preprocess.PrePostProcessor) { p.Input("x").Preprocess().Mean(1, 2, 3) }, "needs axis C"},
		{"mean of the wrong count", func(p *preprocess.PrePostProcessor) {
			p.Input("x").Model().SetLayout("NCHW")
			p.Input("x").Preprocess().Mean(1, 2)
		}, "2 values for 3 channels"},
		{"nv12 without a conversion", func(p *preprocess.PrePostProcessor) {
			p.Input("x").Tensor().SetColorFormat(preprocess.NV12TwoPlanes).SetLayout("NHWC")
			p.Input("x").Model().SetLayout("NCHW")
		}, "needs a ConvertColor step"},
		{"gray to rgb", func(p *preprocess.PrePostProcessor) {
			p.Input("x").Tensor().SetColorFormat(preprocess.GRAY).SetLayout("NHWC")
			p.Input("x").Model().SetLayout("NCHW")
			p.Input("x").Preprocess().ConvertColor(preprocess.RGB)
		}, "from GRAY to RGB"},
		{"scale by zero", func(p *preprocess.PrePostProcessor) { p.Input("x").Preprocess().Scale(0) }, "Scale by 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := preprocess.New(model(2, 3))
			c.config(p)
			_, err := p.Build()
			require.Error(t, err)
			assert.True(t, errors.Is(err, sentinel.ErrInvalidArgument), "%v", err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	// A resize to the model's size needs the model's size.
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1, 3, -1, -1))
	n := graph.NewNode("Relu", "r", []graph.Output{x.Out(0)}, nil, 1)
	dyn := graph.NewModel("m", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", n.Out(0))})
	require.NoError(t, dyn.InferShapes())
	p := preprocess.New(dyn)
	p.Input("x").Model().SetLayout("NCHW")
	p.Input("x").Preprocess().Resize(preprocess.ResizeLinear)
	_, err := p.Build()
	assert.ErrorContains(t, err, "needs static height and width")
	p = preprocess.New(dyn)
	p.Input("x").Model().SetLayout("NCHW")
	p.Input("x").Preprocess().ResizeTo(preprocess.ResizeNearest, 2, 2)
	m, err := p.Build()
	require.NoError(t, err)
	got := run(t, m, tensor.MustNew(tensor.F32, tensor.Shape{1, 3, 4, 4}))[0]
	assert.Equal(t, tensor.Shape{1, 3, 2, 2}, got.Shape())
}

func TestLayoutParsing(t *testing.T) {
	for _, s := range []string{"NCHW", "[N,C,H,W]", "N?HW", "[batch,C,H,W]"} {
		l, err := preprocess.ParseLayout(s)
		require.NoError(t, err, s)
		assert.Equal(t, 4, l.Rank())
	}
	assert.Equal(t, 1, preprocess.MustLayout("[N,C,H,W]").Index("C"))
	assert.Equal(t, "NCHW", preprocess.MustLayout("[N,C,H,W]").String())
	for _, s := range []string{"", "N..", "[N,,C]", "NN"} {
		_, err := preprocess.ParseLayout(s)
		assert.Error(t, err, s)
	}
}

// resample is OpenVINO's Interpolate-11 with the attributes its
// PrePostProcessor gives it, on one [h, w] plane, worked out here: the
// output pixel (r, c) samples the input at half-pixel centres; nearest
// rounds that coordinate with halves down, cubic weighs the 4x4
// neighbours with a = -0.75; neighbours past the border are the border.
func resample(src []float64, h, w, oh, ow int, alg preprocess.ResizeAlgorithm) []float64 {
	coord := func(o, in, out int) float64 { return (float64(o)+0.5)*float64(in)/float64(out) - 0.5 }
	clamp := func(i, n int) int { return max(0, min(i, n-1)) }
	round := func(x float64) int {
		if x-math.Floor(x) == 0.5 {
			return int(math.Floor(x))
		}
		return int(math.Round(x))
	}
	const a = -0.75
	cubic := func(d float64) float64 {
		d = math.Abs(d)
		if d <= 1 {
			return ((a+2)*d-(a+3))*d*d + 1
		}
		return ((a*d-5*a)*d+8*a)*d - 4*a
	}
	out := make([]float64, oh*ow)
	for r := 0; r < oh; r++ {
		y := coord(r, h, oh)
		for c := 0; c < ow; c++ {
			x := coord(c, w, ow)
			if alg == preprocess.ResizeNearest {
				out[r*ow+c] = src[clamp(round(y), h)*w+clamp(round(x), w)]
				continue
			}
			y0, x0 := math.Floor(y), math.Floor(x)
			v := 0.0
			for i := -1; i <= 2; i++ {
				for j := -1; j <= 2; j++ {
					v += cubic(y-y0-float64(i)) * cubic(x-x0-float64(j)) * src[clamp(int(y0)+i, h)*w+clamp(int(x0)+j, w)]
				}
			}
			out[r*ow+c] = v
		}
	}
	return out
}

// TestResizeAlgorithms: nearest and cubic, down and up, compute what
// OpenVINO's PrePostProcessor computes (resample).
func TestResizeAlgorithms(t *testing.T) {
	for _, c := range []struct {
		name   string
		alg    preprocess.ResizeAlgorithm
		h, w   int64 // the image
		mh, mw int64 // the model's
	}{
		{"nearest_down", preprocess.ResizeNearest, 5, 7, 3, 4},
		{"nearest_up", preprocess.ResizeNearest, 3, 4, 5, 7},
		{"cubic_down", preprocess.ResizeCubic, 5, 7, 3, 4},
		{"cubic_up", preprocess.ResizeCubic, 3, 4, 5, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			ppp := preprocess.New(model(c.mh, c.mw))
			in := ppp.Input("x")
			in.Tensor().SetLayout("NCHW").SetSpatialStaticShape(c.h, c.w)
			in.Preprocess().Resize(c.alg)
			m, err := ppp.Build()
			require.NoError(t, err)
			x, err := tensor.FromF32(tensor.Shape{1, 3, c.h, c.w}, seeded.Float32s(7, int(3*c.h*c.w), -2, 2))
			require.NoError(t, err)
			got := run(t, m, x)[0]
			require.Equal(t, tensor.Shape{1, 3, c.mh, c.mw}, got.Shape())
			src, g := x.Float64s(), got.Float64s()
			plane, oplane := int(c.h*c.w), int(c.mh*c.mw)
			for ch := 0; ch < 3; ch++ {
				want := resample(src[ch*plane:(ch+1)*plane], int(c.h), int(c.w), int(c.mh), int(c.mw), c.alg)
				for i, v := range want {
					assert.InDelta(t, v, g[ch*oplane+i], 1e-5, "channel %d pixel %d", ch, i)
				}
			}
		})
	}
}

// TestHalfTensor: an f16 NHWC tensor reaches an f32 NCHW model, the mean
// and scale computed in f16 (the tensor's float type), then converted.
func TestHalfTensor(t *testing.T) {
	ppp := preprocess.New(model(2, 3))
	in := ppp.Input("x")
	in.Tensor().SetElementType(tensor.F16).SetLayout("NHWC")
	in.Preprocess().Mean(1, 2, 3).Scale(2, 4, 8)
	in.Model().SetLayout("NCHW")
	m, err := ppp.Build()
	require.NoError(t, err)
	assert.Equal(t, tensor.F16, m.Inputs()[0].Type)
	assert.Equal(t, "[1,2,3,3]", m.Inputs()[0].Shape.String())
	v := seeded.Float32s(3, 18, -8, 8)
	f := make([]float64, len(v))
	for i := range v {
		f[i] = float64(v[i])
	}
	x, err := tensor.FromFloat64s(tensor.F16, tensor.Shape{1, 2, 3, 3}, f)
	require.NoError(t, err)
	got := run(t, m, x)[0]
	require.Equal(t, tensor.F32, got.Type())
	require.Equal(t, tensor.Shape{1, 3, 2, 3}, got.Shape())
	h, g := x.Float64s(), got.F32()
	mean, scale := []float64{1, 2, 3}, []float64{2, 4, 8}
	for p := 0; p < 6; p++ {
		for c := 0; c < 3; c++ {
			want := (h[p*3+c] - mean[c]) / scale[c]
			assert.InDelta(t, want, g[c*6+p], 2e-3*(1+math.Abs(want)), "pixel %d channel %d", p, c)
		}
	}
}

// TestNV12SinglePlane: NV12 in one plane (Y rows then the UV rows) gives
// what the two planes give, converted to BGR this time.
func TestNV12SinglePlane(t *testing.T) {
	build := func(f preprocess.ColorFormat) *graph.Model {
		ppp := preprocess.New(model(4, 6))
		in := ppp.Input("x")
		in.Tensor().SetElementType(tensor.U8).SetLayout("NHWC").SetColorFormat(f)
		in.Preprocess().ConvertColor(preprocess.BGR)
		in.Model().SetLayout("NCHW")
		m, err := ppp.Build()
		require.NoError(t, err)
		return m
	}
	r := seeded.New(5)
	px := make([]uint8, 4*6*3/2)
	for i := range px {
		px[i] = uint8(r.Uint32())
	}
	one, err := tensor.FromU8(tensor.Shape{1, 6, 6, 1}, px)
	require.NoError(t, err)
	y, err := tensor.FromU8(tensor.Shape{1, 4, 6, 1}, px[:24])
	require.NoError(t, err)
	uv, err := tensor.FromU8(tensor.Shape{1, 2, 3, 2}, px[24:])
	require.NoError(t, err)
	single := build(preprocess.NV12SinglePlane)
	require.Len(t, single.Parameters, 1)
	assert.Equal(t, "[1,6,6,1]", single.Parameters[0].Outputs[0].Shape.String())
	got := run(t, single, one)[0]
	want := run(t, build(preprocess.NV12TwoPlanes), y, uv)[0]
	require.Equal(t, tensor.Shape{1, 3, 4, 6}, got.Shape())
	assert.Equal(t, want.F32(), got.F32())
	// BGR: channel 0 is blue, which the two-plane RGB conversion puts last.
	rgb := preprocess.New(model(4, 6))
	in := rgb.Input("x")
	in.Tensor().SetElementType(tensor.U8).SetLayout("NHWC").SetColorFormat(preprocess.NV12TwoPlanes)
	in.Preprocess().ConvertColor(preprocess.RGB)
	in.Model().SetLayout("NCHW")
	rm, err := rgb.Build()
	require.NoError(t, err)
	r2 := run(t, rm, y, uv)[0].F32()
	assert.Equal(t, r2[2*24:], got.F32()[:24])
}

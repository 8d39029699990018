package bench

import (
	"context"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/page"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/preprocess"
	"github.com/clinfer/clinfer/tensor"
)

// PP-OCR det's normalisation of a BGR u8 image: (x/255 - mean) / std per
// channel, i.e. (x - 255 mean) / (255 std).
var (
	detMean = []float32{0.485 * 255, 0.456 * 255, 0.406 * 255}
	detStd  = []float32{0.229 * 255, 0.224 * 255, 0.225 * 255}
)

// BenchmarkPreprocessDet runs PP-OCR det at 480x640 ("det 640": the
// longer side) on the GPU from a u8 BGR 1280x960 image (and, to show the
// bytes saved when the image is the model's size, from a 640x480 one),
// side by side in one run:
//
//   - in_model: the preprocessing (convert, resize bilinear, normalise,
//     NHWC to NCHW) is PrePostProcessor steps in the model, on the device;
//     the image is uploaded as it is.
//   - go_loop: a Go loop does the same on the host (one pass over the
//     output: four taps per value), then the f32 NCHW tensor is uploaded
//     to the plain model.
//
// Before timing it checks that the two outputs agree (max-abs-diff, at
// most 1e-3 on probabilities); it then alternates the two, one inference
// each per iteration, and reports the medians of the end-to-end latency
// (<side>-ms/infer: preprocessing, upload, inference, download) and their
// ratio, the host-to-device bytes (Transfers) and the Go loop's share.
func BenchmarkPreprocessDet(b *testing.B) {
	full := detImage(b)
	for _, size := range [][2]int{{960, 1280}, {480, 640}} {
		b.Run(fmt.Sprintf("image_%dx%d", size[1], size[0]), func(b *testing.B) {
			img := full
			if size[0] != 960 {
				img = goResizeU8(full, size[0], size[1])
			}
			benchPreprocessDet(b, img)
		})
	}
}

// benchPreprocessDet is BenchmarkPreprocessDet for one image.
func benchPreprocessDet(b *testing.B, img *tensor.Tensor) {
	ctx := context.Background()
	core := driver.NewCore()
	defer core.Close()
	plain := detReshaped(b)
	pre := preprocess.New(plain)
	in := pre.Input("x")
	in.Tensor().SetElementType(tensor.U8).SetLayout("NHWC").SetColorFormat(preprocess.BGR).SetSpatialDynamicShape()
	in.Preprocess().ConvertElementType(tensor.F32).Resize(preprocess.ResizeLinear).Mean(detMean...).Scale(detStd...)
	in.Model().SetLayout("NCHW")
	withPre, err := pre.Build()
	if err != nil {
		b.Fatal(err)
	}
	type side struct {
		name  string
		model *graph.Model
		input func() *tensor.Tensor
	}
	sides := []side{
		{"in_model", withPre, func() *tensor.Tensor { return img }},
		{"go_loop", plain, func() *tensor.Tensor { return goPreprocess(img, 480, 640) }},
	}
	reqs := make([]driver.InferRequest, len(sides))
	outs := make([]*tensor.Tensor, len(sides))
	for i, s := range sides {
		cm, err := core.CompileModel(ctx, s.model, "GPU", nil)
		if err != nil {
			b.Fatalf("%s: %v", s.name, err)
		}
		defer cm.Close()
		req, err := cm.CreateInferRequest()
		if err != nil {
			b.Fatal(err)
		}
		defer req.Close()
		if err := req.SetTensor("x", s.input()); err != nil {
			b.Fatal(err)
		}
		if err := req.Infer(ctx); err != nil {
			b.Fatalf("%s: %v", s.name, err)
		}
		out, err := req.Tensor("sigmoid_0.tmp_0")
		if err != nil {
			b.Fatal(err)
		}
		reqs[i], outs[i] = req, out.Clone()
	}
	diff := maxAbsDiff(outs[0], outs[1])
	if diff > 1e-3 {
		b.Fatalf("the outputs differ by %g (want at most 1e-3)", diff)
	}
	// The two sides alternate, one inference each per iteration and each
	// first every other iteration, so that the shared machine's load
	// weighs on both alike; medians are reported.
	lat := make([][]float64, len(sides))
	var goPre []float64
	for it := 0; b.Loop(); it++ {
		for k := range sides {
			i := (k + it) % len(sides) // each side first every other iteration
			s := sides[i]
			t0 := time.Now()
			x := s.input()
			if s.name == "go_loop" {
				goPre = append(goPre, time.Since(t0).Seconds()*1e3)
			}
			if err := reqs[i].SetTensor("x", x); err != nil {
				b.Fatal(err)
			}
			if err := reqs[i].Infer(ctx); err != nil {
				b.Fatal(err)
			}
			lat[i] = append(lat[i], time.Since(t0).Seconds()*1e3)
		}
	}
	for i, s := range sides {
		b.ReportMetric(Median(lat[i]), s.name+"-ms/infer")
		if tc, ok := reqs[i].(driver.TransferCounter); ok {
			b.ReportMetric(float64(tc.Transfers().HostToDevice), s.name+"-h2d-bytes")
		}
	}
	b.ReportMetric(Median(goPre), "go_loop-preprocess-ms")
	b.ReportMetric(Median(lat[1])/Median(lat[0]), "go_loop/in_model")
	b.ReportMetric(diff, "max-abs-diff")
}

// detImage is the page of internal/page as u8 [1,960,1280,3], the bytes
// read as BGR (testdata/page.png when present, else drawn).
func detImage(b testing.TB) *tensor.Tensor {
	var x *tensor.Tensor
	var err error
	if f, ferr := os.Open(filepath.Join("..", "testdata", "page.png")); ferr == nil {
		defer f.Close()
		img, derr := png.Decode(f)
		if derr != nil {
			b.Fatal(derr)
		}
		x, err = tensor.FromImage(img)
	} else {
		x, err = tensor.FromImage(page.Render(1280, 960))
	}
	if err != nil {
		b.Fatal(err)
	}
	return x
}

// detReshaped is PP-OCR det with its input fixed to 1x3x480x640.
func detReshaped(b testing.TB) *graph.Model {
	m := readModel(b, "ch_PP-OCRv4_det_infer.onnx")
	if err := m.Reshape(map[string]graph.PartialShape{"x": graph.ShapeOf(1, 3, 480, 640)}); err != nil {
		b.Fatal(err)
	}
	return m
}

// goPreprocess is what an application writes without preprocessing in the
// model: a u8 BGR NHWC image resized bilinearly (half-pixel centres, as
// cv2.resize) to h x w, normalised, as f32 NCHW.
func goPreprocess(img *tensor.Tensor, h, w int) *tensor.Tensor {
	s := img.Shape()
	H, W := int(s[1]), int(s[2])
	px := img.U8()
	out := make([]float32, 3*h*w)
	type tap struct {
		i0, i1 int
		f      float32
	}
	taps := func(out, in int) []tap {
		t := make([]tap, out)
		scale := float64(in) / float64(out)
		for o := range t {
			x := (float64(o)+0.5)*scale - 0.5
			if x < 0 {
				x = 0
			}
			i0 := int(math.Floor(x))
			if i0 > in-1 {
				i0 = in - 1
			}
			t[o] = tap{i0, min(i0+1, in-1), float32(x - float64(i0))}
		}
		return t
	}
	ty, tx := taps(h, H), taps(w, W)
	var inv, sub [3]float32
	for c := range inv {
		inv[c], sub[c] = 1/detStd[c], detMean[c]
	}
	for y, ry := range ty {
		r0, r1 := px[ry.i0*W*3:], px[ry.i1*W*3:]
		for x, rx := range tx {
			a, bb := rx.i0*3, rx.i1*3
			for c := 0; c < 3; c++ {
				top := float32(r0[a+c]) + rx.f*(float32(r0[bb+c])-float32(r0[a+c]))
				bot := float32(r1[a+c]) + rx.f*(float32(r1[bb+c])-float32(r1[a+c]))
				v := top + ry.f*(bot-top)
				out[(c*h+y)*w+x] = (v - sub[c]) * inv[c]
			}
		}
	}
	t, err := tensor.FromF32(tensor.Shape{1, 3, int64(h), int64(w)}, out)
	if err != nil {
		panic(err)
	}
	return t
}

// goResizeU8 shrinks a u8 NHWC image to h x w by nearest pixels (a test
// image of another size; its content does not matter).
func goResizeU8(img *tensor.Tensor, h, w int) *tensor.Tensor {
	s := img.Shape()
	H, W := int(s[1]), int(s[2])
	src := img.U8()
	out := make([]uint8, h*w*3)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			copy(out[(y*w+x)*3:(y*w+x)*3+3], src[((y*H/h)*W+x*W/w)*3:])
		}
	}
	t, err := tensor.FromU8(tensor.Shape{1, int64(h), int64(w), 3}, out)
	if err != nil {
		panic(err)
	}
	return t
}

func maxAbsDiff(a, b *tensor.Tensor) float64 {
	av, bv := a.Float64s(), b.Float64s()
	d := 0.0
	for i := range av {
		d = math.Max(d, math.Abs(av[i]-bv[i]))
	}
	return d
}

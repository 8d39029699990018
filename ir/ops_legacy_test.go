package ir

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/tensor"
)

// runCases runs opCases as TestOpsAgainstSpec does: values against the
// hand-worked ones, then a write and read back to the same graph.
func runCases(t *testing.T, cases []opCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &irb{}
			outs := c.build(b)
			for _, o := range outs {
				b.result(o)
			}
			m := b.read(t)
			got := run(t, m, b.inputs)
			want := c.want()
			require.Len(t, got, len(want))
			for i := range want {
				near(t, want[i], got[i], c.tol)
			}
			back, _ := roundTrip(t, m)
			assert.Equal(t, comparable(t, m), comparable(t, back), "round trip:\n%s", diff(t, m, back))
		})
	}
}

// TestInterpolate1 checks Interpolate-1's defaults and transforms by hand:
// align_corners is true when absent, linear of axes {2, 3} of a 4-D input
// is asymmetric, linear of other axes half_pixel, and nearest rounds down
// growing and up shrinking.
func TestInterpolate1(t *testing.T) {
	img := tf32(tensor.Shape{1, 1, 2, 2}, 1, 2, 3, 4)
	// f maps output row/column i of a 2-to-4 resize to its source coordinate.
	grid := func(f []float64) *tensor.Tensor {
		return gather(tensor.Shape{1, 1, 4, 4}, func(i []int64) float64 { return 1 + 2*f[i[2]] + f[i[3]] })
	}
	runCases(t, []opCase{
		{name: "nearest align_corners by default", build: func(b *irb) []port {
			// align_corners: source x*(2-1)/(4-1) = 0, 1/3, 2/3, 1, floored.
			return []port{b.op1("Interpolate", "opset1", `axes="2,3" mode="nearest"`, b.input(img), b.i64(4, 4))}
		}, want: func() []*tensor.Tensor { return []*tensor.Tensor{grid([]float64{0, 0, 0, 1})} }},
		{name: "linear of axes 2,3 asymmetric", build: func(b *irb) []port {
			// asymmetric: x/2 = 0, 0.5, 1, 1.5 (clamped to 1).
			return []port{b.op1("Interpolate", "opset1", `axes="2,3" mode="linear" align_corners="0" antialias="0" pads_begin="0" pads_end="0"`, b.input(img), b.constant(ti32(tensor.Shape{2}, 4, 4)))}
		}, want: func() []*tensor.Tensor { return []*tensor.Tensor{grid([]float64{0, 0.5, 1, 1})} }, tol: 1e-6},
		{name: "linear of axis 2 half_pixel", build: func(b *irb) []port {
			// half_pixel: (x+0.5)/2-0.5 = -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to 1).
			return []port{b.op1("Interpolate", "opset1", `axes="2" mode="linear" align_corners="false"`, b.input(img), b.i64(4))}
		}, want: func() []*tensor.Tensor {
			f := []float64{0, 0.25, 0.75, 1}
			return []*tensor.Tensor{gather(tensor.Shape{1, 1, 4, 2}, func(i []int64) float64 { return 1 + 2*f[i[2]] + float64(i[3]) })}
		}, tol: 1e-6},
		{name: "nearest shrinking rounds up", build: func(b *irb) []port {
			// asymmetric: x*5/2 = 0, 2.5, rounded up to 0, 3.
			return []port{b.op1("Interpolate", "opset1", `axes="3" mode="nearest" align_corners="false"`, b.input(iota32(1, 1, 1, 5)), b.i64(2))}
		}, want: func() []*tensor.Tensor { return []*tensor.Tensor{tf32(tensor.Shape{1, 1, 1, 2}, 0, 3)} }},
	})
}

// TestLegacyErrors: what the older versions cannot map is an error naming
// the layer (id, type, opset) and the attribute.
func TestLegacyErrors(t *testing.T) {
	img := tf32(tensor.Shape{1, 1, 2, 2}, 1, 2, 3, 4)
	for _, c := range []struct {
		name, want string
		build      func(b *irb) port
	}{
		{"Interpolate-1 area", `(Interpolate, opset1): attribute mode: area is not supported`, func(b *irb) port {
			return b.op1("Interpolate", "opset1", `axes="2,3" mode="area"`, b.input(img), b.i64(4, 4))
		}},
		{"Interpolate-1 without axes", `(Interpolate, opset1): attribute axes is required`, func(b *irb) port {
			return b.op1("Interpolate", "opset1", `mode="linear"`, b.input(img), b.i64(4, 4))
		}},
		{"Interpolate-1 pads", `(Interpolate, opset1): attribute pads_begin: [0 0 1 1]: padding`, func(b *irb) port {
			return b.op1("Interpolate", "opset1", `axes="2,3" mode="linear" pads_begin="0,0,1,1"`, b.input(img), b.i64(4, 4))
		}},
		{"Interpolate-1 nearest both ways", `(Interpolate, opset1): attribute mode: nearest growing some axes and shrinking others`, func(b *irb) port {
			return b.op1("Interpolate", "opset1", `axes="2,3" mode="nearest"`, b.input(img), b.i64(4, 1))
		}},
		{"NonMaxSuppression-4 dynamic max", `(NonMaxSuppression, opset4): the output's row count needs a static output port or a constant max_output_boxes_per_class`, func(b *irb) port {
			x := b.input(tf32(tensor.Shape{1, 4, 4}, nmsBoxes...))
			s := b.input(tf32(tensor.Shape{1, 1, 4}, 1, 2, 3, 4))
			return b.op1("NonMaxSuppression", "opset4", "", x, s, b.input(ti64(3)))
		}},
		{"NonMaxSuppression-3 output_type", `(NonMaxSuppression, opset3): attribute output_type: f32 is not i64 or i32`, func(b *irb) port {
			x := b.input(tf32(tensor.Shape{1, 4, 4}, nmsBoxes...))
			return b.op1("NonMaxSuppression", "opset3", `output_type="f32"`, x, b.input(tf32(tensor.Shape{1, 1, 4}, 1, 2, 3, 4)))
		}},
		{"LSTMSequence-1 without weights_format", `(LSTMSequence, opset1): attribute weights_format is required`, func(b *irb) port {
			return b.op("LSTMSequence", "opset1", `hidden_size="1"`, 3, b.input(zerosF32(1, 1, 1)), b.input(zerosF32(1, 1, 1)), b.input(zerosF32(1, 1, 1)),
				b.i64(1), b.constant(zerosF32(1, 4, 1)), b.constant(zerosF32(1, 4, 1)), b.constant(zerosF32(1, 4)))[0]
		}},
		{"LSTMCell-1 input_forget with tanh", `(LSTMCell, opset1): attribute input_forget: true needs the sigmoid gate activation, not Tanh`, func(b *irb) port {
			return b.op("LSTMCell", "opset1", `hidden_size="1" input_forget="true" activations="tanh,tanh,tanh"`, 2, b.input(zerosF32(1, 1)), b.input(zerosF32(1, 1)), b.input(zerosF32(1, 1)),
				b.constant(zerosF32(4, 1)), b.constant(zerosF32(4, 1)))[0]
		}},
		{"LSTMCell-1 narrow peepholes", `(LSTMCell, opset1): input P has 2 rows, want 3`, func(b *irb) port {
			return b.op("LSTMCell", "opset1", `hidden_size="1"`, 2, b.input(zerosF32(1, 1)), b.input(zerosF32(1, 1)), b.input(zerosF32(1, 1)),
				b.constant(zerosF32(4, 1)), b.constant(zerosF32(4, 1)), b.constant(zerosF32(4)), b.constant(zerosF32(2)))[0]
		}},
		{"ConvertPromoteTypes-14 unsafe", `(ConvertPromoteTypes, opset14): ir: unsupported element type: i32 to f32 may lose precision (set promote_unsafe)`, func(b *irb) port {
			return b.op("ConvertPromoteTypes", "opset14", "", 2, b.input(tf32(tensor.Shape{1}, 1)), b.input(ti32(tensor.Shape{1}, 1)))[0]
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &irb{}
			b.result(c.build(b))
			_, err := Read(b.doc(), WithWeights(b.bin.Bytes()))
			require.Error(t, err)
			var le *LayerError
			require.ErrorAs(t, err, &le)
			assert.ErrorContains(t, err, "layer id=")
			head, msg, _ := strings.Cut(c.want, "): ")
			assert.ErrorContains(t, err, head+"): ")
			assert.ErrorContains(t, err, msg)
		})
	}
}

// nmsBoxes are four boxes (corner form): 0 and 1 overlap with IoU 0.9/1.1,
// 2 and 3 overlap nothing.
var nmsBoxes = []float32{0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, 2, 1, 3, 0, 4, 1, 5}

// nmsCase builds NonMaxSuppression of version v (data attributes data)
// over scores of shape s, max_output_boxes_per_class 3, IoU threshold
// 0.5 and score threshold 0.25 (kept when above).
func nmsCase(b *irb, v, data string, boxes []float32, s tensor.Shape, scores ...float32) port {
	batches := s[0]
	var bx []float32
	for i := int64(0); i < batches; i++ {
		bx = append(bx, boxes...)
	}
	return b.op1("NonMaxSuppression", v, data, b.input(tf32(tensor.Shape{batches, 4, 4}, bx...)), b.input(tf32(s, scores...)),
		b.scalar(tensor.I64, 3), b.scalar(tensor.F32, 0.5), b.scalar(tensor.F32, 0.25))
}

// TestNMSLegacy: NonMaxSuppression-1, -3 and -4 by hand. One batch, two
// classes (scores 0.9 0.8 0.3 0.1 and 0.2 0.95 0.5 0.85) selects boxes 0, 2
// of class 0 and 1, 3, 2 of class 1; sorted across classes by score that
// is (0,1,1) (0,0,0) (0,1,3) (0,1,2) (0,0,2). Rows: -4 has min(4, 3) * 2
// classes * 1 batch = 6 (one row of -1), -1 and -3 min(4, 3 * 2) = 4.
func TestNMSLegacy(t *testing.T) {
	twoClasses := []float32{0.9, 0.8, 0.3, 0.1, 0.2, 0.95, 0.5, 0.85}
	// The same boxes as center, width, height.
	center := []float32{0.5, 0.5, 1, 1, 0.6, 0.5, 1, 1, 2.5, 0.5, 1, 1, 4.5, 0.5, 1, 1}
	i64s := func(rows int64, v ...int64) *tensor.Tensor {
		x, _ := tensor.FromI64(tensor.Shape{rows, 3}, v)
		return x
	}
	runCases(t, []opCase{
		{name: "v4 sorted by default, filled with -1", build: func(b *irb) []port {
			return []port{nmsCase(b, "opset4", "", nmsBoxes, tensor.Shape{1, 2, 4}, twoClasses...)}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{i64s(6, 0, 1, 1, 0, 0, 0, 0, 1, 3, 0, 1, 2, 0, 0, 2, -1, -1, -1)}
		}},
		{name: "v3 unsorted i32, cut to 4 rows", build: func(b *irb) []port {
			return []port{nmsCase(b, "opset3", `sort_result_descending="false" output_type="i32"`, nmsBoxes, tensor.Shape{1, 2, 4}, twoClasses...)}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{ti32(tensor.Shape{4, 3}, 0, 0, 0, 0, 0, 2, 0, 1, 1, 0, 1, 3)}
		}},
		{name: "v1 center boxes, sorted, cut to 4 rows", build: func(b *irb) []port {
			return []port{nmsCase(b, "opset1", `box_encoding="center"`, center, tensor.Shape{1, 2, 4}, twoClasses...)}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{i64s(4, 0, 1, 1, 0, 0, 0, 0, 1, 3, 0, 1, 2)}
		}},
		// Two batches of one class: sorted across batches.
		{name: "v4 sorted across batches", build: func(b *irb) []port {
			return []port{nmsCase(b, "opset4", `sort_result_descending="true"`, nmsBoxes, tensor.Shape{2, 1, 4}, twoClasses...)}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{i64s(6, 1, 0, 1, 0, 0, 0, 1, 0, 3, 1, 0, 2, 0, 0, 2, -1, -1, -1)}
		}},
		{name: "v5 sorted across batches", build: func(b *irb) []port {
			return []port{nmsCase(b, "opset5", "", nmsBoxes, tensor.Shape{2, 1, 4}, twoClasses...)}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{i64s(5, 1, 0, 1, 0, 0, 0, 1, 0, 3, 1, 0, 2, 0, 0, 2)}
		}},
	})
}

// TestNMSLegacyDeclaredRows: the row count the output port declares wins.
func TestNMSLegacyDeclaredRows(t *testing.T) {
	b := &irb{}
	b.result(nmsCase(b, "opset1", `sort_result_descending="0"`, nmsBoxes, tensor.Shape{1, 2, 4}, 0.9, 0.8, 0.3, 0.1, 0.2, 0.95, 0.5, 0.85))
	doc := strings.Replace(string(b.doc()), `<port id="5"/>`, `<port id="5" precision="I64"><dim>7</dim><dim>3</dim></port>`, 1)
	m, err := Read([]byte(doc), WithWeights(b.bin.Bytes()))
	require.NoError(t, err)
	got := run(t, m, b.inputs)
	want, _ := tensor.FromI64(tensor.Shape{7, 3}, []int64{0, 0, 0, 0, 0, 2, 0, 1, 1, 0, 1, 3, 0, 1, 2, -1, -1, -1, -1, -1, -1})
	near(t, want, got[0], 0)
}

// ovLSTM is OpenVINO's LSTMCell-1 (v0) as its reference computes it, for
// checking the reader: W [4H, I], R [4H, H] and B [4H] in the gate order
// format, P [3H] as f, i, o; with input_forget the input gate is 1 - the
// forget gate; clip bounds each gate's input (peephole included).
type ovLSTM struct {
	format      string
	inputForget bool
	clip        float64
	w, r, b, p  []float32
	in, hidden  int
}

// step runs one step of one batch row.
func (l ovLSTM) step(x, h, c []float32) (hn, cn []float32) {
	H := l.hidden
	pre := func(g byte, j int) float64 {
		row := strings.IndexByte(l.format, g)*H + j
		a := float64(0)
		if l.b != nil {
			a = float64(l.b[row])
		}
		for k := range l.in {
			a += float64(l.w[row*l.in+k]) * float64(x[k])
		}
		for k := range H {
			a += float64(l.r[row*H+k]) * float64(h[k])
		}
		return a
	}
	peep := func(g, j int) float64 {
		if l.p == nil {
			return 0
		}
		return float64(l.p[g*H+j])
	}
	clip := func(a float64) float64 {
		if l.clip > 0 {
			return math.Max(-l.clip, math.Min(l.clip, a))
		}
		return a
	}
	sig := func(a float64) float64 { return 1 / (1 + math.Exp(-a)) }
	hn, cn = make([]float32, H), make([]float32, H)
	for j := range H {
		f := sig(clip(pre('f', j) + peep(0, j)*float64(c[j])))
		i := 1 - f
		if !l.inputForget {
			i = sig(clip(pre('i', j) + peep(1, j)*float64(c[j])))
		}
		ct := f*float64(c[j]) + i*math.Tanh(clip(pre('c', j)))
		o := sig(clip(pre('o', j) + peep(2, j)*ct))
		cn[j], hn[j] = float32(ct), float32(o*math.Tanh(ct))
	}
	return hn, cn
}

// TestLSTMv0 checks LSTMCell-1 and LSTMSequence-1 against ovLSTM: gate
// orders (weights_format, ifco when a cell lacks it), peepholes (f, i, o),
// input_forget, clip, B and P left out, directions and sequence lengths.
func TestLSTMv0(t *testing.T) {
	const n, in, hid = 2, 3, 4
	for i, c := range []struct {
		name, data string
		l          ovLSTM
		noB, noP   bool
	}{
		{name: "fico with peepholes", data: `weights_format="fico"`, l: ovLSTM{format: "fico"}},
		{name: "ifco when absent, no B or P", l: ovLSTM{format: "ifco"}, noB: true, noP: true},
		{name: "iofc input_forget clip", data: `weights_format="iofc" input_forget="true" clip="0.7"`, l: ovLSTM{format: "iofc", inputForget: true, clip: 0.7}},
		{name: "icof no P", data: `weights_format="icof" input_forget="0"`, l: ovLSTM{format: "icof"}, noP: true},
	} {
		t.Run("cell "+c.name, func(t *testing.T) {
			l := c.l
			l.in, l.hidden = in, hid
			l.w, l.r = seeded.Float32s(uint32(10*i+1), 4*hid*in, -1, 1), seeded.Float32s(uint32(10*i+2), 4*hid*hid, -1, 1)
			x, h, cs := seeded.Float32s(uint32(10*i+3), n*in, -2, 2), seeded.Float32s(uint32(10*i+4), n*hid, -1, 1), seeded.Float32s(uint32(10*i+5), n*hid, -1, 1)
			b := &irb{}
			ports := []port{b.input(tf32(tensor.Shape{n, in}, x...)), b.input(tf32(tensor.Shape{n, hid}, h...)), b.input(tf32(tensor.Shape{n, hid}, cs...)),
				b.constant(tf32(tensor.Shape{4 * hid, in}, l.w...)), b.constant(tf32(tensor.Shape{4 * hid, hid}, l.r...))}
			if !c.noB {
				l.b = seeded.Float32s(uint32(10*i+6), 4*hid, -1, 1)
				ports = append(ports, b.constant(tf32(tensor.Shape{4 * hid}, l.b...)))
			}
			if !c.noP {
				l.p = seeded.Float32s(uint32(10*i+7), 3*hid, -1, 1)
				ports = append(ports, b.constant(tf32(tensor.Shape{3 * hid}, l.p...)))
			}
			for _, o := range b.op("LSTMCell", "opset1", fmt.Sprintf(`hidden_size="%d" %s`, hid, c.data), 2, ports...) {
				b.result(o)
			}
			m := b.read(t)
			got := run(t, m, b.inputs)
			var wantH, wantC []float32
			for r := range n {
				hn, cn := l.step(x[r*in:(r+1)*in], h[r*hid:(r+1)*hid], cs[r*hid:(r+1)*hid])
				wantH, wantC = append(wantH, hn...), append(wantC, cn...)
			}
			near(t, tf32(tensor.Shape{n, hid}, wantH...), got[0], 1e-5)
			near(t, tf32(tensor.Shape{n, hid}, wantC...), got[1], 1e-5)
			back, _ := roundTrip(t, m)
			assert.Equal(t, comparable(t, m), comparable(t, back), "round trip:\n%s", diff(t, m, back))
		})
	}
	for i, c := range []struct {
		name, dir, data string
		l               ovLSTM
		lens            []int64
	}{
		{name: "forward fico", dir: "forward", data: `weights_format="fico"`, l: ovLSTM{format: "fico"}, lens: []int64{3, 3}},
		{name: "bidirectional ifoc input_forget, lengths", dir: "bidirectional", data: `weights_format="ifoc" input_forget="1" clip="1.5"`,
			l: ovLSTM{format: "ifoc", inputForget: true, clip: 1.5}, lens: []int64{3, 2}},
	} {
		t.Run("sequence "+c.name, func(t *testing.T) {
			const s = 3
			d := 1
			if c.dir == "bidirectional" {
				d = 2
			}
			l := c.l
			l.in, l.hidden = in, hid
			seed := uint32(100 + 10*i)
			w, r := seeded.Float32s(seed+1, d*4*hid*in, -1, 1), seeded.Float32s(seed+2, d*4*hid*hid, -1, 1)
			bias, p := seeded.Float32s(seed+3, d*4*hid, -1, 1), seeded.Float32s(seed+4, d*3*hid, -1, 1)
			x, h, cs := seeded.Float32s(seed+5, n*s*in, -2, 2), seeded.Float32s(seed+6, n*d*hid, -1, 1), seeded.Float32s(seed+7, n*d*hid, -1, 1)
			b := &irb{}
			lens, _ := tensor.FromI64(tensor.Shape{n}, c.lens)
			outs := b.op("LSTMSequence", "opset1", fmt.Sprintf(`hidden_size="%d" direction="%s" %s`, hid, c.dir, c.data), 3,
				b.input(tf32(tensor.Shape{n, s, in}, x...)), b.input(tf32(tensor.Shape{n, int64(d), hid}, h...)), b.input(tf32(tensor.Shape{n, int64(d), hid}, cs...)),
				b.input(lens), b.constant(tf32(tensor.Shape{int64(d), 4 * hid, in}, w...)), b.constant(tf32(tensor.Shape{int64(d), 4 * hid, hid}, r...)),
				b.constant(tf32(tensor.Shape{int64(d), 4 * hid}, bias...)), b.constant(tf32(tensor.Shape{int64(d), 3 * hid}, p...)))
			for _, o := range outs {
				b.result(o)
			}
			m := b.read(t)
			got := run(t, m, b.inputs)
			y := make([]float32, n*d*s*hid)
			ho, co := make([]float32, n*d*hid), make([]float32, n*d*hid)
			for dir := range d {
				l.w, l.r = w[dir*4*hid*in:(dir+1)*4*hid*in], r[dir*4*hid*hid:(dir+1)*4*hid*hid]
				l.b, l.p = bias[dir*4*hid:(dir+1)*4*hid], p[dir*3*hid:(dir+1)*3*hid]
				for row := range n {
					st := (row*d + dir) * hid
					hh, cc := h[st:st+hid], cs[st:st+hid]
					steps := int(c.lens[row])
					for k := range steps {
						tt := k
						if dir == 1 || c.dir == "reverse" {
							tt = steps - 1 - k
						}
						hh, cc = l.step(x[(row*s+tt)*in:(row*s+tt+1)*in], hh, cc)
						copy(y[((row*d+dir)*s+tt)*hid:], hh)
					}
					copy(ho[st:], hh)
					copy(co[st:], cc)
				}
			}
			near(t, tf32(tensor.Shape{n, int64(d), s, hid}, y...), got[0], 1e-5)
			near(t, tf32(tensor.Shape{n, int64(d), hid}, ho...), got[1], 1e-5)
			near(t, tf32(tensor.Shape{n, int64(d), hid}, co...), got[2], 1e-5)
			back, _ := roundTrip(t, m)
			assert.Equal(t, comparable(t, m), comparable(t, back), "round trip:\n%s", diff(t, m, back))
		})
	}
}

// TestBitwise13: BitwiseAnd/Or/Xor/Not-13 on integers (numpy broadcast)
// and on booleans.
func TestBitwise13(t *testing.T) {
	bools := func(v ...bool) *tensor.Tensor { x, _ := tensor.FromBool(tensor.Shape{int64(len(v))}, v); return x }
	runCases(t, []opCase{
		{name: "integers", build: func(b *irb) []port {
			x := b.input(ti32(tensor.Shape{2, 2}, 12, -1, 5, 0))
			y := b.input(ti32(tensor.Shape{2}, 10, 6))
			return []port{b.op1("BitwiseAnd", "opset13", "", x, y), b.op1("BitwiseOr", "opset13", `auto_broadcast="numpy"`, x, y),
				b.op1("BitwiseXor", "opset13", "", x, y), b.op1("BitwiseNot", "opset13", "", x)}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{ti32(tensor.Shape{2, 2}, 8, 6, 0, 0), ti32(tensor.Shape{2, 2}, 14, -1, 15, 6),
				ti32(tensor.Shape{2, 2}, 6, -7, 15, 6), ti32(tensor.Shape{2, 2}, -13, 0, -6, -1)}
		}},
		{name: "booleans", build: func(b *irb) []port {
			x, y := b.input(bools(false, false, true, true)), b.input(bools(false, true, false, true))
			return []port{b.op1("BitwiseAnd", "opset13", "", x, y), b.op1("BitwiseOr", "opset13", "", x, y),
				b.op1("BitwiseXor", "opset13", "", x, y), b.op1("BitwiseNot", "opset13", "", x)}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{bools(false, false, false, true), bools(false, true, true, true), bools(false, true, true, false), bools(true, true, false, false)}
		}},
	})
}

// TestReverseRoll: Reverse-1 by index and mask, Roll-7 with a scalar
// shift over two axes, negative shifts and an axis named twice.
func TestReverseRoll(t *testing.T) {
	x := iota32(2, 3)
	mask, _ := tensor.FromBool(tensor.Shape{2}, []bool{false, true})
	runCases(t, []opCase{
		{name: "Reverse index and mask", build: func(b *irb) []port {
			in := b.input(x)
			return []port{b.op1("Reverse", "opset1", `mode="index"`, in, b.i64(0, 1)), b.op1("Reverse", "opset1", `mode="mask"`, in, b.constant(mask)),
				b.op1("Reverse", "opset1", "", in, b.i64(0))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{tf32(tensor.Shape{2, 3}, 5, 4, 3, 2, 1, 0), tf32(tensor.Shape{2, 3}, 2, 1, 0, 5, 4, 3), tf32(tensor.Shape{2, 3}, 3, 4, 5, 0, 1, 2)}
		}},
		{name: "Roll", build: func(b *irb) []port {
			in := b.input(x)
			return []port{b.op1("Roll", "opset7", "", in, b.scalar(tensor.I64, 1), b.i64(0, 1)),
				b.op1("Roll", "opset7", "", in, b.constant(ti32(tensor.Shape{2}, -1, 3)), b.constant(ti32(tensor.Shape{2}, 0, -1))),
				b.op1("Roll", "opset7", "", in, b.i64(1, 1), b.i64(1, 1))}
		}, want: func() []*tensor.Tensor {
			// out[(i + shift) mod n] = in[i].
			return []*tensor.Tensor{tf32(tensor.Shape{2, 3}, 5, 3, 4, 2, 0, 1), tf32(tensor.Shape{2, 3}, 3, 4, 5, 0, 1, 2), tf32(tensor.Shape{2, 3}, 1, 2, 0, 4, 5, 3)}
		}},
	})
}

// TestGRN1: x / sqrt(sum of the channels' squares + bias).
func TestGRN1(t *testing.T) {
	x := tf32(tensor.Shape{1, 2, 1, 2}, 3, 1, 4, -2)
	runCases(t, []opCase{{name: "GRN", build: func(b *irb) []port {
		return []port{b.op1("GRN", "opset1", `bias="0.5"`, b.input(x))}
	}, want: func() []*tensor.Tensor {
		// Pixel 0: sqrt(9+16+0.5); pixel 1: sqrt(1+4+0.5).
		n0, n1 := math.Sqrt(25.5), math.Sqrt(5.5)
		return []*tensor.Tensor{tf32(tensor.Shape{1, 2, 1, 2}, float32(3/n0), float32(1/n1), float32(4/n0), float32(-2/n1))}
	}, tol: 1e-6}})
}

// TestConvertPromoteTypes14: the common type by the promotion rules.
func TestConvertPromoteTypes14(t *testing.T) {
	f64, _ := tensor.FromFloat64s(tensor.F64, tensor.Shape{}, []float64{0.5})
	i8, _ := tensor.FromFloat64s(tensor.I8, tensor.Shape{2}, []float64{-3, 4})
	u8, _ := tensor.FromFloat64s(tensor.U8, tensor.Shape{2}, []float64{200, 7})
	bools, _ := tensor.FromBool(tensor.Shape{2}, []bool{true, false})
	as := func(et tensor.ElementType, shape tensor.Shape, v ...float64) *tensor.Tensor {
		x, err := tensor.FromFloat64s(et, shape, v)
		require.NoError(t, err)
		return x
	}
	runCases(t, []opCase{
		{name: "float beats integer (unsafe), signed and unsigned widen", build: func(b *irb) []port {
			return append(append(b.op("ConvertPromoteTypes", "opset14", `promote_unsafe="true"`, 2, b.input(tf32(tensor.Shape{2}, 1.5, 2)), b.input(ti32(tensor.Shape{2}, 3, -4))),
				b.op("ConvertPromoteTypes", "opset14", "", 2, b.input(i8), b.input(u8))...),
				b.op("ConvertPromoteTypes", "opset14", "", 2, b.input(bools), b.input(ti64(5, 6)))...)
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{tf32(tensor.Shape{2}, 1.5, 2), tf32(tensor.Shape{2}, 3, -4), as(tensor.I16, tensor.Shape{2}, -3, 4), as(tensor.I16, tensor.Shape{2}, 200, 7),
				ti64(1, 0), ti64(5, 6)}
		}},
		{name: "pytorch scalar promotion", build: func(b *irb) []port {
			x, s := b.input(tf32(tensor.Shape{2}, 1, 2)), b.constant(f64)
			return append(b.op("ConvertPromoteTypes", "opset14", `pytorch_scalar_promotion="true"`, 2, x, s),
				b.op("ConvertPromoteTypes", "opset14", `pytorch_scalar_promotion="false"`, 2, x, s)...)
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{tf32(tensor.Shape{2}, 1, 2), tf32(tensor.Shape{}, 0.5), as(tensor.F64, tensor.Shape{2}, 1, 2), f64}
		}},
	})
}

// sdpaRef is OpenVINO's ScaledDotProductAttention pseudo-code in loops:
// q [B, L, E], k [B, S, E], v [B, S, Ev], bias(b, i, j) added to the
// scaled scores.
func sdpaRef(q, k, v []float32, B, L, S, E, Ev int, scale float64, bias func(b, i, j int) float64) *tensor.Tensor {
	out := make([]float32, B*L*Ev)
	for b := range B {
		for i := range L {
			w := make([]float64, S)
			mx := math.Inf(-1)
			for j := range S {
				for e := range E {
					w[j] += float64(q[(b*L+i)*E+e]) * float64(k[(b*S+j)*E+e])
				}
				w[j] = w[j]*scale + bias(b, i, j)
				mx = math.Max(mx, w[j])
			}
			sum := 0.0
			for j := range w {
				w[j] = math.Exp(w[j] - mx)
				sum += w[j]
			}
			for o := range Ev {
				acc := 0.0
				for j := range S {
					acc += w[j] / sum * float64(v[(b*S+j)*Ev+o])
				}
				out[(b*L+i)*Ev+o] = float32(acc)
			}
		}
	}
	return tf32(tensor.Shape{int64(B), int64(L), int64(Ev)}, out...)
}

// TestSDPA13: ScaledDotProductAttention-13 against sdpaRef: the default
// scale 1/sqrt(E), causal (top-left, the mask ignored), a boolean mask
// with an explicit scale, a float mask.
func TestSDPA13(t *testing.T) {
	const B, L, S, E, Ev = 2, 3, 4, 3, 2
	q, k, v := seeded.Float32s(1, B*L*E, -1, 1), seeded.Float32s(2, B*S*E, -1, 1), seeded.Float32s(3, B*S*Ev, -1, 1)
	keep := []bool{true, false, true, true, false, true, true, false, true, true, false, false}
	boolMask, _ := tensor.FromBool(tensor.Shape{L, S}, keep)
	addMask := seeded.Float32s(4, B*L*S, -2, 2)
	ports := func(b *irb) []port {
		return []port{b.input(tf32(tensor.Shape{B, L, E}, q...)), b.input(tf32(tensor.Shape{B, S, E}, k...)), b.input(tf32(tensor.Shape{B, S, Ev}, v...))}
	}
	none := func(b, i, j int) float64 { return 0 }
	runCases(t, []opCase{
		{name: "default scale", build: func(b *irb) []port {
			return []port{b.op1("ScaledDotProductAttention", "opset13", `causal="false"`, ports(b)...)}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{sdpaRef(q, k, v, B, L, S, E, Ev, 1/math.Sqrt(E), none)}
		}, tol: 1e-5},
		{name: "causal ignores the mask", build: func(b *irb) []port {
			return []port{b.op1("ScaledDotProductAttention", "opset13", `causal="true"`, append(ports(b), b.constant(boolMask))...)}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{sdpaRef(q, k, v, B, L, S, E, Ev, 1/math.Sqrt(E), func(b, i, j int) float64 {
				if j > i {
					return math.Inf(-1)
				}
				return 0
			})}
		}, tol: 1e-5},
		{name: "boolean mask and scale", build: func(b *irb) []port {
			return []port{b.op1("ScaledDotProductAttention", "opset13", `causal="false"`, append(ports(b), b.constant(boolMask), b.scalar(tensor.F32, 0.5))...)}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{sdpaRef(q, k, v, B, L, S, E, Ev, 0.5, func(b, i, j int) float64 {
				if !keep[i*S+j] {
					return math.Inf(-1)
				}
				return 0
			})}
		}, tol: 1e-5},
		{name: "float mask", build: func(b *irb) []port {
			return []port{b.op1("ScaledDotProductAttention", "opset13", "", append(ports(b), b.input(tf32(tensor.Shape{B, L, S}, addMask...)))...)}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{sdpaRef(q, k, v, B, L, S, E, Ev, 1/math.Sqrt(E), func(b, i, j int) float64 { return float64(addMask[(b*L+i)*S+j]) })}
		}, tol: 1e-5},
	})
}

// TestIRDFT9: IRDFT-9 takes a one-sided spectrum (worked out here by the
// DFT's definition) back to its real signal, of even length by default and
// of odd length by signal_size.
func TestIRDFT9(t *testing.T) {
	spectrum := func(sig []float64) []float32 {
		n := len(sig)
		var out []float32
		for k := 0; k <= n/2; k++ {
			re, im := 0.0, 0.0
			for j, v := range sig {
				re += v * math.Cos(2*math.Pi*float64(j*k)/float64(n))
				im -= v * math.Sin(2*math.Pi*float64(j*k)/float64(n))
			}
			out = append(out, float32(re), float32(im))
		}
		return out
	}
	even, odd := []float64{1, 2, 3, 4}, []float64{1, -2, 0.5, 4, 3}
	runCases(t, []opCase{
		{name: "even by default", build: func(b *irb) []port {
			return []port{b.op1("IRDFT", "opset9", "", b.input(tf32(tensor.Shape{3, 2}, spectrum(even)...)), b.i64(0))}
		}, want: func() []*tensor.Tensor { return []*tensor.Tensor{tf32(tensor.Shape{4}, 1, 2, 3, 4)} }, tol: 1e-5},
		{name: "odd by signal_size, negative axis", build: func(b *irb) []port {
			return []port{b.op1("IRDFT", "opset9", "", b.input(tf32(tensor.Shape{3, 2}, spectrum(odd)...)), b.i64(-1), b.i64(5))}
		}, want: func() []*tensor.Tensor { return []*tensor.Tensor{tf32(tensor.Shape{5}, 1, -2, 0.5, 4, 3)} }, tol: 1e-5},
	})
}

// TestSpaceBatch2: SpaceToBatch-2 and BatchToSpace-2 by hand: output
// batch (block offsets) * batch + b holds the input at dim * block +
// offset; pads and crops.
func TestSpaceBatch2(t *testing.T) {
	runCases(t, []opCase{
		{name: "SpaceToBatch", build: func(b *irb) []port {
			return []port{b.op1("SpaceToBatch", "opset2", "", b.input(iota32(1, 1, 2, 4)), b.i64(1, 1, 2, 2), b.i64(0, 0, 0, 0), b.i64(0, 0, 0, 0)),
				b.op1("SpaceToBatch", "opset2", "", b.input(tf32(tensor.Shape{1, 1, 1, 3}, 1, 2, 3)), b.i64(1, 1, 1, 2), b.i64(0, 0, 0, 1), b.i64(0, 0, 0, 0))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{tf32(tensor.Shape{4, 1, 1, 2}, 0, 2, 1, 3, 4, 6, 5, 7), tf32(tensor.Shape{2, 1, 1, 2}, 0, 2, 1, 3)}
		}},
		{name: "BatchToSpace", build: func(b *irb) []port {
			return []port{b.op1("BatchToSpace", "opset2", "", b.input(tf32(tensor.Shape{4, 1, 1, 2}, 0, 2, 1, 3, 4, 6, 5, 7)), b.i64(1, 1, 2, 2), b.i64(0, 0, 0, 0), b.i64(0, 0, 0, 0)),
				b.op1("BatchToSpace", "opset2", "", b.input(tf32(tensor.Shape{2, 1, 1, 2}, 0, 2, 1, 3)), b.i64(1, 1, 1, 2), b.i64(0, 0, 0, 1), b.i64(0, 0, 0, 0))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{iota32(1, 1, 2, 4), tf32(tensor.Shape{1, 1, 1, 3}, 1, 2, 3)}
		}},
	})
}

// TestI420: I420toRGB/BGR-8 from three planes and from one, and
// NV12toRGB/BGR-8 from one plane of the smallest height (2 rows of luma),
// by the BT.601 formula the NV12 conversions use (values that stay within
// 0..255).
func TestI420(t *testing.T) {
	yv := []float32{50, 60, 70, 80, 90, 100, 110, 120}
	u, v := []float32{120, 140}, []float32{130, 110}
	rgb := func(bgr bool) *tensor.Tensor {
		var out []float32
		for h := range 2 {
			for w := range 4 {
				Y, U, V := float64(yv[h*4+w])-16, float64(u[w/2])-128, float64(v[w/2])-128
				r, g, b := 1.164*Y+1.596*V, 1.164*Y-0.813*V-0.391*U, 1.164*Y+2.018*U
				if bgr {
					r, b = b, r
				}
				out = append(out, float32(r), float32(g), float32(b))
			}
		}
		return tf32(tensor.Shape{1, 2, 4, 3}, out...)
	}
	one := append(append(append([]float32{}, yv...), u...), v...)
	nv12 := append(append([]float32{}, yv...), u[0], v[0], u[1], v[1])
	runCases(t, []opCase{
		{name: "three planes", build: func(b *irb) []port {
			y, up, vp := b.input(tf32(tensor.Shape{1, 2, 4, 1}, yv...)), b.input(tf32(tensor.Shape{1, 1, 2, 1}, u...)), b.input(tf32(tensor.Shape{1, 1, 2, 1}, v...))
			return []port{b.op1("I420toRGB", "opset8", "", y, up, vp), b.op1("I420toBGR", "opset8", "", y, up, vp)}
		}, want: func() []*tensor.Tensor { return []*tensor.Tensor{rgb(false), rgb(true)} }, tol: 1e-4},
		{name: "one plane", build: func(b *irb) []port {
			x := b.input(tf32(tensor.Shape{1, 3, 4, 1}, one...))
			return []port{b.op1("I420toRGB", "opset8", "", x), b.op1("I420toBGR", "opset8", "", x)}
		}, want: func() []*tensor.Tensor { return []*tensor.Tensor{rgb(false), rgb(true)} }, tol: 1e-4},
		{name: "NV12 one plane", build: func(b *irb) []port {
			x := b.input(tf32(tensor.Shape{1, 3, 4, 1}, nv12...))
			return []port{b.op1("NV12toRGB", "opset8", "", x), b.op1("NV12toBGR", "opset8", "", x)}
		}, want: func() []*tensor.Tensor { return []*tensor.Tensor{rgb(false), rgb(true)} }, tol: 1e-4},
	})
}

// TestEmbeddingBags: the three EmbeddingBag*Sum-3 ops by hand over a
// table of four rows [r, 10r]: weights, empty bags and segments with and
// without default_index.
func TestEmbeddingBags(t *testing.T) {
	table := tf32(tensor.Shape{4, 2}, 0, 0, 1, 10, 2, 20, 3, 30)
	idx := func(v ...int64) *tensor.Tensor { return ti64(v...) }
	runCases(t, []opCase{
		{name: "packed", build: func(b *irb) []port {
			emb := b.input(table)
			packed := b.input(ti32(tensor.Shape{2, 2}, 1, 3, 2, 2))
			return []port{b.op1("EmbeddingBagPackedSum", "opset3", "", emb, packed),
				b.op1("EmbeddingBagPackedSum", "opset3", "", emb, packed, b.input(tf32(tensor.Shape{2, 2}, 0.5, 2, 1, -1)))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{tf32(tensor.Shape{2, 2}, 4, 40, 4, 40), tf32(tensor.Shape{2, 2}, 6.5, 65, 0, 0)}
		}},
		{name: "offsets", build: func(b *irb) []port {
			emb := b.input(table)
			// Bags [1 2], [] and [3 1 0].
			in, off := b.input(idx(1, 2, 3, 1, 0)), b.input(idx(0, 2, 2))
			return []port{b.op1("EmbeddingBagOffsetsSum", "opset3", "", emb, in, off),
				b.op1("EmbeddingBagOffsetsSum", "opset3", "", emb, in, off, b.scalar(tensor.I64, 3), b.input(tf32(tensor.Shape{5}, 1, 2, 1, 1, 1)))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{tf32(tensor.Shape{3, 2}, 3, 30, 0, 0, 4, 40), tf32(tensor.Shape{3, 2}, 5, 50, 3, 30, 4, 40)}
		}},
		{name: "segments", build: func(b *irb) []port {
			emb := b.input(table)
			in, seg := b.input(idx(0, 2, 3, 3)), b.input(idx(0, 0, 2, 3))
			return []port{b.op1("EmbeddingSegmentsSum", "opset3", "", emb, in, seg, b.scalar(tensor.I64, 5)),
				b.op1("EmbeddingSegmentsSum", "opset3", "", emb, in, seg, b.scalar(tensor.I64, 5), b.scalar(tensor.I64, 1), b.input(tf32(tensor.Shape{4}, 1, 1, 2, 1)))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{tf32(tensor.Shape{5, 2}, 2, 20, 0, 0, 3, 30, 3, 30, 0, 0), tf32(tensor.Shape{5, 2}, 2, 20, 1, 10, 6, 60, 3, 30, 1, 10)}
		}},
	})
}

// TestRandom: RandomUniform-8 draws in [minval, maxval) with its seeds
// repeatable, Multinomial-13 samples only classes of nonzero probability
// (probabilities and log probabilities, a batch and a 1-D input).
func TestRandom(t *testing.T) {
	b := &irb{}
	shape, lo, hi := b.i64(3, 50), b.scalar(tensor.F32, 2), b.scalar(tensor.F32, 5)
	b.result(b.op1("RandomUniform", "opset8", `output_type="f32" global_seed="7" op_seed="1"`, shape, lo, hi))
	b.result(b.op1("RandomUniform", "opset8", `output_type="f32" global_seed="7" op_seed="1"`, shape, lo, hi))
	b.result(b.op1("RandomUniform", "opset8", `output_type="f32" global_seed="7" op_seed="2"`, shape, lo, hi))
	probs := b.input(tf32(tensor.Shape{2, 4}, 0, 0, 1, 0, 0.5, 0.5, 0, 0))
	b.result(b.op1("Multinomial", "opset13", `convert_type="i32" with_replacement="true" log_probs="false" global_seed="3"`, probs, b.scalar(tensor.I64, 40)))
	logp := b.input(tf32(tensor.Shape{4}, -1e9, -1e9, -1e9, 0))
	b.result(b.op1("Multinomial", "opset13", `convert_type="i64" with_replacement="true" log_probs="true"`, logp, b.scalar(tensor.I32, 5)))
	m := b.read(t)
	out := run(t, m, b.inputs)
	require.Len(t, out, 5)
	u := out[0].F32()
	require.Equal(t, tensor.Shape{3, 50}, out[0].Shape())
	mean := 0.0
	for _, v := range u {
		assert.True(t, v >= 2 && v < 5, "%v outside [2, 5)", v)
		mean += float64(v) / float64(len(u))
	}
	assert.InDelta(t, 3.5, mean, 0.4)
	assert.Equal(t, u, out[1].F32(), "same seeds, same values")
	assert.NotEqual(t, u, out[2].F32(), "another op_seed, other values")
	require.Equal(t, tensor.Shape{2, 40}, out[3].Shape())
	require.Equal(t, tensor.I32, out[3].Type())
	s := out[3].I32()
	for i, v := range s {
		if i < 40 {
			assert.Equal(t, int32(2), v, "row 0 has only class 2")
		} else {
			assert.Contains(t, []int32{0, 1}, v, "row 1 has classes 0 and 1")
		}
	}
	require.Equal(t, tensor.Shape{5}, out[4].Shape())
	assert.Equal(t, []int64{3, 3, 3, 3, 3}, out[4].I64())
	back, _ := roundTrip(t, m)
	assert.Equal(t, comparable(t, m), comparable(t, back), "round trip:\n%s", diff(t, m, back))
}

// TestBucketize3: boundaries 1, 3, 5; a value on a boundary falls in the
// bucket it closes with with_right_bound (the default), else the next.
func TestBucketize3(t *testing.T) {
	runCases(t, []opCase{{name: "both bounds", build: func(b *irb) []port {
		x, bk := b.input(tf32(tensor.Shape{2, 3}, 0, 1, 2, 3, 5, 9)), b.constant(ti32(tensor.Shape{3}, 1, 3, 5))
		return []port{b.op1("Bucketize", "opset3", "", x, bk), b.op1("Bucketize", "opset3", `with_right_bound="false" output_type="i32"`, x, bk)}
	}, want: func() []*tensor.Tensor {
		x, _ := tensor.FromI64(tensor.Shape{2, 3}, []int64{0, 0, 1, 1, 2, 3})
		return []*tensor.Tensor{x, ti32(tensor.Shape{2, 3}, 0, 1, 1, 2, 3, 3)}
	}}})
}

// regionYoloRef is OpenVINO's region_yolo reference in loops over [N, C,
// H*W]: per region, sigmoid of x, y and the confidence, and of the
// classes (softmax over them with do_softmax).
func regionYoloRef(in []float32, n, regions, coords, classes, hw int, soft bool) []float32 {
	k := coords + 1 + classes
	out := append([]float32(nil), in[:n*regions*k*hw]...)
	sig := func(v float32) float32 { return float32(1 / (1 + math.Exp(-float64(v)))) }
	for b := range n {
		for r := range regions {
			at := func(ch, p int) int { return ((b*regions+r)*k+ch)*hw + p }
			for p := range hw {
				for _, ch := range []int{0, 1, coords} {
					out[at(ch, p)] = sig(in[at(ch, p)])
				}
				if !soft {
					for ch := coords + 1; ch < k; ch++ {
						out[at(ch, p)] = sig(in[at(ch, p)])
					}
					continue
				}
				mx := math.Inf(-1)
				for ch := coords + 1; ch < k; ch++ {
					mx = math.Max(mx, float64(in[at(ch, p)]))
				}
				sum := 0.0
				for ch := coords + 1; ch < k; ch++ {
					sum += math.Exp(float64(in[at(ch, p)]) - mx)
				}
				for ch := coords + 1; ch < k; ch++ {
					out[at(ch, p)] = float32(math.Exp(float64(in[at(ch, p)])-mx) / sum)
				}
			}
		}
	}
	return out
}

// TestRegionYolo1: YOLO v2's region (do_softmax, flattened) and v3's yolo
// layer (mask of two regions) against regionYoloRef.
func TestRegionYolo1(t *testing.T) {
	v2 := seeded.Float32s(5, 2*2*8*6, -3, 3) // N 2, 2 regions of 4+1+3, H 2, W 3
	v3 := seeded.Float32s(6, 1*2*7*4, -3, 3) // N 1, 2 regions of 4+1+2, H 2, W 2
	runCases(t, []opCase{
		{name: "v2 do_softmax flattened", build: func(b *irb) []port {
			return []port{b.op1("RegionYolo", "opset1", `coords="4" classes="3" num="2" do_softmax="1" axis="1" end_axis="3" anchors="1,2,3,4"`, b.input(tf32(tensor.Shape{2, 16, 2, 3}, v2...)))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{tf32(tensor.Shape{2, 96}, regionYoloRef(v2, 2, 2, 4, 3, 6, true)...)}
		}, tol: 1e-5},
		{name: "v3 mask", build: func(b *irb) []port {
			return []port{b.op1("RegionYolo", "opset1", `coords="4" classes="2" num="9" do_softmax="false" mask="0,1" axis="1" end_axis="3"`, b.input(tf32(tensor.Shape{1, 14, 2, 2}, v3...)))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{tf32(tensor.Shape{1, 14, 2, 2}, regionYoloRef(v3, 1, 2, 4, 2, 4, false)...)}
		}, tol: 1e-5},
	})
}

// TestReorgYolo2 against a loop transcription of OpenVINO's reorg_yolo
// reference: output element (n, c, h, w) of the input's shape reads the
// input viewed as [N, C/s^2, H*s, W*s] at (n, c % C', h*s + (c/C')/s,
// w*s + (c/C') % s).
func TestReorgYolo2(t *testing.T) {
	const n, ch, h, w, s = 2, 8, 4, 6, 2
	x := iota32(n, ch, h, w)
	runCases(t, []opCase{{name: "stride 2", build: func(b *irb) []port {
		return []port{b.op1("ReorgYolo", "opset2", `stride="2"`, b.input(x))}
	}, want: func() []*tensor.Tensor {
		in := x.F32()
		out := make([]float32, len(in))
		cc, hh, ww := ch/(s*s), h*s, w*s
		for b := range n {
			for c := range ch {
				for i := range h {
					for j := range w {
						off := c / cc
						src := ((b*cc+c%cc)*hh+i*s+off/s)*ww + j*s + off%s
						out[((b*ch+c)*h+i)*w+j] = in[src]
					}
				}
			}
		}
		return []*tensor.Tensor{tf32(tensor.Shape{n, ch * s * s, h / s, w / s}, out...)}
	}}})
}

// TestCTCGreedy: CTCGreedyDecoderSeqLen-6 and CTCGreedyDecoder-1 by hand.
// Best classes 0 0 3 0 1 1 (length 6) and 2 2 2 1 0 0 (length 4), blank 3:
// merged, 0 0 1 and 2 1; unmerged, 0 0 0 1 1 and 2 2 2 1.
func TestCTCGreedy(t *testing.T) {
	best := [][]int{{0, 0, 3, 0, 1, 1}, {2, 2, 2, 1, 0, 0}}
	const n, steps, classes = 2, 6, 4
	logits := func(batchFirst bool) *tensor.Tensor {
		v := make([]float32, n*steps*classes)
		for b := range n {
			for s := range steps {
				at := (b*steps + s) * classes
				if !batchFirst {
					at = (s*n + b) * classes
				}
				v[at+best[b][s]] = 1
			}
		}
		if batchFirst {
			return tf32(tensor.Shape{n, steps, classes}, v...)
		}
		return tf32(tensor.Shape{steps, n, classes}, v...)
	}
	ind := tf32(tensor.Shape{steps, n}, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0)
	runCases(t, []opCase{
		{name: "SeqLen", build: func(b *irb) []port {
			x, l := b.input(logits(true)), b.input(ti32(tensor.Shape{2}, 6, 4))
			merged := b.op("CTCGreedyDecoderSeqLen", "opset6", "", 2, x, l)
			plain := b.op("CTCGreedyDecoderSeqLen", "opset6", `merge_repeated="false" classes_index_type="i64" sequence_length_type="i64"`, 2, x, l, b.scalar(tensor.I64, 3))
			return append(merged, plain...)
		}, want: func() []*tensor.Tensor {
			d, _ := tensor.FromI64(tensor.Shape{2, 6}, []int64{0, 0, 0, 1, 1, -1, 2, 2, 2, 1, -1, -1})
			return []*tensor.Tensor{ti32(tensor.Shape{2, 6}, 0, 0, 1, -1, -1, -1, 2, 1, -1, -1, -1, -1), ti32(tensor.Shape{2}, 3, 2), d, ti64(5, 4)}
		}},
		{name: "v1", build: func(b *irb) []port {
			return []port{b.op1("CTCGreedyDecoder", "opset1", "", b.input(logits(false)), b.input(ind))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{tf32(tensor.Shape{2, 6, 1, 1}, 0, 0, 1, -1, -1, -1, 2, 1, -1, -1, -1, -1)}
		}},
	})
}

package clbackend

import (
	"fmt"
	"math"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/tensor"
)

// The spectral transforms run signal_fft.cl: a load of M signals into a
// complex work buffer, one Stockham pass per radix of the transform length
// (the fft family's variants choose the largest power-of-two radix), and a
// store in the output's layout. A length with a prime factor of 64 or more
// runs Bluestein's algorithm: its chirp-weighted signal is convolved with
// the transformed chirp by two power-of-two FFTs, so every length is
// O(n log n).

// fftBluesteinPrime is the smallest prime factor handled by Bluestein's
// algorithm (fft_stage's generic radix takes the smaller ones).
const fftBluesteinPrime = 64

// fftRadices factors n into the radices of the Stockham passes: powers of
// two in radices of at most rmax, then 3s, 5s and other primes. ok is
// false when a prime factor needs Bluestein's algorithm.
func fftRadices(n int64, rmax int64) (rs []int64, ok bool) {
	for n%rmax == 0 && n > 1 {
		rs, n = append(rs, rmax), n/rmax
	}
	for r := rmax / 2; r >= 2; r /= 2 {
		if n%r == 0 {
			rs, n = append(rs, r), n/r
		}
	}
	for p := int64(3); n > 1; p += 2 {
		for n%p == 0 {
			if p >= fftBluesteinPrime {
				return nil, false
			}
			rs, n = append(rs, p), n/p
		}
	}
	return rs, true
}

// complexTable is the host table of complex values as float pairs.
func (b *builder) complexTable(v []complex128) slotArg {
	f := make([]float32, 2*len(v))
	for i, c := range v {
		f[2*i], f[2*i+1] = float32(real(c)), float32(imag(c))
	}
	return b.floats(f)
}

// twiddles is exp(-2 pi i k/n) for k < n.
func twiddles(n int64) []complex128 {
	t := make([]complex128, n)
	for k := range t {
		s, c := math.Sincos(-2 * math.Pi * float64(k) / float64(n))
		t[k] = complex(c, s)
	}
	return t
}

// fftJob is one spectral transform: M signals of length L (zero-padded or
// truncated: tmax samples are read) located by the load table, Lout
// frequencies stored by the store table.
type fftJob struct {
	x, y, win       int // win < 0: no window
	M, L, Lout      int64
	load            []int64 // q, s1, s2, s3, tmax, cx
	store           []int64 // q, o1, o2, o3
	inverse         bool
	half, key, name string
}

// emitFFT emits job j under the fft variant v (RMAX, the largest radix).
func (b *builder) emitFFT(n *graph.Node, j fftJob, v kernels.Variant) error {
	rs, direct := fftRadices(j.L, int64(v.Get("RMAX")))
	Lb := j.L
	var chirp, fb []complex128
	if !direct {
		var m int
		m, chirp, fb = ref.BluesteinTables(int(j.L))
		Lb = int64(m)
		rs, _ = fftRadices(Lb, int64(v.Get("RMAX")))
	}
	dummy := b.floats(nil)
	chirpArg, winArg := dummy, dummy
	if chirp != nil {
		chirpArg = b.complexTable(chirp)
	}
	if j.win >= 0 {
		winArg = slotArg(j.win)
	}
	work := tensor.Shape{j.M * Lb * 2}
	bufs := [2]int{b.temp(tensor.F32, work), b.temp(tensor.F32, work)}
	load := append([]int64{Lb}, j.load...)
	load = append(load, boolInt(j.inverse), boolInt(j.win >= 0), boolInt(chirp != nil))
	cnt := j.M * Lb
	if err := b.emit(n, "fft_load", j.half, cnt, slotArg(j.x), winArg, chirpArg, slotArg(bufs[0]), uint64(cnt), b.meta(load)); err != nil {
		return err
	}
	cur := 0
	tw := b.complexTable(twiddles(Lb))
	passes := func() error {
		ns := int64(1)
		for _, r := range rs {
			radix := int64(0)
			switch r {
			case 2, 3, 4, 5, 8:
				radix = r
			}
			items := j.M * Lb / r
			if err := b.emit(n, "fft_stage", fmt.Sprintf("-DRADIX=%d", radix), items, slotArg(bufs[cur]), slotArg(bufs[1-cur]), tw,
				uint64(items), uint64(Lb), uint64(ns), int32(r)); err != nil {
				return err
			}
			cur, ns = 1-cur, ns*r
		}
		return nil
	}
	if err := passes(); err != nil {
		return err
	}
	if chirp != nil {
		if err := b.emit(n, "fft_pointmul", "", cnt, slotArg(bufs[cur]), b.complexTable(fb), uint64(cnt), uint64(Lb)); err != nil {
			return err
		}
		if err := passes(); err != nil {
			return err
		}
	}
	store := append([]int64{Lb, j.Lout}, j.store...)
	store = append(store, boolInt(chirp != nil), boolInt(j.inverse))
	out := j.M * j.Lout
	return b.emit(n, "fft_store", j.half, out, slotArg(bufs[cur]), chirpArg, slotArg(j.y), uint64(out), b.meta(store), float32(1/float64(j.L)))
}

// fft chooses the fft variant of job j and emits it.
func (b *builder) fft(n *graph.Node, j fftJob) error {
	if j.M == 0 || j.Lout == 0 {
		return nil
	}
	key := fmt.Sprintf("%s M=%d L=%d", j.name, j.M, j.L)
	heur := mustVariant("fft", "stockham", 8)
	return b.choose(n, "fft", key, true, func(kernels.Variant) string { return "" }, heur, func(v kernels.Variant) error {
		return b.emitFFT(n, j, v)
	})
}

// signalInput checks the signal's type and returns its half define.
func (b *builder) signalInput(n *graph.Node) (string, error) {
	x, y := b.in(n, 0), b.out(n, 0)
	if !b.sameFloat(y, x) {
		return "", errUnsupported(n, "element type %s (the GPU kernels take f32 and f16 signals)", b.val(x).typ)
	}
	return b.halfDefine(x), nil
}

func lowerDFT(b *builder, n *graph.Node) error {
	half, err := b.signalInput(n)
	if err != nil {
		return err
	}
	x, y := b.in(n, 0), b.out(n, 0)
	xs := b.val(x).shape
	r := len(xs)
	axis := int64(-2)
	if v := b.in(n, 2); v >= 0 {
		a, ok := b.hostInts(v)
		if !ok || len(a) != 1 {
			return errUnsupported(n, "axis not known at plan time")
		}
		axis = a[0]
	}
	ax, err := graph.DFTAxis(n, axis, r)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	L := xs[ax]
	if v := b.in(n, 1); v >= 0 {
		l, ok := b.hostInts(v)
		if !ok || len(l) != 1 {
			return errUnsupported(n, "dft_length not known at plan time")
		}
		L = l[0]
	}
	inner := prod(xs[ax+1 : r-1])
	j := fftJob{x: x, y: y, win: -1, M: prod(xs[:ax]) * inner, L: L, Lout: b.val(y).shape[ax],
		load:    []int64{inner, xs[ax] * inner, 1, inner, min(xs[ax], L), xs[r-1]},
		inverse: n.Attrs.Int("inverse", 0) != 0, half: half, name: "dft"}
	j.store = []int64{inner, j.Lout * inner, 1, inner}
	return b.fft(n, j)
}

func lowerSTFT(b *builder, n *graph.Node) error {
	half, err := b.signalInput(n)
	if err != nil {
		return err
	}
	x, y, win := b.in(n, 0), b.out(n, 0), b.in(n, 2)
	xs, ys := b.val(x).shape, b.val(y).shape
	step, ok := b.hostInts(b.in(n, 1))
	if !ok || len(step) != 1 {
		return errUnsupported(n, "frame_step not known at plan time")
	}
	L := xs[1]
	wl := int64(-1)
	if win >= 0 {
		if b.val(win).typ != tensor.F32 {
			return errUnsupported(n, "a window of type %s (the GPU kernel takes f32)", b.val(win).typ)
		}
		wl = b.val(win).shape.NumElements()
		L = wl
	}
	if v := b.in(n, 3); v >= 0 {
		l, ok := b.hostInts(v)
		if !ok || len(l) != 1 {
			return errUnsupported(n, "frame_length not known at plan time")
		}
		L = l[0]
	}
	if wl < 0 {
		wl = L
	}
	frames, bins := ys[1], ys[2]
	j := fftJob{x: x, y: y, win: win, M: xs[0] * frames, L: L, Lout: bins,
		load:  []int64{frames, xs[1], step[0], 1, min(wl, L), xs[2]},
		store: []int64{1, bins, 0, 1}, half: half, name: "stft"}
	return b.fft(n, j)
}

// signalLowerings are the GPU table entries (see lowering) of DFT and
// STFT (STFT's window stays f32).
func signalLowerings() map[string]lowering {
	return map[string]lowering{
		"DFT":  {lower: lowerDFT, noF64: true, half: true},
		"STFT": {lower: lowerSTFT, noF64: true, half: true, f32: []int{2}},
	}
}

package ref

import (
	"math"
	"math/cmplx"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// bluesteinPrime is the smallest prime factor the FFT computes with
// Bluestein's algorithm (a convolution of power-of-two FFTs) instead of a
// direct O(p^2) DFT of that factor.
const bluesteinPrime = 64

// fft returns the discrete Fourier transform of x (forward: exp(-2 pi i
// tk/n)): a mixed-radix decimation in time over x's prime factors, with
// Bluestein's algorithm for a prime factor of bluesteinPrime or more, so it
// is O(n log n) for every length.
func fft(x []complex128) []complex128 {
	n := len(x)
	if n <= 1 {
		return append([]complex128(nil), x...)
	}
	p := smallestFactor(n)
	if p >= bluesteinPrime {
		return bluestein(x)
	}
	if p == n { // a small prime: direct
		out := make([]complex128, n)
		for k := range n {
			var s complex128
			for t, v := range x {
				s += v * twiddle(t*k%n, n)
			}
			out[k] = s
		}
		return out
	}
	m := n / p
	subs := make([][]complex128, p)
	buf := make([]complex128, m)
	for t := range p {
		for j := range m {
			buf[j] = x[j*p+t]
		}
		subs[t] = fft(buf)
	}
	out := make([]complex128, n)
	for k := range n {
		var s complex128
		for t := range p {
			s += subs[t][k%m] * twiddle(t*k%n, n)
		}
		out[k] = s
	}
	return out
}

// twiddle is exp(-2 pi i k/n).
func twiddle(k, n int) complex128 {
	s, c := math.Sincos(-2 * math.Pi * float64(k) / float64(n))
	return complex(c, s)
}

// smallestFactor returns n's smallest prime factor (n >= 2).
func smallestFactor(n int) int {
	for p := 2; p*p <= n; p++ {
		if n%p == 0 {
			return p
		}
	}
	return n
}

// bluestein is the DFT of any length n as a cyclic convolution of length
// m >= 2n-1, a power of two: X[k] = w[k] * sum_t (x[t] w[t]) conj(w[k-t]),
// w[t] = exp(-pi i t^2/n).
func bluestein(x []complex128) []complex128 {
	n := len(x)
	m, w, fb := BluesteinTables(n)
	a := make([]complex128, m)
	for t := range n {
		a[t] = x[t] * w[t]
	}
	fa := fft(a)
	for i := range fa {
		fa[i] = cmplx.Conj(fa[i] * fb[i])
	}
	c := fft(fa) // the inverse, by conjugation
	out := make([]complex128, n)
	for k := range n {
		out[k] = w[k] * cmplx.Conj(c[k]) / complex(float64(m), 0)
	}
	return out
}

// BluesteinTables returns what Bluestein's algorithm needs for length n
// (the GPU computes them here too): the convolution length m (the power of
// two >= 2n-1), the chirp w[t] = exp(-pi i t^2/n) (t^2 taken modulo 2n, so
// it stays exact for long signals) and the transform of length m of the
// conjugate chirp wrapped around (b[t] = b[m-t] = conj(w[t])).
func BluesteinTables(n int) (m int, w, fb []complex128) {
	m = 1
	for m < 2*n-1 {
		m *= 2
	}
	w = make([]complex128, n)
	b := make([]complex128, m)
	for t := range n {
		s, c := math.Sincos(-math.Pi * float64(int64(t)*int64(t)%int64(2*n)) / float64(n))
		w[t] = complex(c, s)
		b[t] = cmplx.Conj(w[t])
		if t > 0 {
			b[m-t] = b[t]
		}
	}
	return m, w, fft(b)
}

// dftOf transforms x (forward, or inverse normalised by 1/len(x)).
func dftOf(x []complex128, inverse bool) []complex128 {
	if !inverse {
		return fft(x)
	}
	for i, v := range x {
		x[i] = cmplx.Conj(v)
	}
	y := fft(x)
	scale := complex(1/float64(len(x)), 0)
	for i, v := range y {
		y[i] = cmplx.Conj(v) * scale
	}
	return y
}

// optScalar returns optional input i's one integer value.
func optScalar(n *graph.Node, in []*tensor.Tensor, i int, what string) (int64, bool, error) {
	x := opt(in, i)
	if x == nil {
		return 0, false, nil
	}
	if x.NumElements() != 1 {
		return 0, false, n.Errorf("%w: %s has %d elements, want one", driver.ErrInvalidArgument, what, x.NumElements())
	}
	return toI64s(x)[0], true, nil
}

// dftKernel is DFT (opset 20: input, dft_length?, axis?).
func dftKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	r := len(xs)
	if r < 2 || (xs[r-1] != 1 && xs[r-1] != 2) {
		return nil, n.Errorf("%w: input %v: want a last axis of 1 or 2", driver.ErrInvalidArgument, xs)
	}
	axis, ok, err := optScalar(n, in, 2, "axis")
	if err != nil {
		return nil, err
	}
	if !ok {
		axis = -2
	}
	ax, err := graph.DFTAxis(n, axis, r)
	if err != nil {
		return nil, err
	}
	L, ok, err := optScalar(n, in, 1, "dft_length")
	if err != nil {
		return nil, err
	}
	if !ok {
		L = xs[ax]
	}
	if L < 1 {
		return nil, n.Errorf("%w: dft_length %d is not positive", driver.ErrInvalidArgument, L)
	}
	lout := L
	if n.Attrs.Int("onesided", 0) != 0 {
		lout = L/2 + 1
	}
	ys := xs.Clone()
	ys[ax], ys[r-1] = lout, 2
	y, err := newOut(n, x.Type(), ys)
	if err != nil {
		return nil, err
	}
	cx := xs[r-1]
	outer, inner := nnProd(xs[:ax]), nnProd(xs[ax+1:r-1])
	X, out := x.Float64s(), make([]float64, y.NumElements())
	inverse := n.Attrs.Int("inverse", 0) != 0
	sig := make([]complex128, L)
	for o := range outer {
		for i := range inner {
			for t := range L {
				sig[t] = 0
				if t < xs[ax] {
					p := ((o*xs[ax]+t)*inner + i) * cx
					sig[t] = complex(X[p], 0)
					if cx == 2 {
						sig[t] = complex(X[p], X[p+1])
					}
				}
			}
			f := dftOf(sig, inverse)
			for k := range lout {
				q := ((o*lout+k)*inner + i) * 2
				out[q], out[q+1] = real(f[k]), imag(f[k])
			}
		}
	}
	storeF64(y, out)
	return one(y), nil
}

// stftKernel is STFT(signal, frame_step, window?, frame_length?).
func stftKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	if len(xs) != 3 || (xs[2] != 1 && xs[2] != 2) {
		return nil, n.Errorf("%w: signal %v: want [batch, length, 1 or 2]", driver.ErrInvalidArgument, xs)
	}
	step, ok, err := optScalar(n, in, 1, "frame_step")
	if err != nil {
		return nil, err
	}
	if !ok || step < 1 {
		return nil, n.Errorf("%w: frame_step must be a positive integer", driver.ErrInvalidArgument)
	}
	win := opt(in, 2)
	L, ok, err := optScalar(n, in, 3, "frame_length")
	if err != nil {
		return nil, err
	}
	switch {
	case ok:
	case win != nil:
		L = win.NumElements()
	default:
		L = xs[1]
	}
	if L < 1 || L > xs[1] {
		return nil, n.Errorf("%w: frame_length %d for a signal of %d samples", driver.ErrInvalidArgument, L, xs[1])
	}
	wl := L
	var wv []float64
	if win != nil {
		wv, wl = win.Float64s(), win.NumElements()
	}
	frames := 1 + (xs[1]-L)/step
	bins := L
	if n.Attrs.Int("onesided", 1) != 0 {
		bins = L/2 + 1
	}
	y, err := newOut(n, x.Type(), tensor.Shape{xs[0], frames, bins, 2})
	if err != nil {
		return nil, err
	}
	X, out, cx := x.Float64s(), make([]float64, y.NumElements()), xs[2]
	sig := make([]complex128, L)
	for b := range xs[0] {
		for f := range frames {
			for t := range L {
				sig[t] = 0
				if s := f*step + t; t < wl && s < xs[1] {
					w := 1.0
					if wv != nil {
						w = wv[t]
					}
					p := (b*xs[1] + s) * cx
					sig[t] = complex(X[p]*w, 0)
					if cx == 2 {
						sig[t] = complex(X[p]*w, X[p+1]*w)
					}
				}
			}
			spec := fft(sig)
			for k := range bins {
				q := ((b*frames+f)*bins + k) * 2
				out[q], out[q+1] = real(spec[k]), imag(spec[k])
			}
		}
	}
	storeF64(y, out)
	return one(y), nil
}

// signalKernels are DFT and STFT.
func signalKernels() map[string]Kernel {
	return map[string]Kernel{
		"DFT":  dftKernel,
		"STFT": stftKernel,
	}
}

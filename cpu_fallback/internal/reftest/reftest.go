package reftest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/clinfer/clinfer/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ConvParams is the explicit geometry the naive references take.
type ConvParams struct {
	Group       int64
	Stride, Dil []int64
	PadB, PadE  []int64
}

// ForIndex calls f with every multi-index of shape in row-major order.
func ForIndex(shape []int64, f func(idx []int64)) {
	n := tensor.Shape(shape).NumElements()
	idx := make([]int64, len(shape))
	for i := int64(0); i < n; i++ {
		f(idx)
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
}

// Flat is the row-major offset of idx in shape.
func Flat(shape, idx []int64) int64 {
	o := int64(0)
	for d := range shape {
		o = o*shape[d] + idx[d]
	}
	return o
}

// Conv is a direct N-D grouped convolution.
func Conv(x, w, b *tensor.Tensor, p ConvParams) *tensor.Tensor {
	xs, ws := x.Shape(), w.Shape()
	r := len(xs) - 2
	N, C, M := xs[0], xs[1], ws[0]
	Cg, Mg := C/p.Group, M/p.Group
	out := make([]int64, r)
	for d := 0; d < r; d++ {
		out[d] = (xs[d+2]+p.PadB[d]+p.PadE[d]-(ws[d+2]-1)*p.Dil[d]-1)/p.Stride[d] + 1
	}
	ys := append(tensor.Shape{N, M}, out...)
	y := tensor.MustNew(tensor.F32, ys)
	X, W, Y := x.F32(), w.F32(), y.F32()
	ForIndex(ys, func(o []int64) {
		n, m := o[0], o[1]
		g := m / Mg
		s := 0.0
		if b != nil {
			s = float64(b.F32()[m])
		}
		for c := int64(0); c < Cg; c++ {
			ForIndex(ws[2:], func(k []int64) {
				xi := []int64{n, g*Cg + c}
				for d := 0; d < r; d++ {
					i := o[d+2]*p.Stride[d] - p.PadB[d] + k[d]*p.Dil[d]
					if i < 0 || i >= xs[d+2] {
						return
					}
					xi = append(xi, i)
				}
				wi := append([]int64{m, c}, k...)
				s += float64(X[Flat(xs, xi)]) * float64(W[Flat(ws, wi)])
			})
		}
		Y[Flat(ys, o)] = float32(s)
	})
	return y
}

// ConvTranspose scatters every input element times the kernel.
func ConvTranspose(x, w, b *tensor.Tensor, group int64, stride, dil, padB []int64, out []int64) *tensor.Tensor {
	xs, ws := x.Shape(), w.Shape()
	r := len(xs) - 2
	N, C := xs[0], xs[1]
	Cg, Mg := C/group, ws[1]
	M := Mg * group
	ys := append(tensor.Shape{N, M}, out...)
	acc := make([]float64, ys.NumElements())
	X, W := x.F32(), w.F32()
	ForIndex(xs, func(i []int64) {
		n, c := i[0], i[1]
		g := c / Cg
		for m := int64(0); m < Mg; m++ {
			ForIndex(ws[2:], func(k []int64) {
				yi := []int64{n, g*Mg + m}
				for d := 0; d < r; d++ {
					o := i[d+2]*stride[d] - padB[d] + k[d]*dil[d]
					if o < 0 || o >= out[d] {
						return
					}
					yi = append(yi, o)
				}
				acc[Flat(ys, yi)] += float64(X[Flat(xs, i)]) * float64(W[Flat(ws, append([]int64{c, m}, k...))])
			})
		}
	})
	y := tensor.MustNew(tensor.F32, ys)
	for i := range acc {
		if b != nil {
			acc[i] += float64(b.F32()[(int64(i)/tensor.Shape(out).NumElements())%M])
		}
		y.F32()[i] = float32(acc[i])
	}
	return y
}

// RNG is the seeded generator of the tests.
func RNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// RandF32 returns a seeded random f32 tensor in [-1, 1).
func RandF32(rng *rand.Rand, shape ...int64) *tensor.Tensor {
	x := tensor.MustNew(tensor.F32, shape)
	for i := range x.F32() {
		x.F32()[i] = rng.Float32()*2 - 1
	}
	return x
}

// F32s is an f32 tensor of shape holding v.
func F32s(shape tensor.Shape, v ...float32) *tensor.Tensor {
	t, err := tensor.FromF32(shape, v)
	if err != nil {
		panic(err)
	}
	return t
}

// I64s is an i64 vector holding v.
func I64s(v ...int64) *tensor.Tensor {
	t, err := tensor.FromI64(tensor.Shape{int64(len(v))}, v)
	if err != nil {
		panic(err)
	}
	return t
}

// AssertClose compares got (any type) to want within a relative tolerance
// (absolute near zero); NaN must match NaN.
func AssertClose(t *testing.T, want []float64, got *tensor.Tensor, rel float64, msg ...any) {
	t.Helper()
	g := got.Float64s()
	require.Len(t, g, len(want), msg...)
	for i := range want {
		w := want[i]
		switch {
		case math.IsNaN(w):
			assert.True(t, math.IsNaN(g[i]), "element %d: want NaN, got %v %v", i, g[i], msg)
		case math.IsInf(w, 0):
			assert.Equal(t, w, g[i], "element %d %v", i, msg)
		default:
			assert.InDelta(t, w, g[i], rel*math.Max(1, math.Abs(w)), "element %d %v", i, msg)
		}
	}
}

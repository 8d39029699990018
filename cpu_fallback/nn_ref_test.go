package cpufallback

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// nnConvParams is the explicit geometry the naive references take.
type nnConvParams struct {
	group       int64
	stride, dil []int64
	padB, padE  []int64
}

// nnForIndex calls f with every multi-index of shape in row-major order.
func nnForIndex(shape []int64, f func(idx []int64)) {
	n := nnProd(shape)
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

// nnFlat is the row-major offset of idx in shape.
func nnFlat(shape, idx []int64) int64 {
	o := int64(0)
	for d := range shape {
		o = o*shape[d] + idx[d]
	}
	return o
}

// naiveConv is a direct N-D grouped convolution.
func naiveConv(x, w, b *tensor.Tensor, p nnConvParams) *tensor.Tensor {
	xs, ws := x.Shape(), w.Shape()
	r := len(xs) - 2
	N, C, M := xs[0], xs[1], ws[0]
	Cg, Mg := C/p.group, M/p.group
	out := make([]int64, r)
	for d := 0; d < r; d++ {
		out[d] = (xs[d+2]+p.padB[d]+p.padE[d]-(ws[d+2]-1)*p.dil[d]-1)/p.stride[d] + 1
	}
	ys := append(tensor.Shape{N, M}, out...)
	y := tensor.MustNew(tensor.F32, ys)
	X, W, Y := x.F32(), w.F32(), y.F32()
	nnForIndex(ys, func(o []int64) {
		n, m := o[0], o[1]
		g := m / Mg
		s := 0.0
		if b != nil {
			s = float64(b.F32()[m])
		}
		for c := int64(0); c < Cg; c++ {
			nnForIndex(ws[2:], func(k []int64) {
				xi := []int64{n, g*Cg + c}
				for d := 0; d < r; d++ {
					i := o[d+2]*p.stride[d] - p.padB[d] + k[d]*p.dil[d]
					if i < 0 || i >= xs[d+2] {
						return
					}
					xi = append(xi, i)
				}
				wi := append([]int64{m, c}, k...)
				s += float64(X[nnFlat(xs, xi)]) * float64(W[nnFlat(ws, wi)])
			})
		}
		Y[nnFlat(ys, o)] = float32(s)
	})
	return y
}

// naiveConvTranspose scatters every input element times the kernel.
func naiveConvTranspose(x, w, b *tensor.Tensor, group int64, stride, dil, padB []int64, out []int64) *tensor.Tensor {
	xs, ws := x.Shape(), w.Shape()
	r := len(xs) - 2
	N, C := xs[0], xs[1]
	Cg, Mg := C/group, ws[1]
	M := Mg * group
	ys := append(tensor.Shape{N, M}, out...)
	acc := make([]float64, ys.NumElements())
	X, W := x.F32(), w.F32()
	nnForIndex(xs, func(i []int64) {
		n, c := i[0], i[1]
		g := c / Cg
		for m := int64(0); m < Mg; m++ {
			nnForIndex(ws[2:], func(k []int64) {
				yi := []int64{n, g*Mg + m}
				for d := 0; d < r; d++ {
					o := i[d+2]*stride[d] - padB[d] + k[d]*dil[d]
					if o < 0 || o >= out[d] {
						return
					}
					yi = append(yi, o)
				}
				acc[nnFlat(ys, yi)] += float64(X[nnFlat(xs, i)]) * float64(W[nnFlat(ws, append([]int64{c, m}, k...))])
			})
		}
	})
	y := tensor.MustNew(tensor.F32, ys)
	for i := range acc {
		if b != nil {
			acc[i] += float64(b.F32()[(int64(i)/nnProd(out))%M])
		}
		y.F32()[i] = float32(acc[i])
	}
	return y
}

// nnRun runs the NN kernel for op on a fresh node with attrs.
func nnRun(t *testing.T, op string, attrs graph.Attrs, outputs int, in ...*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	outs, err := nnRunErr(op, attrs, outputs, in...)
	require.NoError(t, err)
	require.Len(t, outs, outputs)
	return outs
}

func nnRunErr(op string, attrs graph.Attrs, outputs int, in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	k := nnKernels()[op]
	n := graph.NewNode(op, "test_"+op, make([]graph.Output, len(in)), attrs, outputs)
	return k(n, in)
}

func nnRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// nnClose compares element-wise with an absolute+relative tolerance.
func nnClose(t *testing.T, want, got []float32, tol float64) {
	t.Helper()
	require.Len(t, got, len(want))
	bad := 0
	for i := range want {
		d := float64(want[i]) - float64(got[i])
		if d < 0 {
			d = -d
		}
		lim := tol * (1 + nnAbs(float64(want[i])))
		if !(d <= lim) {
			if bad < 5 {
				t.Errorf("element %d: want %v, got %v (tol %g)", i, want[i], got[i], lim)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d elements differ", bad, len(want))
	}
}

func nnAbs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// det is the determinant of the m x m matrix a (overwritten): Gaussian
// elimination with partial pivoting, in float64.
func det(a []float64, m int) float64 {
	d := 1.0
	for c := range m {
		p := c
		for r := c + 1; r < m; r++ {
			if math.Abs(a[r*m+c]) > math.Abs(a[p*m+c]) {
				p = r
			}
		}
		if a[p*m+c] == 0 {
			return 0
		}
		if p != c {
			for k := range m {
				a[c*m+k], a[p*m+k] = a[p*m+k], a[c*m+k]
			}
			d = -d
		}
		d *= a[c*m+c]
		for r := c + 1; r < m; r++ {
			f := a[r*m+c] / a[c*m+c]
			for k := c + 1; k < m; k++ {
				a[r*m+k] -= f * a[c*m+k]
			}
		}
	}
	return d
}

// detKernel is Det: the determinant of each matrix of the last two axes.
func detKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := nnInput(n, in, 0, 2)
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	m := int(s[len(s)-1])
	if s[len(s)-2] != int64(m) {
		return nil, n.Errorf("%w: input %v: the matrices are not square", tensor.ErrShape, s)
	}
	y, err := newOut(n, x.Type(), s[:len(s)-2])
	if err != nil {
		return nil, err
	}
	v := toF64s(x)
	out := make([]float64, y.NumElements())
	for b := range out {
		out[b] = det(v[b*m*m:(b+1)*m*m], m)
	}
	storeF64(y, out)
	return one(y), nil
}

// detKernels are the gemm family's linear algebra beyond products.
func detKernels() map[string]Kernel { return map[string]Kernel{"Det": detKernel} }

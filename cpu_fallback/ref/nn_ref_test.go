package ref

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// nnRun runs the NN kernel for op on a fresh node with attrs.
func nnRun(t *testing.T, op string, attrs graph.Attrs, outputs int, in ...*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	outs, err := nnRunErr(op, attrs, outputs, in...)
	require.NoError(t, err)
	require.Len(t, outs, outputs)
	return outs
}

func nnRunErr(op string, attrs graph.Attrs, outputs int, in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	k := hostKernels()[op]
	n := graph.NewNode(op, "test_"+op, make([]graph.Output, len(in)), attrs, outputs)
	return k(n, in)
}

func nnAbs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

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

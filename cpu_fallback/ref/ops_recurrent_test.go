package ref

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/internal/reftest"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// TestRecurrentF64ComputesInF32 checks LSTM, GRU and RNN on f64: the
// outputs are f64 and equal, bit for bit, the f32 computation of the same
// values converted to f64 (the reference computes f64 in f32, as it does
// f64 Conv).
func TestRecurrentF64ComputesInF32(t *testing.T) {
	const s, nb, in, h = 3, 2, 4, 3
	rng := reftest.RNG(25)
	for _, tc := range []struct {
		op           string
		gates, nouts int
	}{{"LSTM", 4, 3}, {"GRU", 3, 2}, {"RNN", 1, 2}} {
		t.Run(tc.op, func(t *testing.T) {
			f32 := []*tensor.Tensor{
				reftest.RandF32(rng, s, nb, in),
				reftest.RandF32(rng, 1, int64(tc.gates*h), in),
				reftest.RandF32(rng, 1, int64(tc.gates*h), h),
				reftest.RandF32(rng, 1, int64(2*tc.gates*h)),
			}
			f64 := make([]*tensor.Tensor, len(f32))
			for i, x := range f32 {
				var err error
				f64[i], err = x.Convert(tensor.F64)
				require.NoError(t, err)
			}
			attrs := graph.Attrs{"hidden_size": int64(h)}
			want := nnRun(t, tc.op, attrs, tc.nouts, f32...)
			got := nnRun(t, tc.op, attrs, tc.nouts, f64...)
			for i := range want {
				require.Equal(t, tensor.F64, got[i].Type(), "output %d", i)
				require.Equal(t, want[i].Shape(), got[i].Shape(), "output %d", i)
				w, err := want[i].Convert(tensor.F64)
				require.NoError(t, err)
				assert.Equal(t, w.F64(), got[i].F64(), "output %d", i)
				assert.NotZero(t, got[i].F64()[0], "output %d", i)
			}
		})
	}
}

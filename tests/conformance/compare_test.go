package conformance

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

func f32(t *testing.T, shape tensor.Shape, v ...float32) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromF32(shape, v)
	require.NoError(t, err)
	return x
}

func i64(t *testing.T, shape tensor.Shape, v ...int64) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromI64(shape, v)
	require.NoError(t, err)
	return x
}

func TestCompare(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tol := DefaultTolerance(tensor.F32)
	tests := []struct {
		name      string
		got, want func(t *testing.T) *tensor.Tensor
		tol       Tolerance
		wantErr   string // substring; empty means equal
	}{
		{"equal f32",
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{2}, 1, 2) },
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{2}, 1, 2) }, tol, ""},
		{"within rtol",
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{1}, 1000.9) },
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{1}, 1000) }, tol, ""},
		{"outside rtol",
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{2, 2}, 0, 0, 0, 1002) },
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{2, 2}, 0, 0, 0, 1000) }, tol, "first at [1 1]"},
		{"within atol near zero",
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{1}, 5e-6) },
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{1}, 0) }, tol, ""},
		{"outside atol near zero",
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{1}, 5e-5) },
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{1}, 0) }, tol, "1 of 1 elements"},
		{"nan matches nan",
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{2}, nan, 1) },
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{2}, nan, 1) }, tol, ""},
		{"number is not nan",
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{1}, 0) },
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{1}, nan) }, tol, "want NaN"},
		{"inf matches inf",
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{1}, inf) },
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{1}, inf) }, tol, ""},
		{"inf is not -inf",
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{1}, -inf) },
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{1}, inf) }, tol, "want +Inf"},
		{"shape differs",
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{2, 1}, 1, 2) },
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{2}, 1, 2) }, tol, "shape"},
		{"type differs",
			func(t *testing.T) *tensor.Tensor { return i64(t, tensor.Shape{2}, 1, 2) },
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{2}, 1, 2) }, tol, "element type"},
		{"ints exact",
			func(t *testing.T) *tensor.Tensor { return i64(t, tensor.Shape{2}, 1<<62+1, 3) },
			func(t *testing.T) *tensor.Tensor { return i64(t, tensor.Shape{2}, 1<<62+1, 3) }, Tolerance{}, ""},
		{"ints beyond 2^53 differ",
			func(t *testing.T) *tensor.Tensor { return i64(t, tensor.Shape{2}, 1<<62+1, 3) },
			func(t *testing.T) *tensor.Tensor { return i64(t, tensor.Shape{2}, 1<<62, 3) }, Tolerance{}, "first at [0]"},
		{"bools",
			func(t *testing.T) *tensor.Tensor {
				x, err := tensor.FromBool(tensor.Shape{2}, []bool{true, true})
				require.NoError(t, err)
				return x
			},
			func(t *testing.T) *tensor.Tensor {
				x, err := tensor.FromBool(tensor.Shape{2}, []bool{true, false})
				require.NoError(t, err)
				return x
			}, Tolerance{}, "1 of 2 elements differ"},
		{"empty tensors",
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{0, 3}) },
			func(t *testing.T) *tensor.Tensor { return f32(t, tensor.Shape{0, 3}) }, tol, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Compare(tc.got(t), tc.want(t), tc.tol)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrMismatch)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestCompareStridedView(t *testing.T) {
	// A column of a 2x2 tensor is a non-contiguous view; Compare must read
	// it by strides.
	x := f32(t, tensor.Shape{2, 2}, 1, 2, 3, 4)
	col, err := x.View([]int64{0, 1}, []int64{2, 2})
	require.NoError(t, err)
	assert.NoError(t, Compare(col, f32(t, tensor.Shape{2, 1}, 2, 4), DefaultTolerance(tensor.F32)))
	assert.ErrorIs(t, Compare(col, f32(t, tensor.Shape{2, 1}, 1, 3), DefaultTolerance(tensor.F32)), ErrMismatch)
}

func TestMaxAbsDiff(t *testing.T) {
	d, err := MaxAbsDiff(f32(t, tensor.Shape{3}, 1, 2.5, 3), f32(t, tensor.Shape{3}, 1, 2, 3.25))
	require.NoError(t, err)
	assert.InDelta(t, 0.5, d, 1e-9)
	_, err = MaxAbsDiff(f32(t, tensor.Shape{3}, 1, 2, 3), f32(t, tensor.Shape{1, 3}, 1, 2, 3))
	assert.ErrorIs(t, err, ErrMismatch)
}

func TestDefaultToleranceExactForInts(t *testing.T) {
	for _, et := range []tensor.ElementType{tensor.I8, tensor.U8, tensor.I16, tensor.I32, tensor.I64, tensor.Bool} {
		assert.Equal(t, Tolerance{}, DefaultTolerance(et), "%v", et)
	}
	for _, et := range []tensor.ElementType{tensor.F32, tensor.F16, tensor.BF16, tensor.F64} {
		tol := DefaultTolerance(et)
		assert.Greater(t, tol.Rel, 0.0, "%v", et)
		assert.Greater(t, tol.Abs, 0.0, "%v", et)
	}
}

func TestExclusionsHaveReasons(t *testing.T) {
	for k, v := range Exclusions {
		assert.NotEmpty(t, v, "exclusion %q has no reason", k)
		assert.Regexp(t, `^(node|pytorch-converted|pytorch-operator|simple)/test_`, k)
	}
}

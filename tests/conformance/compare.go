package conformance

import (
	"errors"
	"fmt"
	"math"

	"github.com/clinfer/clinfer/tensor"
)

// ErrMismatch is wrapped by every error Compare returns.
var ErrMismatch = errors.New("conformance: mismatch")

// Tolerance bounds the difference between a computed and an expected
// floating-point element: |got-want| <= Abs + Rel*|want|.
type Tolerance struct {
	Abs, Rel float64
}

// DefaultTolerance is the tolerance the ONNX backend suite uses for outputs
// of element type t. ONNX's own runner uses rtol 1e-3, atol 1e-7; atol is
// looser here (1e-5) because kernels may sum in another order than numpy.
// Half types get one unit in the last place of relative slack on top
// (f16: 2^-10, bf16: 2^-7). Integers and booleans compare exactly (the zero
// Tolerance).
func DefaultTolerance(t tensor.ElementType) Tolerance {
	switch t {
	case tensor.F32, tensor.F64:
		return Tolerance{Abs: 1e-5, Rel: 1e-3}
	case tensor.F16:
		return Tolerance{Abs: 1e-3, Rel: 2e-3}
	case tensor.BF16:
		return Tolerance{Abs: 1e-2, Rel: 1e-2}
	}
	return Tolerance{}
}

// Compare checks got against want: the element types and shapes must be
// equal; floating-point elements must agree within tol (NaN matches NaN, an
// infinity matches only the same infinity); integer and boolean elements
// must be equal. The error wraps ErrMismatch and names the first differing
// element, the number of differing elements and the largest difference.
//
// Sequences and optionals compare item by item (an empty sequence or
// optional has no element type to compare); strings compare exactly.
func Compare(got, want *tensor.Tensor, tol Tolerance) error {
	if got == nil || want == nil {
		return fmt.Errorf("%w: missing tensor (got %v, want %v)", ErrMismatch, got, want)
	}
	if got.Kind() != want.Kind() {
		return fmt.Errorf("%w: a %v, want a %v", ErrMismatch, got.Kind(), want.Kind())
	}
	if got.Kind() != tensor.KindTensor {
		return compareItems(got, want, tol)
	}
	if got.Type() != want.Type() {
		return fmt.Errorf("%w: element type %v, want %v", ErrMismatch, got.Type(), want.Type())
	}
	if !got.Shape().Equal(want.Shape()) {
		return fmt.Errorf("%w: shape %v, want %v", ErrMismatch, got.Shape(), want.Shape())
	}
	if got.Type().IsFloat() || got.Type().IsFloat8() {
		return compareFloats(got.Float64s(), want.Float64s(), want.Shape(), tol)
	}
	if got.Type() == tensor.String {
		g, w := got.Contiguous().Strings(), want.Contiguous().Strings()
		for i := range w {
			if g[i] != w[i] {
				return fmt.Errorf("%w: first difference at %v: got %q, want %q", ErrMismatch, unravel(i, want.Shape()), g[i], w[i])
			}
		}
		return nil
	}
	g, err := int64s(got)
	if err != nil {
		return err
	}
	w, err := int64s(want)
	if err != nil {
		return err
	}
	bad, first := 0, -1
	for i := range w {
		if g[i] != w[i] {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%w: %d of %d elements differ; first at %v: got %d, want %d",
			ErrMismatch, bad, len(w), unravel(first, want.Shape()), g[first], w[first])
	}
	return nil
}

// compareItems compares the items of two sequences or optionals of one
// kind.
func compareItems(got, want *tensor.Tensor, tol Tolerance) error {
	g, w := got.Items(), want.Items()
	if len(g) != len(w) {
		return fmt.Errorf("%w: %v of %d items, want %d", ErrMismatch, got.Kind(), len(g), len(w))
	}
	if len(w) > 0 && got.Type() != want.Type() {
		return fmt.Errorf("%w: element type %v, want %v", ErrMismatch, got.Type(), want.Type())
	}
	for i := range w {
		if err := Compare(g[i], w[i], tol); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
	}
	return nil
}

func compareFloats(g, w []float64, shape tensor.Shape, tol Tolerance) error {
	bad, first, maxDiff := 0, -1, 0.0
	for i := range w {
		d, ok := floatClose(g[i], w[i], tol)
		if d > maxDiff {
			maxDiff = d
		}
		if !ok {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%w: %d of %d elements outside |got-want| <= %g + %g*|want| (max abs diff %g); first at %v: got %g, want %g",
			ErrMismatch, bad, len(w), tol.Abs, tol.Rel, maxDiff, unravel(first, shape), g[first], w[first])
	}
	return nil
}

// floatClose reports whether got is within tol of want, and their absolute
// difference (+Inf when one is NaN or infinite and the other is not).
func floatClose(got, want float64, tol Tolerance) (float64, bool) {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		if math.IsNaN(want) && math.IsNaN(got) {
			return 0, true
		}
		return math.Inf(1), false
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		if got == want {
			return 0, true
		}
		return math.Inf(1), false
	}
	d := math.Abs(got - want)
	return d, d <= tol.Abs+tol.Rel*math.Abs(want)
}

// MaxAbsDiff returns the largest |got-want| over the elements of two tensors
// of the same shape (any element types), treating a NaN matched by a NaN as
// no difference.
func MaxAbsDiff(got, want *tensor.Tensor) (float64, error) {
	if !got.Shape().Equal(want.Shape()) {
		return 0, fmt.Errorf("%w: shape %v, want %v", ErrMismatch, got.Shape(), want.Shape())
	}
	g, w := got.Float64s(), want.Float64s()
	m := 0.0
	for i := range w {
		if d, _ := floatClose(g[i], w[i], Tolerance{}); d > m {
			m = d
		}
	}
	return m, nil
}

// int64s returns the elements of an integer or boolean tensor of any layout
// as int64, exactly (Float64s would round int64 values above 2^53).
func int64s(x *tensor.Tensor) ([]int64, error) {
	out, ok := x.Int64s()
	if !ok {
		return nil, fmt.Errorf("%w: cannot compare elements of type %v", ErrMismatch, x.Type())
	}
	return out, nil
}

// unravel turns a flat row-major index into per-axis coordinates.
func unravel(i int, s tensor.Shape) []int64 {
	c := make([]int64, len(s))
	for a := len(s) - 1; a >= 0; a-- {
		if s[a] > 0 {
			c[a] = int64(i) % s[a]
			i /= int(s[a])
		}
	}
	return c
}

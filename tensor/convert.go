package tensor

import (
	"fmt"
	"math"
)

// Convert returns a new contiguous tensor with x's shape and elements
// converted to type t, following ONNX Cast:
//
//   - float -> integer truncates toward zero (to I4 and U4 it rounds to
//     nearest even, as ONNX's reference Cast does). A NaN becomes 0 and a value
//     outside the target range saturates to its minimum or maximum (Go's own
//     float-to-int conversion is implementation-defined there, so clinfer
//     defines it to give the same answer on every platform).
//   - integer -> narrower integer wraps (two's complement), as a Go
//     conversion does, except to the 4-bit types I4 and U4, which saturate
//     (ONNX's reference casts to them clip).
//   - anything -> boolean is x != 0 (so NaN is true); boolean -> number is 0
//     or 1.
//   - f16 and bf16 are read and written through float32, rounding to nearest
//     even; f64 -> f16 therefore rounds twice, as ONNX Runtime does.
//   - the 8-bit floats round to nearest even and saturate (Cast's default
//     saturate=1; see Cast for saturate=0).
//   - numbers -> string is their shortest decimal form that reads back to
//     the same value ("0.9767611", "1.0", "1e-05", "NaN", "INF", "-INF");
//     string -> number parses it (a float, "NaN", "INF", "+INF", "-INF" in
//     any case, or an integer), an error naming the element otherwise.
//
// Converting to x's own type returns a dense copy. x may be a strided view.
func (x *Tensor) Convert(t ElementType) (*Tensor, error) { return x.Cast(t, true) }

// Cast is Convert with ONNX Cast's saturate attribute, which applies to
// conversions to the 8-bit floats: true clamps values beyond the type's
// range to its largest finite value, false makes them infinite or NaN.
func (x *Tensor) Cast(t ElementType, saturate bool) (*Tensor, error) {
	if !t.Valid() {
		return nil, fmt.Errorf("%w: cannot convert %v to %v", ErrType, x, t)
	}
	if !x.typ.Valid() || x.kind != KindTensor {
		return nil, fmt.Errorf("%w: cannot convert %v to %v", ErrType, x, t)
	}
	src := x.Contiguous()
	if t == x.typ {
		return src.Clone(), nil
	}
	dst, err := New(t, x.shape)
	if err != nil {
		return nil, err
	}
	if fastConvert(dst, src) {
		return dst, nil
	}
	n := int(x.NumElements())
	switch {
	case x.typ == String:
		return dst, parseStrings(dst, src.stringData(), saturate)
	case t == String:
		formatStrings(dst.strs, src)
		return dst, nil
	case x.typ.IsFloat() || x.typ.IsFloat8() || (x.typ == U64 && !t.IsInteger()):
		get := floatGetter(src)
		set := floatSetter(dst, saturate)
		for i := range n {
			set(i, get(i))
		}
		return dst, nil
	}
	get := intGetter(src)
	set := intSetter(dst)
	for i := range n {
		set(i, get(i))
	}
	return dst, nil
}

// fastConvert handles the float pairs that hot paths use without going
// through per-element closures. It reports whether it did the work.
func fastConvert(dst, src *Tensor) bool {
	switch {
	case src.typ == F32 && dst.typ == F16:
		F32ToF16Slice(dst.F16(), src.F32())
	case src.typ == F16 && dst.typ == F32:
		F16ToF32Slice(dst.F32(), src.F16())
	case src.typ == F32 && dst.typ == BF16:
		F32ToBF16Slice(dst.BF16(), src.F32())
	case src.typ == BF16 && dst.typ == F32:
		BF16ToF32Slice(dst.F32(), src.BF16())
	case src.typ == F32 && dst.typ == F64:
		d := dst.F64()
		for i, v := range src.F32() {
			d[i] = float64(v)
		}
	case src.typ == F64 && dst.typ == F32:
		d := dst.F32()
		for i, v := range src.F64() {
			d[i] = float32(v)
		}
	default:
		return false
	}
	return true
}

// floatGetter reads element i of a contiguous floating-point tensor.
func floatGetter(x *Tensor) func(int) float64 {
	switch x.typ {
	case F32:
		s := x.F32()
		return func(i int) float64 { return float64(s[i]) }
	case F64:
		s := x.F64()
		return func(i int) float64 { return s[i] }
	case F16:
		s := x.F16()
		return func(i int) float64 { return float64(F16ToFloat32(s[i])) }
	case BF16:
		s := x.BF16()
		return func(i int) float64 { return float64(BF16ToFloat32(s[i])) }
	case U64:
		s := x.U64()
		return func(i int) float64 { return float64(s[i]) }
	case F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ:
		s, f := x.data[x.offset:x.offset+x.NumElements()], float8FormatOf(x.typ)
		return func(i int) float64 { return f.decode(s[i]) }
	}
	panic("tensor: floatGetter on " + x.typ.String())
}

// intGetter reads element i of a contiguous integer or boolean tensor.
func intGetter(x *Tensor) func(int) int64 {
	switch x.typ {
	case I8:
		s := x.I8()
		return func(i int) int64 { return int64(s[i]) }
	case U8:
		s := x.U8()
		return func(i int) int64 { return int64(s[i]) }
	case I16:
		s := x.I16()
		return func(i int) int64 { return int64(s[i]) }
	case U16:
		s := x.U16()
		return func(i int) int64 { return int64(s[i]) }
	case I4:
		s := x.I4()
		return func(i int) int64 { return int64(s[i]) }
	case U4:
		s := x.U4()
		return func(i int) int64 { return int64(s[i]) }
	case I32:
		s := x.I32()
		return func(i int) int64 { return int64(s[i]) }
	case I64:
		s := x.I64()
		return func(i int) int64 { return s[i] }
	case U32:
		s := x.U32()
		return func(i int) int64 { return int64(s[i]) }
	case U64:
		s := x.U64()
		return func(i int) int64 { return int64(s[i]) }
	case Bool:
		s := typed[uint8](x) // any nonzero byte counts as true
		return func(i int) int64 {
			if s[i] != 0 {
				return 1
			}
			return 0
		}
	}
	panic("tensor: intGetter on " + x.typ.String())
}

// truncSat truncates v toward zero and clamps it to [lo, hi]; NaN gives 0.
// hi is compared as a float64 with >=, so for i64 (whose maximum 2^63-1 is
// not a float64) every value from 2^63 up saturates.
func truncSat(v float64, lo, hi int64) int64 {
	switch {
	case math.IsNaN(v):
		return 0
	case v >= float64(hi):
		return hi
	case v <= float64(lo):
		return lo
	}
	return int64(math.Trunc(v))
}

// truncSatU64 is truncSat for u64, whose range is not that of an int64.
func truncSatU64(v float64) uint64 {
	switch {
	case math.IsNaN(v) || v <= 0:
		return 0
	case v >= math.MaxUint64:
		return math.MaxUint64
	}
	return uint64(math.Trunc(v))
}

// floatSetter writes a float64 into element i of a contiguous tensor of any
// numeric or boolean type, with Convert's float-source semantics
// (saturate applies to the 8-bit floats).
func floatSetter(x *Tensor, saturate bool) func(int, float64) {
	switch x.typ {
	case F32:
		d := x.F32()
		return func(i int, v float64) { d[i] = float32(v) }
	case F64:
		d := x.F64()
		return func(i int, v float64) { d[i] = v }
	case F16:
		d := x.F16()
		return func(i int, v float64) { d[i] = Float32ToF16(float32(v)) }
	case BF16:
		d := x.BF16()
		return func(i int, v float64) { d[i] = Float32ToBF16(float32(v)) }
	case I8:
		d := x.I8()
		return func(i int, v float64) { d[i] = int8(truncSat(v, math.MinInt8, math.MaxInt8)) }
	case U8:
		d := x.U8()
		return func(i int, v float64) { d[i] = uint8(truncSat(v, 0, math.MaxUint8)) }
	case I16:
		d := x.I16()
		return func(i int, v float64) { d[i] = int16(truncSat(v, math.MinInt16, math.MaxInt16)) }
	case U16:
		d := x.U16()
		return func(i int, v float64) { d[i] = uint16(truncSat(v, 0, math.MaxUint16)) }
	case I4:
		d := x.I4()
		return func(i int, v float64) { d[i] = int8(truncSat(math.RoundToEven(v), -8, 7)) }
	case U4:
		d := x.U4()
		return func(i int, v float64) { d[i] = uint8(truncSat(math.RoundToEven(v), 0, 15)) }
	case I32:
		d := x.I32()
		return func(i int, v float64) { d[i] = int32(truncSat(v, math.MinInt32, math.MaxInt32)) }
	case I64:
		d := x.I64()
		return func(i int, v float64) { d[i] = truncSat(v, math.MinInt64, math.MaxInt64) }
	case U32:
		d := x.U32()
		return func(i int, v float64) { d[i] = uint32(truncSat(v, 0, math.MaxUint32)) }
	case U64:
		d := x.U64()
		return func(i int, v float64) { d[i] = truncSatU64(v) }
	case F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ:
		d, f := x.data[x.offset:x.offset+x.NumElements()], float8FormatOf(x.typ)
		return func(i int, v float64) { d[i] = f.encode(float64(float32(v)), saturate) }
	case Bool:
		d := x.Bool()
		return func(i int, v float64) { d[i] = v != 0 }
	}
	panic("tensor: floatSetter on " + x.typ.String())
}

// intSetter writes an int64 into element i of a contiguous tensor of any
// type, with Convert's integer-source semantics (wrapping).
func intSetter(x *Tensor) func(int, int64) {
	switch x.typ {
	case F32:
		d := x.F32()
		return func(i int, v int64) { d[i] = float32(v) }
	case F64:
		d := x.F64()
		return func(i int, v int64) { d[i] = float64(v) }
	case F16:
		d := x.F16()
		return func(i int, v int64) { d[i] = Float32ToF16(float32(v)) }
	case BF16:
		d := x.BF16()
		return func(i int, v int64) { d[i] = Float32ToBF16(float32(v)) }
	case I8:
		d := x.I8()
		return func(i int, v int64) { d[i] = int8(v) }
	case U8:
		d := x.U8()
		return func(i int, v int64) { d[i] = uint8(v) }
	case I16:
		d := x.I16()
		return func(i int, v int64) { d[i] = int16(v) }
	case U16:
		d := x.U16()
		return func(i int, v int64) { d[i] = uint16(v) }
	case I4:
		d := x.I4()
		return func(i int, v int64) { d[i] = int8(min(max(v, -8), 7)) }
	case U4:
		d := x.U4()
		return func(i int, v int64) { d[i] = uint8(min(max(v, 0), 15)) }
	case I32:
		d := x.I32()
		return func(i int, v int64) { d[i] = int32(v) }
	case I64:
		d := x.I64()
		return func(i int, v int64) { d[i] = v }
	case U32:
		d := x.U32()
		return func(i int, v int64) { d[i] = uint32(v) }
	case U64:
		d := x.U64()
		return func(i int, v int64) { d[i] = uint64(v) }
	case F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ:
		d, f := x.data[x.offset:x.offset+x.NumElements()], float8FormatOf(x.typ)
		return func(i int, v int64) { d[i] = f.encode(float64(float32(v)), true) }
	case Bool:
		d := x.Bool()
		return func(i int, v int64) { d[i] = v != 0 }
	}
	panic("tensor: intSetter on " + x.typ.String())
}

// Float64s returns a copy of x's elements as float64 in row-major order,
// whatever x's type and layout (views included). Booleans become 0 or 1;
// i64 values beyond ±2^53 are rounded to the nearest float64; strings are
// parsed as Convert does (NaN for one that is not a number).
func (x *Tensor) Float64s() []float64 {
	if !x.typ.Valid() || x.kind != KindTensor {
		return nil
	}
	src := x.Contiguous()
	n := int(x.NumElements())
	out := make([]float64, n)
	switch {
	case x.typ == F64:
		copy(out, src.F64())
		return out
	case x.typ == String:
		for i, e := range src.stringData() {
			v, err := parseFloat(e)
			if err != nil {
				v = math.NaN()
			}
			out[i] = v
		}
		return out
	}
	if x.typ.IsFloat() || x.typ.IsFloat8() || x.typ == U64 {
		get := floatGetter(src)
		for i := range out {
			out[i] = get(i)
		}
		return out
	}
	get := intGetter(src)
	for i := range out {
		out[i] = float64(get(i))
	}
	return out
}

// Int64s returns a copy of the elements of an integer or boolean tensor
// (any layout) as int64, exactly (u64 beyond 2^63-1 wraps, as a C cast
// does), in row-major order; ok is false for the other types.
func (x *Tensor) Int64s() ([]int64, bool) {
	if !x.typ.Valid() || !(x.typ.IsInteger() || x.typ == Bool) || x.kind != KindTensor {
		return nil, false
	}
	src := x.Contiguous()
	get := intGetter(src)
	out := make([]int64, x.NumElements())
	for i := range out {
		out[i] = get(i)
	}
	return out, true
}

// FromFloat64s returns a contiguous tensor of type t and the given shape
// whose elements are v converted with Convert's semantics (truncation and
// saturation for integers, v != 0 for boolean). len(v) must equal the
// shape's number of elements.
func FromFloat64s(t ElementType, shape Shape, v []float64) (*Tensor, error) {
	x, err := New(t, shape)
	if err != nil {
		return nil, err
	}
	if int64(len(v)) != shape.NumElements() {
		return nil, fmt.Errorf("%w: shape %v holds %d elements, got %d values", ErrShape, shape, shape.NumElements(), len(v))
	}
	if t == String {
		formatFloats(x.strs, v)
		return x, nil
	}
	set := floatSetter(x, true)
	for i, f := range v {
		set(i, f)
	}
	return x, nil
}

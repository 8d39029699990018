package tensor

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"
)

// stringHeader is what one element of a String tensor takes besides its
// bytes (a Go string header), counted by ByteSize.
const stringHeader = int64(unsafe.Sizeof(""))

// stringData is the elements of a contiguous String tensor, sharing memory
// with it.
func (x *Tensor) stringData() []string {
	return x.strs[x.offset : x.offset+x.NumElements()]
}

// FromStrings returns a contiguous String tensor of shape holding a copy
// of v.
func FromStrings(shape Shape, v []string) (*Tensor, error) { return fromSlice(String, shape, v) }

// formatFloat is the shortest decimal form of v that reads back as the
// same float of the given bit size, written as numpy writes floats:
// positional from 1e-4 up to 1e16 with at least one digit after the point
// ("1.0", "0.9767611"), scientific outside ("1e-05", "1.5e+20"); "NaN",
// "INF" and "-INF" are the spellings ONNX Cast parses back.
func formatFloat(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "INF"
	case math.IsInf(v, -1):
		return "-INF"
	}
	if a := math.Abs(v); a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.FormatFloat(v, 'e', -1, bits)
	}
	s := strconv.FormatFloat(v, 'f', -1, bits)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// formatFloats writes the float32 forms of v into dst.
func formatFloats(dst []string, v []float64) {
	for i, f := range v {
		dst[i] = formatFloat(float64(float32(f)), 32)
	}
}

// formatStrings writes the string form of each element of the contiguous
// tensor src into dst (see Convert).
func formatStrings(dst []string, src *Tensor) {
	switch {
	case src.typ == F64:
		for i, v := range src.F64() {
			dst[i] = formatFloat(v, 64)
		}
	case src.typ == Bool:
		for i, v := range src.Bool() {
			dst[i] = strings.ToUpper(strconv.FormatBool(v)[:1]) + strconv.FormatBool(v)[1:]
		}
	case src.typ == U64:
		for i, v := range src.U64() {
			dst[i] = strconv.FormatUint(v, 10)
		}
	case src.typ.IsInteger():
		get := intGetter(src)
		for i := range dst {
			dst[i] = strconv.FormatInt(get(i), 10)
		}
	default: // f32, f16, bf16 and the 8-bit floats: float32 values
		get := floatGetter(src)
		for i := range dst {
			dst[i] = formatFloat(get(i), 32)
		}
	}
}

// parseFloat parses a number as Cast reads strings: a decimal or
// scientific float, "NaN", "INF", "+INF", "-INF" (any case, "Infinity"
// too), or the "True" and "False" that booleans become.
func parseFloat(s string) (float64, error) {
	s = strings.TrimSpace(s)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if b, berr := strconv.ParseBool(s); berr == nil {
			if b {
				return 1, nil
			}
			return 0, nil
		}
	}
	return v, err
}

// parseStrings converts src into the contiguous tensor dst of a numeric or
// boolean type (see Convert): integers are parsed exactly where the string
// is an integer, through a float (truncated, saturated) otherwise.
func parseStrings(dst *Tensor, src []string, saturate bool) error {
	bad := func(i int, err error) error {
		return fmt.Errorf("%w: element %d, %q, is not a %v number: %v", ErrType, i, src[i], dst.typ, err)
	}
	if dst.typ == Bool {
		d := dst.Bool()
		for i, s := range src {
			if b, err := strconv.ParseBool(strings.TrimSpace(s)); err == nil {
				d[i] = b
				continue
			}
			v, err := parseFloat(s)
			if err != nil {
				return bad(i, err)
			}
			d[i] = v != 0
		}
		return nil
	}
	fset := floatSetter(dst, saturate)
	if !dst.typ.IsInteger() {
		for i, s := range src {
			v, err := parseFloat(s)
			if err != nil {
				return bad(i, err)
			}
			fset(i, v)
		}
		return nil
	}
	iset := intSetter(dst)
	lo, hi := integerRange(dst.typ)
	for i, s := range src {
		t := strings.TrimSpace(s)
		if dst.typ == U64 {
			if u, err := strconv.ParseUint(t, 10, 64); err == nil {
				dst.U64()[i] = u
				continue
			}
		} else if v, err := strconv.ParseInt(t, 10, 64); err == nil && v >= lo && v <= hi {
			iset(i, v)
			continue
		}
		v, err := parseFloat(t)
		if err != nil {
			return bad(i, err)
		}
		fset(i, v)
	}
	return nil
}

// integerRange is the smallest and largest value of a signed or unsigned
// integer type up to 32 bits, and of i64 (u64 is handled apart).
func integerRange(t ElementType) (lo, hi int64) {
	switch t {
	case I8:
		return math.MinInt8, math.MaxInt8
	case U8:
		return 0, math.MaxUint8
	case I16:
		return math.MinInt16, math.MaxInt16
	case U16:
		return 0, math.MaxUint16
	case I32:
		return math.MinInt32, math.MaxInt32
	case U32:
		return 0, math.MaxUint32
	}
	return math.MinInt64, math.MaxInt64
}

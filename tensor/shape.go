package tensor

import (
	"fmt"
	"strconv"
	"strings"
)

// Shape is a static (fully known) tensor shape. A nil or empty Shape is a
// scalar.
type Shape []int64

// NumElements is the product of the dimensions (1 for a scalar).
func (s Shape) NumElements() int64 {
	n := int64(1)
	for _, d := range s {
		n *= d
	}
	return n
}

// Rank is the number of dimensions.
func (s Shape) Rank() int { return len(s) }

// Equal reports whether two shapes have the same dimensions.
func (s Shape) Equal(o Shape) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy of s that shares no memory with it.
func (s Shape) Clone() Shape {
	if s == nil {
		return nil
	}
	return append(Shape{}, s...)
}

// String formats the shape as "[1,3,224,224]".
func (s Shape) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(d, 10))
	}
	b.WriteByte(']')
	return b.String()
}

// Validate returns an error if any dimension is negative.
func (s Shape) Validate() error {
	for i, d := range s {
		if d < 0 {
			return fmt.Errorf("tensor: shape %v: dimension %d is negative", []int64(s), i)
		}
	}
	return nil
}

// ContiguousStrides returns the row-major strides, in elements, of s.
func ContiguousStrides(s Shape) []int64 {
	st := make([]int64, len(s))
	acc := int64(1)
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= s[i]
	}
	return st
}

// ParseShape parses "[1,3,48,192]", "1,3,48,192" or "1x3x48x192". A "?" or
// "-1" dimension is returned as -1 (dynamic); callers that need a static
// shape check with Validate.
func ParseShape(str string) (Shape, error) {
	str = strings.TrimSpace(str)
	str = strings.TrimPrefix(str, "[")
	str = strings.TrimSuffix(str, "]")
	if str == "" {
		return Shape{}, nil
	}
	sep := ","
	if !strings.Contains(str, ",") && strings.Contains(str, "x") {
		sep = "x"
	}
	parts := strings.Split(str, sep)
	s := make(Shape, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "?" {
			s[i] = -1
			continue
		}
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < -1 {
			return nil, fmt.Errorf("tensor: bad shape %q: dimension %d is %q, want a non-negative integer or ?", str, i, p)
		}
		s[i] = v
	}
	return s, nil
}

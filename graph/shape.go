package graph

import (
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/tensor"
)

// Dim is one dimension of a PartialShape: a static size (Size >= 0) or a
// dynamic one (Size < 0), which may carry a symbolic name from the model
// ("batch", "N") and bounds (OpenVINO IR's "1..10").
type Dim struct {
	Size int64
	Name string
	// Min and Max bound a dynamic dimension: the smallest and the largest
	// size it takes, 0 for no bound (a static dimension has none).
	Min, Max int64
}

// DynamicDim returns a dynamic dimension with an optional symbolic name.
func DynamicDim(name string) Dim { return Dim{Size: -1, Name: name} }

// StaticDim returns a static dimension.
func StaticDim(n int64) Dim { return Dim{Size: n} }

// IsStatic reports whether the dimension's size is known.
func (d Dim) IsStatic() bool { return d.Size >= 0 }

// BoundedDim returns a dynamic dimension that takes sizes lo..hi (hi 0
// for no upper bound).
func BoundedDim(lo, hi int64) Dim { return Dim{Size: -1, Min: lo, Max: hi} }

// Bounded reports whether a dynamic dimension has a bound.
func (d Dim) Bounded() bool { return !d.IsStatic() && (d.Min > 0 || d.Max > 0) }

// Contains reports whether size is one the dimension takes: its size, or
// any within a dynamic dimension's bounds.
func (d Dim) Contains(size int64) bool {
	if d.IsStatic() {
		return d.Size == size
	}
	return size >= d.Min && (d.Max == 0 || size <= d.Max)
}

// String formats a static dimension as its size and a dynamic one as "?" or
// its name, with its bounds ("1..10", "batch:1..8").
func (d Dim) String() string {
	if d.IsStatic() {
		return strconv.FormatInt(d.Size, 10)
	}
	s := "?"
	if d.Name != "" {
		s = d.Name
	}
	if d.Bounded() {
		b := ".."
		if d.Min > 0 {
			b = strconv.FormatInt(d.Min, 10) + b
		}
		if d.Max > 0 {
			b += strconv.FormatInt(d.Max, 10)
		}
		if d.Name == "" {
			return b
		}
		return s + ":" + b
	}
	return s
}

// PartialShape is a shape whose rank or dimensions may be unknown until
// inference. A PartialShape with RankKnown false has no Dims.
type PartialShape struct {
	Dims      []Dim
	RankKnown bool
}

// DynamicRank is the PartialShape of unknown rank.
var DynamicRank = PartialShape{}

// StaticShape converts a static tensor shape into a PartialShape.
func StaticShape(s tensor.Shape) PartialShape {
	p := PartialShape{Dims: make([]Dim, len(s)), RankKnown: true}
	for i, d := range s {
		p.Dims[i] = Dim{Size: d}
	}
	return p
}

// ShapeOf builds a PartialShape from sizes, where a negative size is dynamic.
func ShapeOf(sizes ...int64) PartialShape { return StaticShape(tensor.Shape(sizes)) }

// Rank is the number of dimensions, or -1 when the rank is unknown.
func (p PartialShape) Rank() int {
	if !p.RankKnown {
		return -1
	}
	return len(p.Dims)
}

// IsStatic reports whether the rank and every dimension are known.
func (p PartialShape) IsStatic() bool {
	if !p.RankKnown {
		return false
	}
	for _, d := range p.Dims {
		if !d.IsStatic() {
			return false
		}
	}
	return true
}

// ToShape returns the static shape and true, or nil and false when p is not
// static.
func (p PartialShape) ToShape() (tensor.Shape, bool) {
	if !p.IsStatic() {
		return nil, false
	}
	s := make(tensor.Shape, len(p.Dims))
	for i, d := range p.Dims {
		s[i] = d.Size
	}
	return s, true
}

// Clone returns a copy that shares no memory with p.
func (p PartialShape) Clone() PartialShape {
	if p.Dims == nil {
		return PartialShape{RankKnown: p.RankKnown}
	}
	return PartialShape{Dims: append([]Dim(nil), p.Dims...), RankKnown: p.RankKnown}
}

// Compatible reports whether a tensor of static shape s can be bound where p
// is expected: same rank, equal static dimensions and dynamic ones within
// their bounds.
func (p PartialShape) Compatible(s tensor.Shape) bool {
	if !p.RankKnown {
		return true
	}
	if len(p.Dims) != len(s) {
		return false
	}
	for i, d := range p.Dims {
		if !d.Contains(s[i]) {
			return false
		}
	}
	return true
}

// String formats the shape as "[1,3,?,batch]" or "[...]" for unknown rank.
func (p PartialShape) String() string {
	if !p.RankKnown {
		return "[...]"
	}
	parts := make([]string, len(p.Dims))
	for i, d := range p.Dims {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, ",") + "]"
}

package graph

import (
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/tensor"
)

// Dim is one dimension of a PartialShape: a static size (Size >= 0) or a
// dynamic one (Size < 0), which may carry a symbolic name from the model
// ("batch", "N").
type Dim struct {
	Size int64
	Name string
}

// DynamicDim returns a dynamic dimension with an optional symbolic name.
func DynamicDim(name string) Dim { return Dim{Size: -1, Name: name} }

// StaticDim returns a static dimension.
func StaticDim(n int64) Dim { return Dim{Size: n} }

// IsStatic reports whether the dimension's size is known.
func (d Dim) IsStatic() bool { return d.Size >= 0 }

// String formats a static dimension as its size and a dynamic one as "?" or
// its name.
func (d Dim) String() string {
	if d.IsStatic() {
		return strconv.FormatInt(d.Size, 10)
	}
	if d.Name != "" {
		return d.Name
	}
	return "?"
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
// is expected: same rank and equal static dimensions.
func (p PartialShape) Compatible(s tensor.Shape) bool {
	if !p.RankKnown {
		return true
	}
	if len(p.Dims) != len(s) {
		return false
	}
	for i, d := range p.Dims {
		if d.IsStatic() && d.Size != s[i] {
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

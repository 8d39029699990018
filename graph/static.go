package graph

import (
	"github.com/clinfer/clinfer/tensor"
)

// A small, bounded evaluator over the integer "shape arithmetic" real models
// do before a Reshape or Expand (Shape -> Gather/Slice -> Concat -> Reshape).
// It works on partially known values: an element taken from a dynamic
// dimension is unknown but keeps that dimension's symbolic name, so a Reshape
// fed Concat(Shape(x)[0], -1) keeps x's batch name.

const (
	// maxSymElems bounds the size of values the evaluator handles; shape
	// vectors are tiny, anything bigger is data.
	maxSymElems = 64
	// maxSymDepth bounds the recursion through producers.
	maxSymDepth = 32
)

// symInt is one element of a partially known integer value.
type symInt struct {
	v     int64
	known bool
	name  string // symbolic dimension name when !known
}

// symVal is a partially known integer tensor.
type symVal struct {
	typ   tensor.ElementType
	shape tensor.Shape
	vals  []symInt
}

func (s *symVal) allKnown() bool {
	for _, v := range s.vals {
		if !v.known {
			return false
		}
	}
	return true
}

type symEval struct {
	memo  map[Output]*symVal
	depth int
}

func newSymEval() *symEval { return &symEval{memo: map[Output]*symVal{}} }

// StaticValue returns the value of o when it is known before inference runs:
// a Constant's value, or the result of integer shape arithmetic (Shape,
// Gather, Slice, Concat, Unsqueeze, Squeeze, Reshape, Flatten, Identity,
// Cast, Add, Sub, Mul, Div) over constants and static dimensions. The
// returned tensor must not be modified.
func StaticValue(o Output) (*tensor.Tensor, bool) {
	if !o.Valid() {
		return nil, false
	}
	if o.Node.OpType == OpConstant {
		if o.Node.Value == nil {
			return nil, false
		}
		return o.Node.Value, true
	}
	v := newSymEval().eval(o)
	if v == nil || !v.allKnown() {
		return nil, false
	}
	ints := make([]int64, len(v.vals))
	for i, s := range v.vals {
		ints[i] = s.v
	}
	switch v.typ {
	case tensor.I64:
		t, err := tensor.FromI64(v.shape, ints)
		return t, err == nil
	case tensor.Bool:
		bs := make([]bool, len(ints))
		for i, x := range ints {
			bs[i] = x != 0
		}
		t, err := tensor.FromBool(v.shape, bs)
		return t, err == nil
	case tensor.I32:
		i32 := make([]int32, len(ints))
		for i, x := range ints {
			i32[i] = int32(x)
		}
		t, err := tensor.FromI32(v.shape, i32)
		return t, err == nil
	}
	return nil, false
}

func (e *symEval) eval(o Output) *symVal {
	if !o.Valid() {
		return nil
	}
	if v, ok := e.memo[o]; ok {
		return v
	}
	if e.depth >= maxSymDepth {
		return nil
	}
	e.depth++
	v := e.evalNode(o)
	e.depth--
	if v != nil && int64(len(v.vals)) != v.shape.NumElements() {
		v = nil
	}
	e.memo[o] = v
	return v
}

// outStatic returns the inferred static shape of o, if any.
func outStatic(o Output) (tensor.Shape, bool) { return o.Shape().ToShape() }

func (e *symEval) evalNode(o Output) *symVal {
	n := o.Node
	switch n.OpType {
	case OpConstant:
		if n.Value == nil || n.Value.NumElements() > maxSymElems {
			return nil
		}
		ints, ok := IntValues(n.Value)
		if !ok && n.Value.Type() == tensor.Bool {
			ints, ok = boolInts(n.Value), true
		}
		if !ok {
			return nil
		}
		v := &symVal{typ: n.Value.Type(), shape: n.Value.Shape().Clone(), vals: make([]symInt, len(ints))}
		for i, x := range ints {
			v.vals[i] = symInt{v: x, known: true}
		}
		return v
	case "Shape":
		in := n.Input(0)
		if !in.Valid() || !in.Shape().RankKnown {
			return nil
		}
		dims := in.Shape().Dims
		lo, hi := shapeRange(n, len(dims))
		v := &symVal{typ: tensor.I64, shape: tensor.Shape{int64(hi - lo)}}
		for _, d := range dims[lo:hi] {
			if d.IsStatic() {
				v.vals = append(v.vals, symInt{v: d.Size, known: true})
			} else {
				v.vals = append(v.vals, symInt{name: d.Name})
			}
		}
		return v
	case "Identity":
		return e.eval(n.Input(0))
	case "Cast":
		x := e.eval(n.Input(0))
		to := tensor.ElementType(n.Attrs.Int("to", 0))
		if x == nil || !to.IsInteger() && to != tensor.Bool {
			return nil
		}
		v := &symVal{typ: to, shape: x.shape, vals: x.vals}
		if to == tensor.Bool {
			v.vals = mapKnown(x.vals, func(a int64) int64 { return b2i(a != 0) })
		}
		return v
	case "Size":
		s, ok := outStatic(n.Input(0))
		if !ok {
			return nil
		}
		return &symVal{typ: tensor.I64, shape: tensor.Shape{}, vals: []symInt{{v: s.NumElements(), known: true}}}
	case "Not":
		x := e.eval(n.Input(0))
		if x == nil || x.typ != tensor.Bool {
			return nil
		}
		return &symVal{typ: tensor.Bool, shape: x.shape, vals: mapKnown(x.vals, func(a int64) int64 { return 1 - a })}
	case "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or":
		return e.arith(n)
	case "Unsqueeze", "Squeeze", "Reshape", "Flatten":
		x := e.eval(n.Input(0))
		s, ok := outStatic(o)
		if x == nil || !ok {
			return nil
		}
		return &symVal{typ: x.typ, shape: s, vals: x.vals}
	case "Gather":
		return e.gather(n)
	case "Slice":
		return e.slice(n)
	case "Concat":
		return e.concat(n)
	case "Add", "Sub", "Mul", "Div":
		return e.arith(n)
	}
	return nil
}

// knownInts evaluates o and returns its values when all are known.
func (e *symEval) knownInts(o Output) ([]int64, bool) {
	v := e.eval(o)
	if v == nil || !v.allKnown() {
		return nil, false
	}
	out := make([]int64, len(v.vals))
	for i, s := range v.vals {
		out[i] = s.v
	}
	return out, true
}

func (e *symEval) gather(n *Node) *symVal {
	data := e.eval(n.Input(0))
	idx, ok := e.knownInts(n.Input(1))
	if data == nil || !ok || len(data.shape) != 1 || n.Attrs.Int("axis", 0) != 0 && n.Attrs.Int("axis", 0) != -1 {
		return nil
	}
	ishape, ok := outStatic(n.Input(1))
	if !ok {
		return nil
	}
	size := int64(len(data.vals))
	v := &symVal{typ: data.typ, shape: ishape.Clone()}
	for _, i := range idx {
		if i < 0 {
			i += size
		}
		if i < 0 || i >= size {
			return nil
		}
		v.vals = append(v.vals, data.vals[i])
	}
	return v
}

func (e *symEval) slice(n *Node) *symVal {
	data := e.eval(n.Input(0))
	if data == nil || len(data.shape) != 1 {
		return nil
	}
	starts, ok1 := e.knownInts(n.Input(1))
	ends, ok2 := e.knownInts(n.Input(2))
	if !ok1 || !ok2 || len(starts) != 1 || len(ends) != 1 {
		return nil
	}
	if in := n.Input(3); in.Valid() {
		axes, ok := e.knownInts(in)
		if !ok || len(axes) != 1 || (axes[0] != 0 && axes[0] != -1) {
			return nil
		}
	}
	step := int64(1)
	if in := n.Input(4); in.Valid() {
		steps, ok := e.knownInts(in)
		if !ok || len(steps) != 1 || steps[0] == 0 {
			return nil
		}
		step = steps[0]
	}
	size := int64(len(data.vals))
	start, _, count := SliceBounds(starts[0], ends[0], step, size)
	v := &symVal{typ: data.typ, shape: tensor.Shape{count}}
	for i := range count {
		v.vals = append(v.vals, data.vals[start+i*step])
	}
	return v
}

func (e *symEval) concat(n *Node) *symVal {
	v := &symVal{}
	for i, in := range n.Inputs {
		x := e.eval(in)
		if x == nil || len(x.shape) != 1 {
			return nil
		}
		if i == 0 {
			v.typ = x.typ
		}
		v.vals = append(v.vals, x.vals...)
	}
	if len(v.vals) > maxSymElems {
		return nil
	}
	v.shape = tensor.Shape{int64(len(v.vals))}
	return v
}

func (e *symEval) arith(n *Node) *symVal {
	a, b := e.eval(n.Input(0)), e.eval(n.Input(1))
	if a == nil || b == nil {
		return nil
	}
	var shape tensor.Shape
	switch {
	case len(a.vals) == 1 && len(a.shape) <= len(b.shape):
		shape = b.shape
	case len(b.vals) == 1 && len(b.shape) <= len(a.shape):
		shape = a.shape
	case a.shape.Equal(b.shape):
		shape = a.shape
	default:
		return nil
	}
	cnt := shape.NumElements()
	v := &symVal{typ: a.typ, shape: shape.Clone(), vals: make([]symInt, cnt)}
	if cmp, ok := comparisons[n.OpType]; ok {
		// Comparisons and logic: a bool of known operands only.
		v.typ = tensor.Bool
		for i := range cnt {
			x, y := a.vals[min(i, int64(len(a.vals))-1)], b.vals[min(i, int64(len(b.vals))-1)]
			if x.known && y.known {
				v.vals[i] = symInt{v: b2i(cmp(x.v, y.v)), known: true}
			}
		}
		return v
	}
	for i := range cnt {
		x, y := a.vals[min(i, int64(len(a.vals))-1)], b.vals[min(i, int64(len(b.vals))-1)]
		if !x.known || !y.known {
			// x+0, x-0, x*1 and x/1 keep a symbolic dimension's name.
			if !x.known && y.known && (y.v == 0 && (n.OpType == "Add" || n.OpType == "Sub") || y.v == 1 && (n.OpType == "Mul" || n.OpType == "Div")) {
				v.vals[i] = x
			}
			continue
		}
		r := symInt{known: true}
		switch n.OpType {
		case "Add":
			r.v = x.v + y.v
		case "Sub":
			r.v = x.v - y.v
		case "Mul":
			r.v = x.v * y.v
		case "Div":
			if y.v == 0 {
				return nil
			}
			r.v = x.v / y.v
		}
		v.vals[i] = r
	}
	return v
}

// comparisons are the comparison and logic ops the evaluator folds.
var comparisons = map[string]func(a, b int64) bool{
	"Equal": func(a, b int64) bool { return a == b }, "Greater": func(a, b int64) bool { return a > b },
	"Less": func(a, b int64) bool { return a < b }, "GreaterOrEqual": func(a, b int64) bool { return a >= b },
	"LessOrEqual": func(a, b int64) bool { return a <= b },
	"And":         func(a, b int64) bool { return a != 0 && b != 0 }, "Or": func(a, b int64) bool { return a != 0 || b != 0 },
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// mapKnown applies f to the known elements of vals.
func mapKnown(vals []symInt, f func(int64) int64) []symInt {
	out := make([]symInt, len(vals))
	for i, x := range vals {
		if x.known {
			out[i] = symInt{v: f(x.v), known: true}
		}
	}
	return out
}

// boolInts returns a bool tensor's elements as 0 and 1.
func boolInts(t *tensor.Tensor) []int64 {
	bs := t.Contiguous().Bool()
	out := make([]int64, len(bs))
	for i, b := range bs {
		out[i] = b2i(b)
	}
	return out
}

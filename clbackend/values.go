package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// The values of a plan as the builder makes and reads them: node outputs,
// temporaries, host tables of kernel parameters, zero-copy aliases.

// newValue adds a value and returns its index.
func (b *builder) newValue(t tensor.ElementType, s tensor.Shape, host *tensor.Tensor) int {
	bytes, _ := s.Bytes(t) // checkOutput and foldSize refuse what overflows
	v := value{typ: t, shape: s.Clone(), bytes: int(bytes), host: host, buf: -1, first: unset, last: unset}
	v.root = len(b.pl.values)
	b.pl.values = append(b.pl.values, v)
	return v.root
}

// in returns the value of input i of n, or -1 when it is omitted.
func (b *builder) in(n *graph.Node, i int) int {
	if i >= len(n.Inputs) || !n.Inputs[i].Valid() {
		return -1
	}
	return b.of[n.Inputs[i]]
}

// out returns the value of output i of n.
func (b *builder) out(n *graph.Node, i int) int { return b.of[n.Out(i)] }

// val returns value v.
func (b *builder) val(v int) *value { return &b.pl.values[v] }

// hostInts returns the integer contents of a host-known value.
func (b *builder) hostInts(v int) ([]int64, bool) {
	if v < 0 || b.pl.values[v].host == nil {
		return nil, false
	}
	f := b.pl.values[v].host.Float64s()
	out := make([]int64, len(f))
	for i, x := range f {
		out[i] = int64(x)
	}
	return out, true
}

// hostFloat returns the first element of a host-known value.
func (b *builder) hostFloat(v int) (float64, bool) {
	if v < 0 || b.pl.values[v].host == nil || b.pl.values[v].host.NumElements() == 0 {
		return 0, false
	}
	return b.pl.values[v].host.Float64s()[0], true
}

// meta adds a host int32 table (kernel parameters) and returns its arg.
func (b *builder) meta(ints []int64) slotArg {
	v := make([]int32, max(len(ints), 1))
	for i, x := range ints {
		v[i] = int32(x)
	}
	t, _ := tensor.FromI32(tensor.Shape{int64(len(v))}, v)
	return slotArg(b.newValue(tensor.I32, t.Shape(), t))
}

// floats adds a host f32 table and returns its arg.
func (b *builder) floats(f []float32) slotArg {
	if len(f) == 0 {
		f = []float32{0}
	}
	t, _ := tensor.FromF32(tensor.Shape{int64(len(f))}, f)
	return slotArg(b.newValue(tensor.F32, t.Shape(), t))
}

// temp adds a device temporary.
func (b *builder) temp(t tensor.ElementType, s tensor.Shape) int { return b.newValue(t, s, nil) }

// alias makes value out share the device memory of value in (zero copy).
func (b *builder) alias(out, in int) {
	iv := b.pl.values[in]
	ov := &b.pl.values[out]
	if iv.host != nil {
		h, err := iv.host.Reshape(ov.shape)
		if err == nil {
			ov.host = h
			return
		}
	}
	ov.root, ov.off = iv.root, iv.off
}

// memKey names the device memory value v is bound to when the tuner runs
// a node alone (tuner.go): its root's index, or, for a value at an offset
// in its root (a Concat's input written in place), a key of its own
// (-2 - v), so that it gets a buffer of its own size holding its data.
func (b *builder) memKey(v int) int {
	if b.val(v).off != 0 {
		return -2 - v
	}
	return b.val(v).root
}

// memVal is the value whose size and host data the memory of memKey(v)
// takes: v's root, or v itself at an offset.
func (b *builder) memVal(v int) *value {
	if b.val(v).off != 0 {
		return b.val(v)
	}
	return b.val(b.val(v).root)
}

package graph

import (
	"math"

	"github.com/clinfer/clinfer/tensor"
)

// tensor writes a tensor value: its type, shape and data (raw
// little-endian bytes, or each string of a String tensor).
func (e *encoder) tensor(t *tensor.Tensor) {
	c := t.Contiguous()
	e.buf.WriteByte(byte(c.Type()))
	e.uvarint(uint64(c.Rank()))
	for _, d := range c.Shape() {
		e.varint(d)
	}
	if c.Type() == tensor.String {
		for _, s := range c.Strings() {
			e.str(s)
		}
		return
	}
	raw := c.Bytes()
	e.uvarint(uint64(len(raw)))
	if e.w != nil && len(raw) >= streamMin {
		if e.flush() == nil {
			_, e.err = e.w.Write(raw)
		}
		return
	}
	e.buf.Write(raw)
}

func (d *decoder) tensor() *tensor.Tensor {
	t := d.elemType(false, "tensor type")
	rank := d.Count("tensor rank", 1)
	shape := make(tensor.Shape, rank)
	elems := uint64(1)
	for i := 0; i < rank && d.Err == nil; i++ {
		v := d.Varint("tensor dimension")
		if v < 0 {
			d.Fail("tensor dimension %d is negative (%d)", i, v)
			return nil
		}
		shape[i] = v
		if elems != 0 && uint64(v) > math.MaxInt64/elems {
			d.Fail("tensor shape %v overflows", shape[:i+1])
			return nil
		}
		elems *= uint64(v)
	}
	if t == tensor.String {
		return d.strings(shape, elems)
	}
	n := d.Count("tensor byte size", 1)
	if d.Err != nil {
		return nil
	}
	size := uint64(t.Size())
	if elems > uint64(n) || elems*size != uint64(n) {
		d.Fail("tensor %v%v holds %d bytes, want %d", t, shape, n, elems*size)
		return nil
	}
	raw := d.Bytes(n, "tensor data")
	if d.Err != nil {
		return nil
	}
	x, err := tensor.FromBytes(t, shape, raw)
	if err != nil {
		d.Fail("tensor: %v", err)
		return nil
	}
	if t == tensor.Bool {
		// Only 0 and 1 are valid Go bools.
		b := x.Bytes()
		for i := range b {
			if b[i] > 1 {
				b[i] = 1
			}
		}
	}
	return x
}

// strings reads the elements of a String tensor of shape (elems of them),
// each a string whose length the stream bounds.
func (d *decoder) strings(shape tensor.Shape, elems uint64) *tensor.Tensor {
	if elems > uint64(d.Remaining()) { // every string takes at least its length byte
		d.Fail("string tensor %v holds more strings than the stream has bytes", shape)
		return nil
	}
	v := make([]string, elems)
	for i := range v {
		v[i] = d.Str("string element")
		if d.Err != nil {
			return nil
		}
	}
	x, err := tensor.FromStrings(shape, v)
	if err != nil {
		d.Fail("tensor: %v", err)
		return nil
	}
	return x
}

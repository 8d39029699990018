package wire

import (
	"encoding/binary"
	"fmt"
)

// Decoder reads an encoding from Data starting at Pos. The first error
// sticks in Err: later reads return zero values, so decoding code checks Err
// only at convenient points.
type Decoder struct {
	Data []byte
	Pos  int
	Err  error
	// Sentinel, when set, is wrapped by every error Fail records.
	Sentinel error
}

// Fail records an error at the current position unless one is recorded.
func (d *Decoder) Fail(format string, args ...any) {
	if d.Err != nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if d.Sentinel != nil {
		d.Err = fmt.Errorf("%w: at byte %d: %s", d.Sentinel, d.Pos, msg)
		return
	}
	d.Err = fmt.Errorf("at byte %d: %s", d.Pos, msg)
}

// failf is Fail with what (the field being read) in front when it is set.
func (d *Decoder) failf(what, format string, args ...any) {
	if what != "" {
		format = what + ": " + format
	}
	d.Fail(format, args...)
}

// Remaining is the number of bytes not read yet.
func (d *Decoder) Remaining() int { return len(d.Data) - d.Pos }

// Bytes returns the next n bytes (sharing Data).
func (d *Decoder) Bytes(n int, what string) []byte {
	if d.Err != nil {
		return nil
	}
	if n < 0 || n > d.Remaining() {
		d.failf(what, "need %d bytes, %d left", n, d.Remaining())
		return nil
	}
	b := d.Data[d.Pos : d.Pos+n]
	d.Pos += n
	return b
}

// Byte reads one byte.
func (d *Decoder) Byte(what string) byte {
	b := d.Bytes(1, what)
	if b == nil {
		return 0
	}
	return b[0]
}

// Uvarint reads an unsigned varint.
func (d *Decoder) Uvarint(what string) uint64 {
	if d.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.Data[d.Pos:])
	if n <= 0 {
		d.failf(what, "bad varint")
		return 0
	}
	d.Pos += n
	return v
}

// Varint reads a signed (zig-zag) varint.
func (d *Decoder) Varint(what string) int64 {
	if d.Err != nil {
		return 0
	}
	v, n := binary.Varint(d.Data[d.Pos:])
	if n <= 0 {
		d.failf(what, "bad varint")
		return 0
	}
	d.Pos += n
	return v
}

// maxUnsizedCount bounds a count whose items have no minimum size.
const maxUnsizedCount = 1 << 20

// Count reads a count of items that take at least minSize bytes each and
// checks that the rest of the input can hold them. With minSize <= 0 (items
// that may be empty) the count is bounded by 1<<20 instead.
func (d *Decoder) Count(what string, minSize int) int {
	v := d.Uvarint(what)
	if d.Err != nil {
		return 0
	}
	limit := uint64(maxUnsizedCount)
	if minSize > 0 {
		limit = uint64(d.Remaining() / minSize)
	}
	if v > limit {
		d.failf(what, "count %d does not fit in the %d bytes left", v, d.Remaining())
		return 0
	}
	return int(v)
}

// Str reads a length-prefixed string.
func (d *Decoder) Str(what string) string {
	n := d.Count(what, 1)
	return string(d.Bytes(n, what))
}

// U32 reads a little-endian uint32.
func (d *Decoder) U32(what string) uint32 {
	b := d.Bytes(4, what)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

// U64 reads a little-endian uint64.
func (d *Decoder) U64(what string) uint64 {
	b := d.Bytes(8, what)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

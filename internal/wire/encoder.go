package wire

import (
	"encoding/binary"
	"math"
)

// Encoder appends the encodings Decoder reads to Buf.
type Encoder struct {
	Buf []byte
}

// Uvarint appends an unsigned varint.
func (e *Encoder) Uvarint(v uint64) { e.Buf = binary.AppendUvarint(e.Buf, v) }

// Varint appends a signed (zig-zag) varint.
func (e *Encoder) Varint(v int64) { e.Buf = binary.AppendVarint(e.Buf, v) }

// Byte appends one byte.
func (e *Encoder) Byte(b byte) { e.Buf = append(e.Buf, b) }

// Str appends a length-prefixed string.
func (e *Encoder) Str(s string) { e.Uvarint(uint64(len(s))); e.Buf = append(e.Buf, s...) }

// Bytes appends length-prefixed bytes (read back with Count and Bytes).
func (e *Encoder) Bytes(b []byte) { e.Uvarint(uint64(len(b))); e.Buf = append(e.Buf, b...) }

// U32 appends a little-endian uint32.
func (e *Encoder) U32(v uint32) { e.Buf = binary.LittleEndian.AppendUint32(e.Buf, v) }

// U64 appends a little-endian uint64.
func (e *Encoder) U64(v uint64) { e.Buf = binary.LittleEndian.AppendUint64(e.Buf, v) }

// F64 appends a float64 as its IEEE 754 bits (read back with U64 and
// math.Float64frombits).
func (e *Encoder) F64(v float64) { e.U64(math.Float64bits(v)) }

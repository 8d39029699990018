package wire

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecoderReadsWhatWasWritten(t *testing.T) {
	var b []byte
	b = binary.AppendUvarint(b, 300)
	b = binary.AppendVarint(b, -7)
	b = binary.AppendUvarint(b, 3)
	b = append(b, "abc"...)
	b = binary.LittleEndian.AppendUint32(b, 0xdeadbeef)
	b = binary.LittleEndian.AppendUint64(b, 1<<40)
	b = append(b, 9)
	d := Decoder{Data: b}
	assert.Equal(t, uint64(300), d.Uvarint("a"))
	assert.Equal(t, int64(-7), d.Varint("b"))
	assert.Equal(t, "abc", d.Str("c"))
	assert.Equal(t, uint32(0xdeadbeef), d.U32("d"))
	assert.Equal(t, uint64(1<<40), d.U64("e"))
	assert.Equal(t, byte(9), d.Byte("f"))
	require.NoError(t, d.Err)
	assert.Zero(t, d.Remaining())
}

func TestDecoderErrorsStickAndBoundCounts(t *testing.T) {
	sentinel := errors.New("bad")
	// A count of 1000 strings in 3 bytes cannot fit.
	d := Decoder{Data: append(binary.AppendUvarint(nil, 1000), 1, 2, 3), Sentinel: sentinel}
	assert.Zero(t, d.Count("names", 1))
	require.Error(t, d.Err)
	assert.ErrorIs(t, d.Err, sentinel)
	assert.Contains(t, d.Err.Error(), "names: count 1000")
	first := d.Err
	assert.Zero(t, d.Uvarint("later"), "reads after an error return zero")
	assert.Same(t, first, d.Err, "the first error sticks")

	d = Decoder{Data: binary.AppendUvarint(nil, maxUnsizedCount+1)}
	assert.Zero(t, d.Count("sections", 0))
	assert.Error(t, d.Err, "counts of possibly empty items are bounded too")

	d = Decoder{Data: []byte{0x80}}
	d.Uvarint("")
	assert.EqualError(t, d.Err, "at byte 0: bad varint")
	d = Decoder{Data: []byte{1}}
	assert.Nil(t, d.Bytes(2, "payload"))
	assert.EqualError(t, d.Err, "at byte 0: payload: need 2 bytes, 1 left")
}

package npy

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/clinfer/clinfer/tensor"
)

// setStringDescr parses a NumPy string dtype: "<U<n>" (n UTF-32
// characters per element) or "|S<n>" (n bytes).
func (h *header) setStringDescr(d string) error {
	n, err := strconv.Atoi(d[2:])
	if err != nil || n < 0 || n > maxBytes/4 {
		return fmt.Errorf("%w: dtype %q (supported: %s)", ErrUnsupported, d, supportedDescrs)
	}
	h.typ, h.width, h.unit = tensor.String, n, 1
	if d[1] == 'U' {
		h.unit = 4
	}
	switch d[0] {
	case '<', '|', '=':
	case '>':
		h.bigEndian = true
	default:
		return fmt.Errorf("%w: dtype %q has byte order %q (want <, >, = or |)", ErrUnsupported, d, d[0])
	}
	return nil
}

// readStrings reads the data of a string array: fixed-width elements whose
// trailing NULs are padding.
func readStrings(r io.Reader, h *header) (*tensor.Tensor, error) {
	n := h.shape.NumElements()
	elem := int64(h.width * h.unit)
	raw, err := io.ReadAll(io.LimitReader(r, n*elem))
	if err != nil {
		return nil, fmt.Errorf("npy: reading %v data: %w", h.shape, err)
	}
	if int64(len(raw)) != n*elem {
		return nil, fmt.Errorf("%w: %s%v needs %d data bytes, file has %d", ErrFormat, h.descr, h.shape, n*elem, len(raw))
	}
	out := make([]string, n)
	var b strings.Builder
	for i := range out {
		e := raw[int64(i)*elem : int64(i+1)*elem]
		if h.unit == 1 {
			out[i] = strings.TrimRight(string(e), "\x00")
			continue
		}
		b.Reset()
		for j := 0; j+4 <= len(e); j += 4 {
			c := binary.LittleEndian.Uint32(e[j:])
			if h.bigEndian {
				c = binary.BigEndian.Uint32(e[j:])
			}
			if c == 0 {
				break
			}
			if c > utf8.MaxRune {
				return nil, fmt.Errorf("%w: element %d holds code point %#x, beyond Unicode", ErrFormat, i, c)
			}
			b.WriteRune(rune(c))
		}
		out[i] = b.String()
	}
	t, err := tensor.FromStrings(h.shape, out)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	return t, nil
}

// encodeStrings returns the "<U<n>" dtype and UTF-32 data of strings, n
// the longest one's length in characters (at least 1, as NumPy writes).
func encodeStrings(v []string) (string, []byte) {
	width := 1
	for _, s := range v {
		width = max(width, utf8.RuneCountInString(s))
	}
	data := make([]byte, len(v)*width*4)
	for i, s := range v {
		j := i * width * 4
		for _, c := range s {
			binary.LittleEndian.PutUint32(data[j:], uint32(c))
			j += 4
		}
	}
	return "<U" + strconv.Itoa(width), data
}

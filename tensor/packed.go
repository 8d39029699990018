package tensor

import "fmt"

// PackedBytes is the number of bytes n elements of t take in a packed
// serialisation (ONNX raw_data, external data): ceil(n/2) for I4 and U4,
// n*Size otherwise.
func PackedBytes(t ElementType, n int64) int64 {
	if t.Bits() == 4 {
		return (n + 1) / 2
	}
	return n * int64(t.Size())
}

// Pack4 returns the elements of an I4 or U4 tensor packed two to a byte,
// the first of each pair in the low nibble (ONNX's layout); an odd count
// leaves the last high nibble zero. x may be a strided view.
func Pack4(x *Tensor) ([]byte, error) {
	if x.Type().Bits() != 4 {
		return nil, fmt.Errorf("%w: Pack4 of %v (want i4 or u4)", ErrType, x)
	}
	src := x.Contiguous().Bytes()
	out := make([]byte, PackedBytes(x.Type(), int64(len(src))))
	for i, v := range src {
		out[i/2] |= (v & 0xF) << (4 * (i % 2))
	}
	return out, nil
}

// Unpack4 returns the I4 or U4 tensor of shape whose elements are packed
// two to a byte in packed (Pack4's layout). packed must hold exactly
// PackedBytes(t, n) bytes.
func Unpack4(t ElementType, shape Shape, packed []byte) (*Tensor, error) {
	if t.Bits() != 4 {
		return nil, fmt.Errorf("%w: Unpack4 to %v (want i4 or u4)", ErrType, t)
	}
	x, err := New(t, shape)
	if err != nil {
		return nil, err
	}
	dst := x.Bytes()
	if int64(len(packed)) != PackedBytes(t, int64(len(dst))) {
		return nil, fmt.Errorf("%w: %v%v needs %d packed bytes, got %d", ErrShape, t, shape, PackedBytes(t, int64(len(dst))), len(packed))
	}
	for i := range dst {
		v := packed[i/2] >> (4 * (i % 2)) & 0xF
		if t == I4 && v >= 8 {
			v |= 0xF0 // sign-extend
		}
		dst[i] = v
	}
	return x, nil
}

package seeded

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The golden values below were produced by the JavaScript twin:
//
//	node scripts/ortref/seeded.js SEED N LO HI
//
// which prints the float32 bit patterns of float32s(SEED, N, LO, HI) and the
// first three raw mulberry32 draws. The Go side must match them bit for bit.

func TestFloat32sMatchJavaScript(t *testing.T) {
	tests := []struct {
		name   string
		seed   uint32
		lo, hi float32
		bits   []uint32
	}{
		{"seed 0", 0, -1, 1, []uint32{0xbeef2d2e, 0xbf7fd4c8, 0xbf0daf4a, 0xbf3524fe}},
		{"seed 42", 42, -1, 1, []uint32{0x3e4f0f7c, 0xbdd3cd47, 0x3f347666, 0x3eadcec3, 0xbf267ecb, 0x3d59d89a}},
		{"max seed pixel range", math.MaxUint32, 0, 255, []uint32{0x43649678, 0x42414490, 0x43367dcf, 0x4370bc3b, 0x43578909}},
		{"odd range", 7, -0.5, 0.25, []uint32{0xbefb8160, 0xbee83541, 0x3e6e43db}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Float32s(tc.seed, len(tc.bits), tc.lo, tc.hi)
			require.Len(t, got, len(tc.bits))
			for i, v := range got {
				assert.Equalf(t, tc.bits[i], math.Float32bits(v), "value %d: got %g (%#08x), JavaScript gave %g", i, v, math.Float32bits(v), math.Float32frombits(tc.bits[i]))
				assert.GreaterOrEqual(t, v, tc.lo)
				assert.LessOrEqual(t, v, tc.hi)
			}
		})
	}
}

func TestFloat64MatchJavaScript(t *testing.T) {
	tests := []struct {
		seed uint32
		want []float64
	}{
		{0, []float64{0.26642920868471265, 0.0003297457005828619, 0.2232720274478197}},
		{42, []float64{0.6011037519201636, 0.44829055899754167, 0.8524657934904099}},
		{math.MaxUint32, []float64{0.8964226141106337, 0.189478256739676, 0.7156526781618595}},
		{7, []float64{0.011704753153026104, 0.06195825757458806, 0.97690763277933}},
	}
	for _, tc := range tests {
		r := New(tc.seed)
		for i, w := range tc.want {
			// Every draw is k/2^32, exact in float64, so the printed shortest
			// decimal parses back to the identical value.
			assert.InDeltaf(t, w, r.Float64(), 0, "seed %d draw %d", tc.seed, i)
		}
	}
}

func TestLongStreamMatchesJavaScript(t *testing.T) {
	// node -e "const {mulberry32}=require('./scripts/ortref/seeded.js');
	//   const r=mulberry32(123); let x; for(let i=0;i<1e7;i++) x=r(); console.log(x)"
	// The state wraps around 2^32 many times in 10M draws.
	r := New(123)
	var x float64
	for range 10_000_000 {
		x = r.Float64()
	}
	assert.InDelta(t, 0.8760805702768266, x, 0)
}

func TestDeterministicAndDistinct(t *testing.T) {
	a := Float32s(5, 1000, -1, 1)
	b := Float32s(5, 1000, -1, 1)
	c := Float32s(6, 1000, -1, 1)
	assert.Equal(t, a, b, "same seed, same stream")
	assert.NotEqual(t, a, c, "different seeds, different streams")
	var sum float64
	for _, v := range a {
		require.GreaterOrEqual(t, v, float32(-1))
		require.LessOrEqual(t, v, float32(1))
		sum += float64(v)
	}
	assert.InDelta(t, 0, sum/1000, 0.1, "uniform on [-1,1] has mean near 0")

	assert.Empty(t, Float32s(1, 0, 0, 1))
	assert.Empty(t, Float32s(1, -3, 0, 1))

	var zero Rand
	assert.InDelta(t, 0.26642920868471265, zero.Float64(), 0, "the zero Rand is seed 0")
}

// TestRealModelInputsMatchJavaScript checks whole input tensors of the
// real-model cases (tests/testdata/realmodels/*/case.json) against the
// SHA-256 of the little-endian float32 bytes that scripts/ortref/seeded.js
// fed ONNX Runtime:
//
//	node -e "const {float32s}=require('./scripts/ortref/seeded.js');
//	  const v=float32s(SEED,N,LO,HI); console.log(require('crypto')
//	  .createHash('sha256').update(Buffer.from(v.buffer)).digest('hex'))"
func TestRealModelInputsMatchJavaScript(t *testing.T) {
	tests := []struct {
		name   string
		seed   uint32
		n      int
		lo, hi float32
		sha256 string
	}{
		{"cls", 1, 3 * 48 * 192, -1, 1, "1b2de25af823086f63729b85e7cb1e187999a01fa1aa3312de573c3c5d568c4b"},
		{"det", 2, 3 * 320 * 320, -1, 1, "64865c8dcdad9f3966cbbac54c9ace4bc55339eb7ddc7caf0cf7007002848c1b"},
		{"det_wide", 6, 3 * 320 * 320, -30, 30, "4d48e2af9f5df14d40bb64a267e4f0a43c715cc11af0a00d4c1090a6f402f57a"},
		{"det_640", 3, 3 * 640 * 640, -1, 1, "5da0eaadb3bebc71a4ba0426900ad128231f270f14ae4ecce011e76581bdd0bd"},
		{"rec", 4, 3 * 48 * 320, -1, 1, "37aede168e93b834feab07f06037434946452520c9bd15d1f4f094c5944fdb7f"},
		{"hello_deepa", 5, 25 * 96, -1, 1, "467b647f36d1a4381b39f6e1c1066996176c0a648c90619fb96bdfe0d5e2e972"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := Float32s(tc.seed, tc.n, tc.lo, tc.hi)
			b := make([]byte, 0, 4*len(v))
			for _, f := range v {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
			}
			sum := sha256.Sum256(b)
			assert.Equal(t, tc.sha256, hex.EncodeToString(sum[:]))
		})
	}
}

package ref

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestDotRows: the four-at-a-time dot products (AVX2 where the CPU has it)
// agree with plain sums for every length around the vector width, rows
// overlapping or not.
func TestDotRows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{1, 7, 8, 9, 16, 31, 256, 259} {
		for _, ld := range []int{k, 3} {
			rows := 6
			a := make([]float32, k)
			b := make([]float32, (rows-1)*ld+k)
			for i := range a {
				a[i] = float32(r.NormFloat64())
			}
			for i := range b {
				b[i] = float32(r.NormFloat64())
			}
			out := make([]float32, rows)
			dotRows(a, b, ld, out)
			for j := range out {
				var want float64
				for i := range a {
					want += float64(a[i]) * float64(b[j*ld+i])
				}
				assert.InDelta(t, want, out[j], 1e-4*float64(k), "k=%d ld=%d row %d", k, ld, j)
			}
		}
	}
	t.Logf("AVX2+FMA kernel: %v", hasDot4)
}

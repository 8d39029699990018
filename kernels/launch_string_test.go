package kernels_test

import (
	"testing"

	"github.com/clinfer/clinfer/kernels"
)

// The launch specs of string_tfidf.cl (launchSpecs).
func init() {
	launchSpecs["tfidf"] = func(t *testing.T, e *clEnv, k kernels.Kernel) {
		// 2 rows of 7 ids, 5 outputs: two unigrams, a bigram and a trigram,
		// output 3 without an n-gram; skips up to 2; TF on long ids, TFIDF
		// on int ids.
		x := []int64{1, 2, 3, 1, 2, 2, 3, 3, 1, 1, 2, 3, 1, 2}
		gram, g := []int32{0, 1, 2, -1, 3}, []int32{0, 1, 1, 1, 2, 2, 4, 3}
		pool, w := []int64{1, 2, 1, 2, 1, 2, 3}, []float32{0.5, 2, 1.5, 3}
		e.launch(t, k, "-DIT=long", global1D(10), nil, x, make([]float32, 10), uint64(10), uint64(7), uint64(5), gram, g, pool, w, int32(2), int32(0))
		xi := make([]int32, len(x))
		for i, v := range x {
			xi[i] = int32(v)
		}
		e.launch(t, k, "-DIT=int", global1D(10), nil, xi, make([]float32, 10), uint64(10), uint64(7), uint64(5), gram, g, pool, w, int32(0), int32(2))
	}
}

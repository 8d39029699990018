//go:build !amd64 || purego

package ref

// hasDot4 is false: this build has no vector kernel.
const hasDot4 = false

// dot4AVX2 is never called where hasDot4 is false; it returns zeros.
func dot4AVX2(a, b0, b1, b2, b3 *float32, n int) (s0, s1, s2, s3 float32) { return }

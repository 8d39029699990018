//go:build !purego

package ref

import "golang.org/x/sys/cpu"

// hasDot4 reports whether dot4AVX2 runs here (AVX2 with FMA: Haswell and
// later).
var hasDot4 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dot4AVX2 is four dot products of a with b0..b3 over n elements (a
// multiple of 8), eight lanes at a time with fused multiply-adds
// (dot_amd64.s).
//
//go:noescape
func dot4AVX2(a, b0, b1, b2, b3 *float32, n int) (s0, s1, s2, s3 float32)

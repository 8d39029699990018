//go:build !(clblast && cgo && !noopencl)

// Keep in sync with sgemm_clblast_test.go.

package bench

// clblastSGEMM is nil without -tags clblast: BenchmarkSGEMM then skips the
// CLBlast side and says how to enable it.
var clblastSGEMM sgemmRunner

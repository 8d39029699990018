// Package bench holds benchmarks and the side-by-side comparisons against
// peers (ONNX Runtime, CLBlast). Run with `go test -bench . ./bench/`.
package bench

// Package bench holds benchmarks and the side-by-side comparisons against
// peers (ONNX Runtime, CLBlast). Run with `go test -bench . ./bench/`;
// compile times in the three cache states with `go run ./bench/compiletime`.
package bench

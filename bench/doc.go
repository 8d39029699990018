// Package bench holds benchmarks and the side-by-side comparisons against
// peers (ONNX Runtime, CLBlast). Run with `go test -bench . ./bench/`;
// compile times in the three cache states with `go run ./bench/compiletime`;
// AUTO and BATCH next to the devices they run on with `make bench-auto`
// (bench/autobench). The package itself holds what those commands share:
// Median and the environment that turns the drivers' kernel caches off in
// a fresh process.
package bench

// Command autobench measures the AUTO and BATCH devices next to the
// devices they run on, side by side in one run (`make bench-auto`): every
// measurement is cmd/benchmark in a fresh process with the drivers'
// kernel caches off (POCL_KERNEL_CACHE=0) and no CACHE_DIR, repeated
// -runs times (interleaved, so drift hits every device alike), and the
// table shows the medians.
//
//   - PP-OCR det 1x3x640x640: time from the start of CompileModel to the
//     first result on GPU and on AUTO:GPU,CPU (whose CPU serves while the
//     GPU compiles), with the GPU's compile time and its first inference
//     next to the median of the following ones;
//
//   - det 640 throughput: GPU and CPU each with THROUGHPUT, and AUTO over
//     both with CUMULATIVE_THROUGHPUT (automatic batching off, so devices
//     are compared, not batching);
//
//   - PP-OCR cls 1x3x48x192 with 8 requests in flight: BATCH:GPU(8) next to
//     the GPU unbatched, throughput and latency.
//
//     autobench [-runs 3] [-t 10] [-benchmark PATH] [-json FILE]
//
// Without -benchmark it builds cmd/benchmark with `go build` first. The
// models come from `make models` (CLINFER_MODELS points elsewhere).
package main

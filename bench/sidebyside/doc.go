// Command sidebyside prints clinfer's benchmark timings next to ONNX
// Runtime's, with ratios; `make bench-models` runs it.
//
//	go run ./bench/sidebyside -go bench-go.txt -ort bench-ort.txt
//
// -go is the output of `go test -bench . -count N ./bench/`; the median of
// each benchmark's ms/infer over the N runs is used (ns/op when a benchmark
// reports no ms/infer). Benchmark names are Family/<model>/<device>, e.g.
// PPOCR/cls_1x3x48x192/CPU, and <model> is the key matched against ORT.
//
// -ort is the output of scripts/ortref/bench.js: one JSON object per line,
// {"model": "ch_ppocr_mobile_v2.0_cls_infer.onnx", "shape": "x=1x3x48x192",
// "median_ms": 3.1, ...}; other lines are ignored. A clinfer benchmark
// <kind>_<dims> matches the ORT record whose shape has those dims and whose
// model file name has <kind> as one of its _-separated words (cls, det, rec).
package main

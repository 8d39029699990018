// Command modelbench times the real models side by side in one run:
// clinfer's CPU device, its GPU device with the heuristics alone
// (GPU_SHIPPED_TUNING=NO) and with the shipped tuning database
// (kernels/tuning, the default), both on POCL's worker threads
// (GPU_IN_THREAD=NO), with the heuristics and GPU_IN_THREAD=AUTO, the
// default (on POCL small plans run in the calling thread on the basic
// device), and
// ONNX Runtime on the CPU with 2 threads
// (scripts/ortref/bench.js under node, make models). `make bench-models`
// runs it.
//
//	go run ./bench/modelbench [-seconds 3] [-rounds 3] [-max_seconds 60] [-models det_640,cls] [-configs CPU,GPU,GPU-tuned,GPU-in-thread,ORT]
//	                          [-json docs/bench-models.json] [-readme README.md]
//	go run ./bench/modelbench -from docs/bench-models.json -readme README.md [-check]
//
// Per model it compiles every configuration (the dynamic inputs fixed to
// the benchmark's shapes first, so the plans are built at compile time),
// starts ONNX Runtime as a peer process, warms each up with one inference,
// and then runs -rounds rounds in which each configuration in turn runs
// for -seconds/-rounds (at least one inference): the configurations share
// the load of the same minutes. A configuration whose timed runs of a
// model reached -max_seconds sits out the later rounds (the CPU device
// takes about 50 s per IS-Net medium inference). It reports the median latency of
// synchronous inferences (PERFORMANCE_HINT=LATENCY), the compile time, the
// share of the GPU's kernel choices the shipped database made, and the
// ratios to ONNX Runtime, with the devices (the POCL target on POCL) and
// the load average at the start and the end named.
//
// -json writes the run; -readme writes its table into README.md between
// the bench-models markers, and -from renders a saved run instead of
// running (-check fails when the README's table is not what it renders;
// the package's tests check the committed README against
// docs/bench-models.json).
//
// This file is in the data flow of DESIGN.md at the very end: it drives
// the public Core API (driver.Core) like an application.
package main

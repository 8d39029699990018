// Command ops writes OPS.md, clinfer's op support matrix, from the tables
// the code runs on: graph's op table (the ops and their families), the
// ONNX frontend's import table (opset ranges), the CPU reference kernels,
// the GPU device's lowering table (f32 kernels, f16, host-only ops), the
// fusion pipeline's pattern passes and the ONNX backend suite's outcomes
// per device.
//
//	go run ./cmd/ops -cases clinfer-out -o OPS.md
//	go run ./cmd/ops -cases clinfer-out -check OPS.md
//
// The case outcomes are the files the suite writes when
// $CONFORMANCE_CASES is set (conformance-cases-CPU.txt and
// conformance-cases-GPU.txt in the -cases directory); `make ops` runs the
// suite for them, and `make test` checks with -check that the committed
// OPS.md is what the tables and its own suite run give, failing when it is
// stale. Nothing in OPS.md is written by hand.
package main

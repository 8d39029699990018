// Command devicereport is the driver of the device bundle (`make
// device-bundle`): on a machine with an OpenCL driver and nothing else (no
// Go, no compiler, no network) it runs clinfer's device tests and
// benchmarks on every OpenCL device and writes report.md and report.json.
// The bundle's run.sh finds the OpenCL loader and vendor files, then runs
//
//	devicereport -bundle DIR -out OUTDIR [-quick] [-list-suites] [-devices GPU.0,GPU.1]
//
// where DIR is the unpacked bundle: a copy of the repository's layout with
// the test binaries in their package directories (clbackend/clbackend.test,
// tests/tests.test, ...), the commands in bin/, the real models in
// .cache/models and the ONNX backend data in onnx-testdata/. Each device
// gets the ONNX backend suite (with the CPU/GPU parity check), the real
// models against ONNX Runtime's stored outputs, HETERO, the f16 tests, the
// kernel and lowering tests, and the benchmarks (PP-OCR cls, det 320 and
// det 640 latency and throughput, SGEMM GFLOPS, copy bandwidth, launch
// latency, compile time cold and cached). The exit status is 0 when every
// suite passed, 1 when one failed, 2 when there is no OpenCL device.
// -list-suites lists each test binary's tests instead of running them (the
// binaries start, link and find their data) and runs the benchmarks: `make
// test` checks the bundle that way, its `go test` having run the same
// suites on the same device.
//
// -tune exhaustive tunes PP-OCR det 640 and 320, cls and rec with every
// declared variant (the default, fast, tunes det 640 within a budget);
// either way the tuning steps write the device's shipped tuning database
// into OUTDIR/tuning, which
//
//	devicereport -tuning-db kernels/tuning -from OUTDIR
//
// (`make tuning-db REPORT=OUTDIR`) checks and copies into the repository.
//
// With -matrix it instead regenerates the "Devices tested" table of the
// README from the committed reports (docs/devices/*.json):
//
//	devicereport -matrix docs/devices -readme README.md [-check]
//
// Where it sits in the data flow: outside it. It drives the test and
// benchmark binaries as a user's shell would, and reads their output.
package main

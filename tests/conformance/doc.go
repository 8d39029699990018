// Package conformance holds device-parameterised test suites that check a
// device end to end, from an ONNX file to output tensors, in the style of
// gonum's testblas: a device's tests call the suite with its name.
//
//	func TestONNXBackendCPU(t *testing.T) { conformance.ONNXBackend(t, "CPU") }
//	func TestRealModelsCPU(t *testing.T)  { conformance.RealModels(t, "CPU") }
//
// ONNXBackend walks the ONNX backend test suite that Debian ships in
// libonnx-testdata; every case is read with onnx.ReadFile, compiled with
// driver.Core.CompileModel on the device and run on each of its data sets.
// A case is counted as passed, failed, unsupported-op (the importer or the
// device says an op is outside clinfer's op set), unsupported-type (the
// model or its data needs a data type clinfer lacks: string, uint32/64,
// sequence/optional/map; an unsupported op wins) or excluded (listed in
// Exclusions with a reason). RealModels runs the models fetched by `make
// models` against reference outputs produced by ONNX Runtime.
//
// The suites sit at the end of the data flow in DESIGN.md: they exercise the
// onnx frontend, graph shape inference, the plugin Core and a device at once,
// so a failure names the case and the stage (read, compile, bind, infer,
// compare) where it happened.
package conformance

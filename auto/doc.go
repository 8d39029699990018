// Package auto is the AUTO device, OpenVINO's automatic device selection:
// a virtual device that picks the real device a model runs on, serves the
// first requests on the CPU while a slow device compiles, re-runs a request
// a device failed on, and with PERFORMANCE_HINT=CUMULATIVE_THROUGHPUT
// spreads requests over every device at once (OpenVINO's MULTI).
//
// In the data flow of DESIGN.md it is a driver.Plugin over other plugins,
// reached through a driver.Core of its own. Core.CompileModel(ctx, m,
// "AUTO:GPU,CPU", props) reaches Plugin.CompileModel with
// DEVICE_PRIORITIES=GPU,CPU. The candidates are those devices in that
// order; without a list, every device the registry can construct except
// the virtual ones, discrete GPUs first, then integrated ones, then other
// devices, then the CPU ("-CPU" in the list leaves a device out). A
// candidate must have the capability the configuration needs
// (INFERENCE_PRECISION_HINT=f16 needs FP16 in OPTIMIZATION_CAPABILITIES)
// and its QueryModel must list every op node of the model.
//
// With LATENCY or THROUGHPUT the first such candidate is selected and gets
// the hint. Selecting and compiling:
//
//   - ENABLE_STARTUP_FALLBACK (YES by default): when the selected device is
//     not the CPU, the CPU is a later candidate that supports the model and
//     CACHE_DIR does not already hold the selected device's blob, the
//     selected device compiles in the background (a goroutine of the
//     compiled model) while CompileModel compiles on the CPU and returns.
//     Requests run on the CPU until the selected device is ready, then on
//     it; each inference runs whole on the device it started on, so none is
//     lost or run twice. EXECUTION_DEVICES names the device serving now and
//     CompiledModel.Timeline when each took over. If the background compile
//     fails, the next candidates are tried; if all fail the CPU keeps
//     serving (StartupError says why). Once the selected device serves, the
//     CPU's compiled model and requests are released after its last
//     inference, unless ENABLE_RUNTIME_FALLBACK keeps them as the fallback.
//     Closing the compiled model cancels a background compile and waits
//     for it.
//   - Otherwise the selected device compiles in CompileModel; if that
//     fails, the next candidate that supports the model is compiled.
//   - ENABLE_RUNTIME_FALLBACK (YES by default): an inference that fails
//     with an error wrapping driver.ErrDevice runs again on the next
//     candidate after the failed device (compiled on first need); errors of
//     other kinds, such as a bad input, are returned as they are.
//
// With CUMULATIVE_THROUGHPUT every candidate that supports the model is
// compiled (concurrently, each with THROUGHPUT) and requests are spread
// over all of them: a device takes at most its
// OPTIMAL_NUMBER_OF_INFER_REQUESTS inferences at once, and SCHEDULE_POLICY
// picks among devices with room: DEVICE_PRIORITY (the default) the first
// in priority order, ROUND_ROBIN the next after the last one used. The
// compiled model's OPTIMAL_NUMBER_OF_INFER_REQUESTS is the sum over the
// devices.
//
// A request of an AUTO compiled model borrows a request of a device's
// compiled model for each inference (devices keep a pool, made on demand),
// binds its tensors to it, and returns it; outputs of static shape are
// written straight into the AUTO request's tensors. Results differ between
// devices within their numerical tolerance, so an application that needs
// every result from one device sets ENABLE_STARTUP_FALLBACK=NO.
package auto

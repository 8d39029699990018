// Command benchmark measures the throughput and latency of a model on a
// clinfer device, as OpenVINO's benchmark_app does.
//
//	benchmark [-m MODEL.onnx] [-d CPU] [-hint throughput|latency|cumulative_throughput|none] [-nireq N] [-nstreams N]
//	          [-t SECONDS | -niter N] [-api async|sync] [-shape NAME=[1,3,64,64]] [-data_shape NAME=[1,3,64,64]]
//	          [-infer_precision f32] [-cache_dir DIR] [-p KEY=VALUE ...] [-pc]
//	          [-json FILE] [-trace FILE.json]
//
// Without -m it runs the embedded default model. With -api async (the
// default) it keeps -nireq asynchronous requests in flight (default: the
// compiled model's OPTIMAL_NUMBER_OF_INFER_REQUESTS), each restarted from
// its callback; with -api sync it runs one request in a loop. Inputs are
// seeded random data, as cmd/infer makes them. It reports the count,
// duration, throughput and latency percentiles, optionally as JSON (-json)
// and with a Chrome trace of every request's stages (-trace), which
// chrome://tracing or https://ui.perfetto.dev show. On a terminal it draws a
// progress bar, otherwise it prints a line per second. Bad flags, files and
// values give a one-line error and exit status 1.
//
// -shape sets the model's input shape before compiling (Model.Reshape), as
// benchmark_app's -shape does, so that a device plans (and warms up) that
// shape in CompileModel and BATCH can batch a model whose image size is
// dynamic; the random data takes the shape too. It takes benchmark_app's
// spellings, NAME=[1,3,224,224], NAME[1,3,224,224] or [1,3,224,224] for
// every input, and ? (or -1) leaves a dimension dynamic. A shape the model
// cannot take is an error naming the input and dimension and the nearest
// size that fits. -data_shape, as benchmark_app's, sets only the shape of
// the random data, for dimensions the model leaves dynamic (-reshape is
// the old spelling of -shape). The report's
// first_result_ms is the time from the start of CompileModel to the end of
// the first inference.
//
// -d takes every device name the Core does: CPU, GPU, GPU.1,
// HETERO:GPU,CPU, AUTO, AUTO:GPU,CPU, BATCH:GPU(4). On AUTO it prints which
// devices served over time ("CPU until 1.20 s, then GPU.0") and how many
// timed inferences each ran; on BATCH (or GPU with -hint throughput, which
// batches implicitly) how many batched inferences ran and how many requests
// ran alone. -hint cumulative_throughput (or ctput) sets
// PERFORMANCE_HINT=CUMULATIVE_THROUGHPUT, as benchmark_app does, which makes
// AUTO spread requests over all its devices.
package main

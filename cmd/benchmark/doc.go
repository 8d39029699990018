// Command benchmark measures the throughput and latency of a model on a
// clinfer device, as OpenVINO's benchmark_app does.
//
//	benchmark [-m MODEL.onnx] [-d CPU] [-hint throughput|latency|none] [-nireq N] [-nstreams N]
//	          [-t SECONDS | -niter N] [-api async|sync] [-shape NAME=[1,3,64,64]]
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
package main

package driver

// DeviceFacts are what a device knows about its own parallelism; PlanStreams
// turns them and the performance hint into a number of streams and
// requests.
type DeviceFacts struct {
	// Cores is the number of host cores a CPU-like device runs on
	// (GOMAXPROCS); 0 for devices that compute elsewhere.
	Cores int
	// ComputeUnits is the number of compute units of a GPU-like device
	// (CL_DEVICE_MAX_COMPUTE_UNITS); 0 for CPU-like devices.
	ComputeUnits int
	// MaxStreams bounds the number of streams (the top of
	// RANGE_FOR_STREAMS); 0 is no bound.
	MaxStreams int
	// RequestsPerStream is how many requests keep one stream busy: 1 where
	// a request occupies its stream from start to end (CPU), 2 where one
	// request's upload and download overlap another's kernels (GPU).
	// Values below 1 mean 1.
	RequestsPerStream int
}

// StreamPlan is what the performance hint resolves to on a device.
type StreamPlan struct {
	// Streams is the number of task-executor streams (NUM_STREAMS when it
	// is AUTO).
	Streams int
	// Requests is OPTIMAL_NUMBER_OF_INFER_REQUESTS.
	Requests int
}

// gpuThroughputStreams is the number of streams THROUGHPUT gives a GPU:
// two queues, so one stream's transfers overlap the other's kernels.
const gpuThroughputStreams = 2

// PlanStreams resolves cfg's PERFORMANCE_HINT, NUM_STREAMS and NUM_REQUESTS
// on a device with the given facts, as OpenVINO's plugins do:
//
//   - LATENCY: one stream and one request; every core (or compute unit)
//     works on that request.
//   - THROUGHPUT and CUMULATIVE_THROUGHPUT: one stream per core on a
//     CPU-like device (a request runs single-threaded per stream), two on
//     a GPU-like one; RequestsPerStream requests per stream.
//   - An explicit NUM_STREAMS (not AUTO) wins over the hint's choice.
//   - MaxStreams caps the streams; NUM_REQUESTS > 0 caps the requests and
//     the streams (a stream without a request would idle).
//
// The result has at least one stream and one request.
func PlanStreams(cfg Config, f DeviceFacts) StreamPlan {
	perStream := max(f.RequestsPerStream, 1)
	streams := 1
	if cfg.PerformanceHint != HintLatency {
		switch {
		case f.Cores > 0:
			streams = f.Cores
		case f.ComputeUnits > 0:
			streams = gpuThroughputStreams
		}
	}
	if cfg.NumStreams > 0 {
		streams = cfg.NumStreams
	}
	if f.MaxStreams > 0 {
		streams = min(streams, f.MaxStreams)
	}
	requests := streams * perStream
	if cfg.PerformanceHint == HintLatency && cfg.NumStreams <= 0 {
		requests = 1
	}
	if cfg.NumRequests > 0 {
		requests = min(requests, cfg.NumRequests)
		streams = min(streams, cfg.NumRequests)
	}
	return StreamPlan{Streams: max(streams, 1), Requests: max(requests, 1)}
}

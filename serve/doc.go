// Package serve is clinfer's model server: the Open Inference Protocol
// (KServe v2) over REST and gRPC, with the model repository extension, in
// front of clinfer's user API. A Go program mounts Handler on its own
// http.Server and RegisterGRPC on its own grpc.Server; cmd/serve is the
// ready-made binary.
//
// In the data flow of DESIGN.md it sits in front of the root package:
//
//	REST / gRPC request ─► decode (limits checked before allocating) ─► model queue (bounded: 429)
//	    ─► clinfer.CompiledModel.Infer(ctx, inputs) ─► encode ─► response
//
// and uses only clinfer's public API: Core.ReadModel and CompileModel for
// loading, CompiledModel.Infer for inference (its request pool bounds the
// concurrency, the BATCH device does the dynamic batching, ctx carries the
// client's disconnect and the timeouts), CompiledModel.BatchStats and
// GPU_MEMORY_STATISTICS for the metrics.
//
// # Model repository
//
// A repository is a directory like Triton's and OpenVINO Model Server's:
//
//	repository/
//	  cls/
//	    config.json         optional: ModelConfig (device, hint, streams, batching, reshape, queue, versions)
//	    1/model.onnx
//	    2/model.onnx        the newest version is served by default
//
// Start loads it; Rescan (every Options.PollInterval, or through the
// repository API's load) reloads what changed. A new version is compiled
// while the old one serves; requests already holding the old one finish
// on it, and it is closed after the last of them, so a swap fails no
// request.
//
// # Limits
//
// Every model has a bounded queue (ModelConfig.MaxQueueSize beyond its
// OPTIMAL_NUMBER_OF_INFER_REQUESTS running requests): a request that finds
// it full is answered 429 / RESOURCE_EXHAUSTED at once. A body over
// Options.MaxRequestBytes is refused from its Content-Length before it is
// read (gRPC: from the message's length prefix), an input tensor over
// Options.MaxTensorBytes from its datatype and shape before it is
// allocated. A client that disconnects cancels its inference through the
// request's context; ModelConfig.TimeoutMS and Options.InferTimeout bound
// an inference. HTTPServer and GRPCOptions set the connection timeouts
// that keep a slow client from holding a connection.
//
// Errors follow the protocol: REST answers {"error": "message"} with 400
// (malformed JSON, unknown input, wrong datatype or shape), 404 (unknown
// model or version), 413 (over a limit), 429 (queue full), 503 (not ready),
// 504 (timeout); gRPC the matching status codes.
package serve

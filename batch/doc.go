// Package batch is the BATCH device, OpenVINO's automatic batching: it
// gathers concurrent inference requests of a batch-1 model into one
// inference of the same model reshaped to batch N on another device, and
// splits the results back, so a device that computes a batch of N faster
// than N single inferences (a GPU) serves many small requests at its
// batched throughput without the application batching anything.
//
// In the data flow of DESIGN.md it is a driver.Plugin that wraps one other
// device. Core.CompileModel(ctx, m, "BATCH:GPU(4)", props) reaches
// Plugin.CompileModel with DEVICE_PRIORITIES=GPU(4) (OpenVINO's alias
// AUTO_BATCH_DEVICE_CONFIG works too), which
//
//  1. finds the batch dimension: axis 0 of every input, which must be 1 or
//     dynamic, with every other input dimension static; the model at
//     batch 1 and at batch N must infer the same output shapes except for
//     axis 0, which must be 1 and N. A model that fails this (no batch
//     axis, a Reshape that folds the batch away, dynamic image sizes) is
//     an error wrapping driver.ErrUnsupported that says which input or
//     output and why;
//  2. compiles the model at batch N and as given (batch 1, or its dynamic
//     batch) on the device, through a driver.Core the BATCH plugin owns
//     (so CACHE_DIR and the device's own configuration apply), with
//     ALLOW_AUTO_BATCHING=NO so the device does not batch again.
//
// The compiled model's ports are the model's, as on the device (a dynamic
// batch stays dynamic, so implicit batching changes no port). An
// inference whose inputs all have 1 on axis 0 joins the open batch; one
// of another batch size (0 included) runs alone on the model as given.
// A batch-1 inference joins the open batch: the request that makes it N long copies every
// member's inputs into a batched request (one of the device's
// OPTIMAL_NUMBER_OF_INFER_REQUESTS, reused), runs it and copies each
// member's slice of the outputs back. A batch that is not full
// AUTO_BATCH_TIMEOUT milliseconds (default 1000) after its first request
// joined is dissolved and each member runs alone on the model as given, so
// a lone request waits at most that long; when fewer than N requests of
// the compiled model exist, a batch can never fill and requests run alone
// at once. No goroutine is started for this: each inference waits on its
// own goroutine (the caller's, or the asynchronous request's executor).
//
// Implicit batching: with PERFORMANCE_HINT=THROUGHPUT on a device that
// lists ALLOW_AUTO_BATCHING (the GPU, YES by default), Core.CompileModel
// compiles on BATCH over that device, and compiles on the device itself
// when BATCH cannot batch the model.
//
// Properties: DEVICE_PRIORITIES ("GPU(4)", "GPU.1(8)"; "GPU" uses
// DefaultBatchSize), AUTO_BATCH_TIMEOUT, and the common keys, handed on to
// the device with any device-specific key the device supports; compiled
// models report OPTIMAL_BATCH_SIZE, EXECUTION_DEVICES (the device's) and
// OPTIMAL_NUMBER_OF_INFER_REQUESTS (N times the device's, enough requests
// to fill its batched requests).
package batch

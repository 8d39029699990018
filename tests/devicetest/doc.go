// Package devicetest is the behaviour suite every clinfer device passes, in
// the style of gonum's testblas: a device's own tests call
//
//	devicetest.Run(t, func(t *testing.T) driver.Plugin { ... })
//
// (or Properties, InferRequestBasics, Cancellation, Async, DynamicInputs,
// UseAfterClose, Capabilities, ConcurrentInfer, CloseDuringInfer, FirstUse
// and MutatedShapes one by one) with a
// constructor for a fresh plugin, and the suite checks what DESIGN.md
// promises of every device, so that CPU, GPU and HETERO cannot diverge:
// properties named by their OpenVINO keys, errors that name the key and
// the accepted values (and suggest the nearest key) and wrap driver's
// sentinels, atomic SetProperties, compile-time properties that override
// without leaking into the plugin, NUM_STREAMS resolved on compiled
// models, tensor checks on SetTensor, inputs never modified by Infer,
// per-op profiling on demand, the asynchronous request, an error naming a
// dynamic input that was never bound (no device may make one up), any
// batch of a dynamic dimension including 0 (empty outputs of the model's
// shape), output tensors never reused by the next inference, ErrClosed
// from every method after Close, OPTIMIZATION_CAPABILITIES claiming only
// what the device accepts, one request used from several goroutines
// (each call runs or is ErrBusy), NUM_STREAMS honoured or refused but
// never clamped, Wait and Close from a request's own callback failing
// with ErrBusy at once, misspelt port names answered with the nearest,
// compiled models and requests closed while other goroutines infer
// (CloseDuringInfer, 50 rounds), the first use of the device from many
// goroutines in fresh processes (FirstUse, through InFreshProcesses) and
// changes to the slices accessors return (MutatedShapes).
//
// The suite compiles tiny models, Parameter "x" f32[1,4] (or f32[?,4]) ->
// Relu "relu" -> Result "y"; a device that rejects the static one with
// driver.ErrUnsupported is tested on Parameter -> Result instead (and the
// test log says so).
package devicetest

// Package devicetest is the behaviour suite every clinfer device passes, in
// the style of gonum's testblas: a device's own tests call
//
//	devicetest.Run(t, func(t *testing.T) driver.Plugin { ... })
//
// (or Properties, InferRequestBasics and Cancellation one by one) with a
// constructor for a fresh plugin, and the suite checks what DESIGN.md
// promises of every device: properties named by their OpenVINO keys, errors
// that name the key and the accepted values and wrap plugin's sentinels,
// atomic SetProperties, compile-time properties that override without
// leaking into the plugin, tensor checks on SetTensor, inputs never
// modified by Infer, and per-op profiling on demand.
//
// The suite compiles a tiny model, Parameter "x" f32[1,4] -> Relu "relu" ->
// Result "y"; a device that rejects it with driver.ErrUnsupported is tested
// on Parameter -> Result instead (and the test log says so).
package devicetest

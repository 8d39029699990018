// Package plugin is clinfer's user API: a Core that reads ONNX models and
// compiles them for devices by name, the CompiledModel that runs them
// (Infer in one call, safe from many goroutines), synchronous and
// asynchronous requests for finer control, typed property options and
// getters over the OpenVINO property names, and the errors to test for
// with errors.Is.
//
// In the data flow of DESIGN.md it is the layer a program talks to:
//
//	Core.ReadModel ─► graph.Model ─► Core.CompileModel(ctx, m, "GPU", props)
//	    ─► CompiledModel.Infer(ctx, inputs) ─► outputs
//
// Under it, package plugin/driver holds what only device implementers
// need (the interfaces a device implements, its registration, executors,
// stages, property specs, the blob format), as database/sql/driver is kept
// apart from database/sql; this package wraps a device's driver objects
// in concrete types with the same checks on every device. Devices register
// themselves when their package is imported: import the root package
// github.com/clinfer/clinfer to get every device, or a device's package
// for just that one.
package plugin

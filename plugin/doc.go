// Package plugin is the device plugin API every clinfer device implements
// (Plugin, CompiledModel, InferRequest), the registry devices add themselves
// to, the Core that compiles models by device name, and the configuration
// machinery (OpenVINO property names) the devices share.
//
// In the data flow of DESIGN.md it sits between the user's graph.Model and
// the devices: Core.CompileModel finds the Plugin registered for a device
// name ("CPU", "GPU.1", "HETERO:GPU,CPU"), the plugin compiles a clone of the
// model, and the CompiledModel hands out InferRequests that run it.
//
// The required interfaces are small; extra capabilities (QueryModel, export
// and import) are optional interfaces discovered by type assertion, as
// database/sql/driver does.
package plugin

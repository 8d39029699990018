// Package driver is what clinfer's device implementers need, kept apart
// from the user API in package plugin as database/sql/driver is kept apart
// from database/sql: the interfaces a device implements (Plugin,
// CompiledModel, InferRequest and the optional Querier, Exporter, Importer,
// Stager, AsyncCompiledModel, CacheKeyer, DevicePropertier, the remote
// context ones in remote.go, OutputShaper), the registry
// devices add themselves to (Register), and the machinery they share
// (property specs and tables, the common Config and stream planning,
// executors and the asynchronous Pipeline, the blob format of exported
// models, ModelCore, RequestCore and PluginCore with the checks and
// messages every device gives, the stage Tracer).
//
// In the data flow of DESIGN.md it sits under package plugin: plugin.Core
// resolves a device name through this package's Core ("CPU", "GPU.1",
// "HETERO:GPU,CPU" name the plugins "CPU", "GPU" and "HETERO"), the plugin
// compiles a clone of the model into a CompiledModel, and plugin wraps that
// in the user's concrete types. Virtual devices (HETERO) use a Core of
// their own to reach the devices they build on, and get this package's
// interfaces back.
//
// The required interfaces are small; extra capabilities are optional
// interfaces discovered by type assertion. Users meet this package's
// errors through package plugin, which re-exports the sentinels, so the
// messages read "plugin: ..." and devices' own read "cpu: ...", "gpu: ...".
package driver

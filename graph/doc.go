// Package graph is clinfer's model IR, in the spirit of OpenVINO's ov::Model:
// a Model of Nodes connected by Outputs, with Parameter, Constant and Result
// housekeeping nodes, an op table giving every op its shape and type
// inference, deep Clone, topological order and Validate.
//
// In the data flow of DESIGN.md the ONNX frontend (package onnx) produces a
// Model; Core.CompileModel hands it to a device plugin, which clones it, runs
// the fusion passes on the clone and turns the result into a device plan. A
// compiled model never changes the user's Model.
//
// The op semantics are ONNX's, normalised to the newest opset form: values the
// old opsets passed as attributes (Slice starts, Squeeze axes, Clip bounds,
// Pad pads, Split sizes, Reduce axes) are inputs here, so devices implement one
// semantics per op. Besides ONNX's ops the table has the fused ops the fusion
// passes make: FusedConv, FullyConnected and the generic KernelFusion, whose
// body (a *Model attribute) is the subgraph it replaced and gives it its
// shape inference.
//
// The op table is where an op's semantics live, once: besides its input
// counts and inference, a row (OpSpec) says which inputs a device needs on
// the host (HostInputs), when the op folds before inference (Fold), which
// outputs are optional (KeepOutputs), whether it is shape arithmetic
// (ShapeMath), its float attributes' defaults (Params) and the ONNX opset
// it imports from unchanged (Since). Devices, passes and the ONNX frontend
// ask the table instead of keeping per-op lists. Every op belongs to a
// Family, which names the file of its code in every package
// (graph/ops_conv.go, cpu_fallback/ref/ops_conv.go, clbackend/lower_conv.go).
package graph

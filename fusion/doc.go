// Package fusion is the transformation pipeline: the pass manager, the
// pattern matcher, common optimisations (constant folding, dead-code
// removal, Identity/Dropout removal, BatchNormalization folding,
// precision conversion of f16 weights) and the fusions that rewrite a
// graph.Model into kernel-shaped ops (FusedConv, FullyConnected,
// LayerNormalization, HardSwish, HardSigmoid).
//
// In the data flow of DESIGN.md it runs inside Plugin.CompileModel, on the
// clone of the user's model, before the device plan is made (ForDevice),
// and inside QueryModel, whose answer is mapped back to the user's node
// names through the fused names every rewrite records (RT.FusedNames; see
// QueryForDevice and QuerySupported). Constant folding evaluates on the
// host through an Evaluator; ref.Evaluate (package cpu_fallback/ref) is
// the reference one.
//
// A Manager runs Passes in registration order and re-infers shapes after
// each. Configuration comes from device properties: DISABLE_TRANSFORMATIONS
// skips every pass, DISABLED_TRANSFORMATIONS names passes to skip, and
// DUMP_GRAPHS_DIR receives the graph as text and Graphviz dot after each
// pass.
//
// Most passes are declarative: a Rule is a Pattern (op types, attributes,
// constant inputs, consumer conditions, captures) and a Rewrite that builds
// the replacement from the captures. Adding a fusion for a new kernel is
// one Rule next to the kernel, collected into a PatternPass and registered
// with the Manager; the matching and graph-editing engine (ApplyRules) does
// not change. A fusion onto a new kernel is one KernelFusion declaration in
// KernelFusions (kernelfusions.go): its pass replaces each match with a
// generic graph.OpKernelFusion node that keeps the matched subgraph as its
// body, which the GPU runs as one launch of the declared catalogue kernel
// and the CPU runs with its reference ops.
package fusion

// Package hetero is the HETERO device: it splits one model across several
// devices by what each supports, and runs the pieces as one model.
//
// In the data flow of DESIGN.md it is a driver.Plugin that wraps other
// plugins. Core.CompileModel(ctx, m, "HETERO:GPU,CPU", props) reaches
// Plugin.CompileModel with DEVICE_PRIORITIES=GPU,CPU, which
//
//  1. assigns every node an affinity: a user-set graph.RTInfo.Affinity
//     wins; every other op node goes to the first device of the list whose
//     QueryModel names it (devices answer in the user's node names, also
//     for nodes they fuse). Results follow their producer; Parameters and
//     Constants are copied into each subgraph that reads them. A node no
//     device supports is an error wrapping driver.ErrUnsupported.
//  2. cuts the graph where the affinity changes into subgraphs that run in
//     sequence: each reads only model inputs, constants and outputs of
//     earlier subgraphs. Subgraphs grow from the outputs backwards, each
//     taking every node of its device whose consumers are placed; a node
//     that would make a cycle (GPU -> CPU -> GPU) lands in another
//     subgraph instead, so there are never cycles between them. Small
//     integer shape arithmetic (Shape -> Slice -> Concat feeding a Reshape)
//     is recomputed in the subgraph that reads it rather than passed in,
//     because the GPU plans on such values only when it sees their source.
//  3. compiles each subgraph on its device through a driver.Core the HETERO
//     plugin owns (so devices are found through the registry, and closed
//     with the plugin).
//
// A request holds one request per subgraph. A value crossing subgraphs is
// one tensor, allocated when the request is created and bound with
// SetTensor as the producer's output and the consumer's input (values of
// dynamic shape are bound when the producer has made them). Between
// subgraphs compiled in one remote context (GPU subgraphs) the tensor is
// a remote tensor of that context, so the value never crosses the host;
// for a value of dynamic shape the producer's compiled model tells its
// shape before it runs (driver.OutputShaper: from the inputs' shapes and
// the values of the inputs it reads on the host), and the request keeps
// one remote tensor per shape seen. A value a consumer reads on the host
// (a shape, an index), one a CPU subgraph reads or makes, a model output,
// and one whose producer cannot tell its shape before running (its size
// depends on values computed on the device) go through host memory;
// InferRequest.HostLinks lists them. Infer runs the
// sub-requests in order with the caller's ctx; the asynchronous request
// (driver.AsyncCompiledModel) runs every sub-request's stages as stages of
// one chain, so Cancel and ctx reach whichever sub-request is running.
// Profiling entries carry the subgraph as a prefix ("subgraph1/conv").
//
// Properties: DEVICE_PRIORITIES, HETERO_DUMP_GRAPH_DOT (a directory for the
// affinity and subgraph graphs as dot files) and the common keys, the
// relevant ones handed on to the devices; compiled models report
// NUMBER_OF_SUBMODELS and EXECUTION_DEVICES.
//
// Export and import (driver.Exporter, driver.Importer): a HETERO blob is
// the shared header (device and architecture "HETERO") with the affinity
// graph, the split (each subgraph's device, where its inputs come from,
// which model outputs and links it produces) and each subgraph's blob as
// its device exported it. ImportModel imports every subgraph on its device,
// which checks its own header (so a GPU part exported for another GPU
// architecture is rejected), then checks the split against the imported
// models before any request can use it. With CACHE_DIR, Core's model cache
// stores one HETERO blob per model and configuration.
package hetero

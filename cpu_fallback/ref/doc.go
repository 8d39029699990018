// Package ref is the reference implementation of every op of clinfer's op
// set on host tensors: one Kernel per op type, in pure Go with gonum for
// GEMM-shaped work, and Evaluate, which runs one node.
//
// In the data flow of DESIGN.md three users share it: the CPU device
// (package cpu_fallback) runs whole models on these kernels, the fusion
// passes fold constant subgraphs with Evaluate, and the GPU device folds
// what is known at plan time with it. Keeping the kernels here, apart from
// the device, lets a program that imports only the GPU device evaluate on
// the host without registering "CPU".
//
// The kernels of op family F (graph.Family) are in ops_F.go, next to the
// family's table (convKernels in ops_conv.go); kernelTable in kernels.go
// merges the families. A kernel computes its output shapes from its actual
// inputs, so dynamic dimensions are bound when it runs.
package ref

// Package gen generates OpenCL C at compile time for what no hand-written
// kernel file covers: chains of element-wise and broadcast ops that the
// fusion pass FuseElementwiseChains (package fusion) turned into one
// KernelFusion node. A chain's body (a small graph.Model) is an expression
// tree; Elementwise prints it as one kernel of graph.LaunchElementwise's
// convention, each op the same macro of eltwise_ops.clh its single-op
// kernel uses, so one launch and one pass over memory replace one per op.
//
// In the data flow of DESIGN.md it sits beside the kernel catalogue
// (package kernels): the GPU device's planner (clbackend) asks it for the
// source of a generated chain node, builds it through the same program
// cache as a catalogue file (keyed by the source: chains of the same
// shape share a program) and launches it through the generic KernelFusion
// lowering. The CPU device runs the body with its reference ops. The same
// generic tests check it as a hand-written kernel: the GPU against the CPU
// reference, and its launches under oclgrind.
package gen

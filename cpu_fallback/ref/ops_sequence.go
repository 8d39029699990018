package ref

// sequenceKernels are the sequence family's kernels.
func sequenceKernels(table map[string]Kernel) map[string]Kernel { return map[string]Kernel{} }

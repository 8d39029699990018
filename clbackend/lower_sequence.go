package clbackend

// sequenceLowerings are the GPU table entries of the sequence family.
func sequenceLowerings() map[string]lowering { return map[string]lowering{} }

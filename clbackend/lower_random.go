package clbackend

// randomLowerings are the GPU table entries of the random family.
func randomLowerings() map[string]lowering { return map[string]lowering{} }

package clbackend

// stringLowerings are the GPU table entries of the string family.
func stringLowerings() map[string]lowering { return map[string]lowering{} }

package clbackend

// windowLowerings are the GPU table entries of the signal family's
// generators: their scalar inputs size the output, so the planner folds
// them on the host once it knows those values (as it does Range).
func windowLowerings() map[string]lowering {
	const why = "a generator of constants from scalars the planner folds on the host once they are known"
	return map[string]lowering{
		"HannWindow": {host: why}, "HammingWindow": {host: why}, "BlackmanWindow": {host: why}, "MelWeightMatrix": {host: why},
	}
}

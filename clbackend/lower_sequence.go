package clbackend

// sequenceHost is why the sequence family runs in host parts.
const sequenceHost = "sequences and optionals are host values"

// sequenceLowerings are the GPU table entries of the sequence family: every
// op takes or makes a sequence or optional, so the planner places it in a
// host part (hostparts.go).
func sequenceLowerings() map[string]lowering {
	t := map[string]lowering{}
	for _, op := range []string{"SequenceEmpty", "SequenceConstruct", "SequenceAt", "SequenceInsert", "SequenceErase",
		"SequenceLength", "SplitToSequence", "ConcatFromSequence", "SequenceMap", "Optional", "OptionalHasElement",
		"OptionalGetElement"} {
		t[op] = lowering{hostPart: sequenceHost}
	}
	return t
}

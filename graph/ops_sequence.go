package graph

// sequenceOps are the rows of the sequence family.
var sequenceOps = []OpSpec{}

package graph

// randomOps are the rows of the random family.
var randomOps = []OpSpec{}

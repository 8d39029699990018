package graph

// stringOps are the rows of the string family.
var stringOps = []OpSpec{}

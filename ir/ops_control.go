package ir

// controlImports are the ops with bodies (If, Loop, TensorIterator).
var controlImports = []importRow{}

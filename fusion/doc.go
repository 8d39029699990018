// Package fusion will hold the transformation pipeline: the pass manager,
// the pattern matcher, common optimisations (constant folding, dead-code
// removal, BatchNormalization folding) and the fusions that rewrite a
// graph.Model into kernel-shaped ops. In the data flow of DESIGN.md it runs
// inside Plugin.CompileModel, on the clone of the user's model, before the
// device plan is made. Not yet implemented (issue 5).
package fusion

// Package seeded generates deterministic pseudo-random test data that is
// bit-identical in Go and in JavaScript.
//
// The real-model tests (tests/) compare clinfer's outputs with reference
// outputs that ONNX Runtime produced from inputs made by the same generator
// in scripts/ortref/seeded.js; only the seed, shape and range are committed,
// never the inputs themselves. cmd/infer uses it for its default inputs.
//
// The generator is mulberry32: 32 bits of state, one uint32 add, two
// multiplies and a few shifts per draw. It is not cryptographic and not
// meant for statistics, only for reproducible tensors.
package seeded

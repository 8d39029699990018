// Package reftest holds what the CPU device's tests and its kernels' tests
// (package ref) share: naive reference convolutions written for clarity,
// not speed, and seeded tensors. Only test files import it.
package reftest

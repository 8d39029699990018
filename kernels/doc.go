// Package kernels owns clinfer's OpenCL C sources (*.cl, embedded with
// go:embed) and the catalogue that maps each primitive or fused op to its
// kernel: the .cl file, the entry point and the build options.
//
// In the data flow of DESIGN.md the GPU device (package clbackend) looks
// kernels up here by name when it turns a transformed graph into a launch
// plan, and builds each (file, options) pair once per device through its
// program cache. Kernels are referred to only through the catalogue, never by
// copied source strings, so a kernel developer adds a kernel by adding a .cl
// file and a catalogue entry. A fused kernel needs no catalogue line: the
// catalogue lists every fusion declared in fusion.KernelFusions, so a new
// fusion is a .cl file plus that one declaration (README.md walks through
// one).
//
// Helpers several kernels share live in headers (*.clh, also embedded); a
// .cl file includes one with a line `#include "nd_index.clh"`, which Source
// expands, so the text that is built (and keyed in the GPU device's program
// cache) is always complete.
//
// Every .cl file is pure OpenCL C 1.2, holds one concern, bounds-checks its
// work items, and states its work-size contract in the comment at its top.
// One file may serve several catalogue entries through build options
// (eltwise_binary.cl is "add" with -DBINARY_OP=ADD and "mul" with
// -DBINARY_OP=MUL).
package kernels

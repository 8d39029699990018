// Package kernels owns clinfer's OpenCL C sources (*.cl, embedded with
// go:embed) and the catalogue that maps each primitive or fused op to its
// kernel: the .cl file, the entry point and the build options.
//
// In the data flow of DESIGN.md the GPU device (package clbackend) looks
// kernels up here by name when it turns a transformed graph into a launch
// plan, and builds each (file, options) pair once per device through its
// program cache. Kernels are referred to only through the catalogue, never by
// copied source strings. The catalogue is made from the .cl files: every
// __kernel entry point is an entry of its name, every operation macro of
// eltwise_unary.cl and eltwise_binary.cl an entry built with that macro,
// and the few entry points that build options turn into several entries
// are listed in variants. So a kernel developer adds a kernel by adding a
// .cl file, and a unary activation by one #define line. A kernel fusion
// (fusion.KernelFusions) names its kernel and file; the GPU device looks
// the kernel up here like any other. The package imports nothing of
// clinfer: it is the leaf the engine builds on.
//
// Each entry point's signature is its argument list, declared once:
// Kernel.Args parses it and CheckArgs checks a launch's arguments against
// it, for the GPU device's lowerings and for the launches of the tests.
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

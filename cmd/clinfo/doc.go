// Command clinfo lists the OpenCL platforms and devices of this machine with
// the facts that matter for inference: OpenCL version, compute units, clock,
// memory sizes, work-group limits, preferred vector widths, fp16/fp64
// support and extensions. With -json it prints the same as JSON.
//
// It is the first thing to run when clinfer's GPU device is missing: with no
// OpenCL driver it explains what is missing and how to install one, and
// exits with status 1.
//
// Usage:
//
//	clinfo [-json]
package main

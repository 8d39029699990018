// Command compiletime measures how long a device takes to compile a model
// in three states of the caches, each in a fresh process:
//
//   - cold: an empty CACHE_DIR, POCL_KERNEL_CACHE=0 and
//     CUDA_CACHE_DISABLE=1, so every OpenCL program is built from source
//     (neither clinfer's program cache nor POCL's kernel cache nor NVIDIA's
//     compute cache hides the build; on NVIDIA the program binaries are PTX,
//     so loading them still runs the JIT, which its compute cache normally
//     hides);
//   - program cache warm: CACHE_DIR holds the program binaries of an
//     earlier compilation but no model blob, so the graph is transformed
//     and planned again but programs load from their binaries;
//   - model cache: CACHE_DIR holds the model blob too, so Core.CompileModel
//     imports it (LOADED_FROM_CACHE=YES);
//   - with -export, export: a compilation without CACHE_DIR, then
//     CompiledModel.Export (its time, and the blob's size).
//
// Each state's line also gives close: how long the compiled model's Close
// took, the wait for what the device writes to CACHE_DIR after
// CompileModel returned (the GPU's program binaries and the model cache's
// blob).
//
// It also reports the size of the blob the cold compilation left in
// CACHE_DIR, which a device may make smaller than Export's (the GPU leaves
// out the weights its plan record holds packed).
//
// -cache_mode picks CACHE_MODE (OPTIMIZE_SPEED by default: binaries in
// CACHE_DIR and in the blob; OPTIMIZE_SIZE has no program-cache state),
// and -driver_caches keeps POCL's kernel cache on (a fresh POCL_CACHE_DIR
// per run, filled by one compilation first).
//
// The model's dynamic input is fixed to each -shape first, so programs are
// built at compile time and land in the blob. The time is that of
// Core.CompileModel alone (reading the ONNX file is not counted). It
// reports each run and the median per shape and state:
//
//	go run ./bench/compiletime -runs 5 -shape 1x3x640x640 -shape 1x3x320x320
//	go run ./bench/compiletime -runs 3 -export -cache_mode OPTIMIZE_SIZE -driver_caches
package main

// Command infer runs one inference of an ONNX model on a clinfer device.
//
//	infer -m MODEL.onnx -d DEVICE -i NAME=FILE.npy [-i ...] -o OUTDIR [-p KEY=VALUE ...] [-shape NAME=[1,3,48,192] ...]
//
// Inputs come from NumPy .npy files (f32, f16, f64, i64, i32, u8, bool); an
// input without -i gets seeded random data. Each output is written to
// OUTDIR/<output name>.npy. Without -m it runs the embedded default model
// (a small CNN), which is what `make run` does. With no -o it prints a summary
// of each output instead.
//
// It prints what ran where (the runtime model: each executed node, its layer
// type and implementation), the outputs and the timing of each step. Bad
// files, names and values give a one-line error and exit status 1.
//
// -d takes every device name the Core does (CPU, GPU, GPU.1,
// HETERO:GPU,CPU, AUTO, AUTO:GPU,CPU, BATCH:GPU(4)); on AUTO it also prints
// which device ran each inference ("ran on CPU, CPU, GPU.0" while the GPU
// compiles in the background).
package main

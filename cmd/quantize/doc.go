// Command quantize writes a QDQ (int8) model of a float ONNX model:
// post-training static quantization with package quantize, calibrated on
// sample inputs (.npy files) or on seeded random data.
//
//	go run ./cmd/quantize -m det.onnx -calib pages/ -o det_int8.onnx
//	go run ./cmd/quantize -m cls.onnx -calib-random 16 -shape x=[1,3,48,192] -o cls_int8.onnx
//
// -calib DIR: for a model with one input, every .npy file in DIR is one
// sample; for several inputs, every subdirectory holds <input>.npy for
// each. -calib-random N: N samples of seeded uniform data in [-1, 1]
// (-shape fixes dynamic dimensions, 1 otherwise). The weights are int8
// per output channel (symmetric), the activations uint8 (-activations
// i8: int8) per tensor from their min/max (-method percentile: the
// -percentile cut) over the samples, the biases int32. The model written
// is a standard QDQ ONNX model (opset 21) that clinfer runs with int8
// kernels and ONNX Runtime runs as well; quantize prints which nodes were
// quantized and why the others stay float.
//
// -check INPUT.npy then compiles the float and the quantized model on
// -check_device (GPU by default), runs both on the input -iters times,
// alternating, and prints their median latencies and fastest runs, how
// many nodes run in u8/i8, and the agreement of their first outputs (the
// IoU of the elements above -threshold, 0.3: PP-OCR det's binarized map).
// Calibration pages
// and the page checked come from internal/textpage/gen:
//
//	go run ./internal/textpage/gen -o /tmp/det_calib -n 8
//	go run ./internal/textpage/gen -o /tmp/det_page -n 1 -seed 7
//	go run ./cmd/quantize -m det.onnx -calib /tmp/det_calib -d GPU -o det_int8.onnx -check /tmp/det_page/sample_000.npy [-p GPU_TUNING_MODE=FAST]
//
// scripts/ortref/qdq_compare.js does the same in ONNX Runtime.
package main

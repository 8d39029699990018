package main

// benchModel is one model of the table at one input size.
type benchModel struct {
	// Key names the row (-models picks by it).
	Key string
	// File is the model in .cache/models (make models).
	File string
	// Label is the README's name of the row.
	Label string
	// Inputs are the inputs' shapes (name=AxBxC; "name=" is a scalar);
	// the model is reshaped to them and random data fills them.
	Inputs []string
	// Values fills inputs with one value (name=V:type), as bench.js's
	// --value; Stateful are MAKE_STATEFUL's input:output pairs, which
	// bench.js feeds back (--stateful).
	Values   []string
	Stateful string
}

// models are the rows of `make bench-models`, in the README's order:
// PP-OCR (det at 320 and 640, cls, rec), IS-Net medium as shipped (fp16)
// and its float32 twin (cmd/f32twin), IS-Net small (uint8 dynamically
// quantized), Silero VAD v5 streaming 32 ms chunks with its state kept in
// the request, and the openWakeWord heads.
var models = []benchModel{
	{Key: "det_320", File: "ch_PP-OCRv4_det_infer.onnx", Label: "PP-OCRv4 det", Inputs: []string{"x=1x3x320x320"}},
	{Key: "det_640", File: "ch_PP-OCRv4_det_infer.onnx", Label: "PP-OCRv4 det", Inputs: []string{"x=1x3x640x640"}},
	{Key: "cls", File: "ch_ppocr_mobile_v2.0_cls_infer.onnx", Label: "PP-OCR cls", Inputs: []string{"x=1x3x48x192"}},
	{Key: "rec", File: "ch_PP-OCRv4_rec_infer.onnx", Label: "PP-OCRv4 rec", Inputs: []string{"x=1x3x48x320"}},
	{Key: "isnet_medium_f16", File: "isnet_medium_f16.onnx", Label: "IS-Net medium fp16", Inputs: []string{"input=1x3x1024x1024"}},
	{Key: "isnet_medium_f32", File: "isnet_medium_f32.onnx", Label: "IS-Net medium fp32 twin", Inputs: []string{"input=1x3x1024x1024"}},
	{Key: "isnet_small", File: "isnet_small_u8.onnx", Label: "IS-Net small uint8", Inputs: []string{"input=1x3x1024x1024"}},
	{Key: "silero_v5", File: "silero_vad_v5.onnx", Label: "Silero VAD v5 (stateful)", Inputs: []string{"input=1x512", "state=2x1x128", "sr="},
		Values: []string{"sr=16000:int64"}, Stateful: "state:stateN"},
	{Key: "hello_deepa", File: "hello_deepa.onnx", Label: "wake word hello_deepa", Inputs: []string{"onnx::Flatten_0=1x25x96"}},
	{Key: "namaste_deepa", File: "namaste_deepa.onnx", Label: "wake word namaste_deepa", Inputs: []string{"onnx::Flatten_0=1x24x96"}},
}

// Configurations of a row: clinfer's devices and ONNX Runtime.
const (
	cfgCPU      = "CPU"       // clinfer's CPU device
	cfgGPU      = "GPU"       // the GPU device, heuristics alone (GPU_SHIPPED_TUNING=NO), GPU_IN_THREAD=NO
	cfgGPUTuned = "GPU-tuned" // the GPU device with the shipped tuning database, GPU_IN_THREAD=NO
	// cfgGPUInThread is the GPU device, heuristics, with GPU_IN_THREAD=AUTO
	// (the default): on POCL small plans run in the calling thread on the
	// basic device.
	cfgGPUInThread = "GPU-in-thread"
	cfgORT         = "ORT" // ONNX Runtime, CPU, 2 threads
)

// configs are the configurations in the order each round runs them.
var configs = []string{cfgCPU, cfgGPU, cfgGPUTuned, cfgGPUInThread, cfgORT}

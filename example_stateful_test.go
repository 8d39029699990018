package clinfer_test

import (
	"context"
	"fmt"
	"log"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// sileroModel is Silero VAD v5, which `make models` puts in .cache/models:
// inputs "input" (f32[batch, samples]), "state" (f32[2, batch, 128]) and
// "sr" (i64 sample rate); outputs "output" (the speech probability) and
// "stateN" (the state for the next chunk).
const sileroModel = ".cache/models/silero_vad_v5.onnx"

// syntheticSpeech is 16 kHz test audio: in every 800 ms, 360 ms of a
// 125 Hz buzz shaped by one resonance (a crude voice), over faint noise.
func syntheticSpeech(n int) []float32 {
	out := make([]float32, n)
	var y1, y2 float64
	seed := uint32(1)
	for i := range out {
		seed = seed*1664525 + 1013904223
		noise := float64(seed>>8)/(1<<24)*2 - 1
		e := 0.0
		if c := i / 320 % 40; c >= 10 && c < 28 && i%128 == 0 {
			e = 1
		}
		y := e + 1.7*y1 - 0.81*y2
		y2, y1 = y1, y
		out[i] = float32(0.1*y + 0.02*noise)
	}
	return out
}

// A streaming voice-activity detector: Silero VAD compiled stateful
// (MakeStateful), so that its recurrent state stays inside the request
// between 32 ms chunks (on the GPU, in device memory) and the caller feeds
// audio only.
func ExampleMakeStateful() {
	ctx := context.Background()
	core := clinfer.NewCore()
	defer core.Close()
	model, err := core.ReadModel(sileroModel)
	if err != nil {
		log.Fatal(err)
	}
	const chunk = 512 // 32 ms at 16 kHz
	// Fixed shapes: the nested Ifs that decide on shapes fold at compile
	// time, and a stateful input needs a static shape.
	if err := model.Reshape(map[string]graph.PartialShape{"input": graph.ShapeOf(1, chunk), "state": graph.ShapeOf(2, 1, 128)}); err != nil {
		log.Fatal(err)
	}
	cm, err := core.CompileModel(ctx, model, "CPU", clinfer.Props(clinfer.MakeStateful("state:stateN")))
	if err != nil {
		log.Fatal(err)
	}
	defer cm.Close()
	req, err := cm.CreateInferRequest()
	if err != nil {
		log.Fatal(err)
	}
	defer req.Close()
	sr, _ := tensor.FromI64(tensor.Shape{}, []int64{16000})
	if err := req.SetTensor("sr", sr); err != nil {
		log.Fatal(err)
	}
	audio := syntheticSpeech(100 * chunk)
	speaking := false
	for k := 0; k < 100; k++ {
		x, _ := tensor.FromF32(tensor.Shape{1, chunk}, audio[k*chunk:(k+1)*chunk])
		if err := req.SetTensor("input", x); err != nil {
			log.Fatal(err)
		}
		if err := req.Infer(ctx); err != nil {
			log.Fatal(err)
		}
		y, _ := req.Tensor("output")
		p := y.F32()[0]
		switch {
		case !speaking && p > 0.5:
			speaking = true
			fmt.Printf("%5d ms: speech starts (p=%.2f)\n", k*32, p)
		case speaking && p < 0.35:
			speaking = false
			fmt.Printf("%5d ms: speech ends   (p=%.2f)\n", k*32, p)
		}
	}
	states, _ := req.QueryState()
	fmt.Println("states:", states[0].Name())
	// Output:
	//   224 ms: speech starts (p=0.78)
	//   544 ms: speech ends   (p=0.25)
	//  1024 ms: speech starts (p=0.74)
	//  1344 ms: speech ends   (p=0.30)
	//  1824 ms: speech starts (p=0.70)
	//  2144 ms: speech ends   (p=0.25)
	//  2624 ms: speech starts (p=0.65)
	//  2976 ms: speech ends   (p=0.17)
	// states: state
}

// The GPU device exists only in builds with OpenCL; built without it
// (CGO_ENABLED=0 or -tags noopencl) its constructor error is tested in
// clbackend.

//go:build cgo && !noopencl

package clinfer_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/tensor"
)

// Read a model, compile it for the GPU and run it: the ten lines of the
// README (with the errors checked).
func Example() {
	ctx := context.Background()
	core := clinfer.NewCore()
	defer core.Close()
	model, err := core.ReadModel(detModel)
	if err != nil {
		log.Fatal(err)
	}
	cm, err := core.CompileModel(ctx, model, "GPU", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cm.Close()
	x := image(1, 640, 640)
	out, err := cm.Infer(ctx, map[string]*tensor.Tensor{"x": x})
	if err != nil {
		log.Fatal(err)
	}
	probs, err := tensor.Data[float32](out["sigmoid_0.tmp_0"])
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out["sigmoid_0.tmp_0"].Shape(), len(probs))
	// Output: [1,1,640,640] 409600
}

// HETERO splits a model across devices: nodes the first device cannot run
// (or that the user pins elsewhere with RT.Affinity) run on the next one.
func Example_hetero() {
	ctx := context.Background()
	core := clinfer.NewCore()
	defer core.Close()
	model, err := core.ReadModel(smallModel)
	if err != nil {
		log.Fatal(err)
	}
	model.Result("probs").Inputs[0].Node.RT.Affinity = "CPU" // the last op on the CPU
	cm, err := core.CompileModel(ctx, model, "HETERO:GPU,CPU", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cm.Close()
	devs, err := cm.ExecutionDevices()
	if err != nil {
		log.Fatal(err)
	}
	for i, d := range devs {
		devs[i], _, _ = strings.Cut(d, ".") // "GPU.0" -> "GPU"
	}
	ref, err := core.CompileModel(ctx, model, "CPU", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ref.Close()
	in := map[string]*tensor.Tensor{"image": image(1, 64, 64)}
	a, err := cm.Infer(ctx, in)
	if err != nil {
		log.Fatal(err)
	}
	b, err := ref.Infer(ctx, in)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(devs, "matches the CPU:", maxDiff(a["probs"], b["probs"]) < 1e-4)
	// Output: [GPU CPU] matches the CPU: true
}

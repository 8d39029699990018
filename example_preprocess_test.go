// The GPU device exists only in builds with OpenCL; built without it
// (CGO_ENABLED=0 or -tags noopencl) its constructor error is tested in
// clbackend.

//go:build cgo && !noopencl

package clinfer_test

import (
	"context"
	"fmt"
	"image/png"
	"log"
	"os"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/preprocess"
	"github.com/clinfer/clinfer/tensor"
)

// Read a PNG and detect the text on it with PP-OCR det, the image going to
// the GPU as it is: the model, given PrePostProcessor steps, takes u8 RGB
// pixels of any size in NHWC, swaps the channels to the BGR it was trained
// on, converts, resizes and normalises them on the device, in front of
// its first convolution. testdata/page.png is a synthetic page
// (internal/page, `go run ./internal/page/gen`).
func Example_preprocess() {
	ctx := context.Background()
	core := clinfer.NewCore()
	defer core.Close()
	model, err := core.ReadModel(detModel)
	if err != nil {
		log.Fatal(err)
	}
	// The detector sees 640x480, the page's 4:3 scaled down.
	if err := model.Reshape(map[string]clinfer.PartialShape{"x": clinfer.ShapeOf(1, 3, 480, 640)}); err != nil {
		log.Fatal(err)
	}
	ppp := preprocess.New(model)
	in := ppp.Input("x")
	in.Tensor().SetElementType(tensor.U8).SetLayout("NHWC").SetColorFormat(preprocess.RGB).SetSpatialDynamicShape()
	in.Preprocess().ConvertColor(preprocess.BGR).ConvertElementType(tensor.F32).Resize(preprocess.ResizeLinear).
		Mean(0.485*255, 0.456*255, 0.406*255).Scale(0.229*255, 0.224*255, 0.225*255)
	in.Model().SetLayout("NCHW")
	model, err = ppp.Build()
	if err != nil {
		log.Fatal(err)
	}
	cm, err := core.CompileModel(ctx, model, "GPU", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cm.Close()

	f, err := os.Open("testdata/page.png")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		log.Fatal(err)
	}
	x, err := tensor.FromImage(img) // u8 [1, 960, 1280, 3]
	if err != nil {
		log.Fatal(err)
	}
	out, err := cm.Infer(ctx, map[string]*tensor.Tensor{"x": x})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("input", x.Shape(), x.Type(), "-> text map", out["sigmoid_0.tmp_0"].Shape())
	// Seven lines of text; the invoice line's two fields stand apart.
	fmt.Println("text boxes:", textBoxes(out["sigmoid_0.tmp_0"], 0.3, 20))
	// Output:
	// input [1,960,1280,3] u8 -> text map [1,1,480,640]
	// text boxes: 8
}

// textBoxes counts the regions of a detector's text map [1,1,H,W] whose
// probability is above threshold: 4-connected components of at least
// minArea pixels (PP-OCR's post-processing then fits a box to each).
func textBoxes(p *tensor.Tensor, threshold float32, minArea int) int {
	s := p.Shape()
	h, w := int(s[2]), int(s[3])
	v := p.F32()
	seen := make([]bool, len(v))
	boxes := 0
	for start := range v {
		if seen[start] || v[start] <= threshold {
			continue
		}
		area, stack := 0, []int{start}
		seen[start] = true
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			area++
			c := i % w
			for _, j := range []int{i - w, i + w, i - 1, i + 1} {
				if j < 0 || j >= h*w || (j == i-1 && c == 0) || (j == i+1 && c == w-1) || seen[j] || v[j] <= threshold {
					continue
				}
				seen[j] = true
				stack = append(stack, j)
			}
		}
		if area >= minArea {
			boxes++
		}
	}
	return boxes
}

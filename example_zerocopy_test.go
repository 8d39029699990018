// The zero-copy example drives OpenCL itself through the cl package, so it
// needs a build with OpenCL, as the GPU device does.

//go:build cgo && !noopencl

package clinfer_test

import (
	"context"
	"fmt"
	"log"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/tensor"
)

// binarizeSource is the caller's own OpenCL kernel: the first step of
// PP-OCR's DB post-processing, thresholding det's probability map into a
// text mask and counting the text pixels, on the device.
const binarizeSource = `
__kernel void binarize(__global const float* probs, __global uchar* mask,
                       __global int* count, const float thresh, const int n) {
	int i = get_global_id(0);
	if (i >= n) return;
	uchar on = probs[i] > thresh;
	mask[i] = on;
	if (on) atomic_inc(count);
}`

// Zero-copy with your own OpenCL: PP-OCR det runs in your OpenCL context
// and on your queue, writes its probability map into your cl_mem, and
// your kernel post-processes the map on the device. Between det and the
// kernel no byte crosses the host: det's transfers are the image up and
// the map copied into your buffer on the device. The text-pixel count
// equals the host path's (det's output read back, thresholded in Go).
func Example_zeroCopy() {
	const h, w, thresh = 320, 320, 0.3
	ctx := context.Background()
	core := clinfer.NewCore()
	defer core.Close()

	// Your OpenCL objects, made with clinfer's cl package (any OpenCL code
	// can pass its handles the same way): a context and an in-order queue
	// on the device "GPU" means.
	dev, _, err := clbackend.DefaultCLDevice()
	if err != nil {
		log.Fatal(err)
	}
	clctx, err := cl.CreateContext([]*cl.Device{dev})
	if err != nil {
		log.Fatal(err)
	}
	defer clctx.Close()
	queue, err := clctx.CreateCommandQueue(dev, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer queue.Close()
	probs, err := clctx.CreateEmptyBuffer(cl.MemReadWrite, h*w*4)
	if err != nil {
		log.Fatal(err)
	}
	defer probs.Close()

	// clinfer in your context: OCL_CONTEXT, OCL_QUEUE and
	// OCL_CONTEXT_DEVICE_ID, as OpenVINO names them.
	rc, err := core.CreateContext("GPU", clbackend.ContextParams(clctx, 0, queue))
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	model, err := core.ReadModel(detModel)
	if err != nil {
		log.Fatal(err)
	}
	det, err := core.CompileModelIn(ctx, model, rc, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer det.Close()
	// det's output, bound to your buffer (SHARED_MEM_TYPE=OCL_BUFFER,
	// MEM_HANDLE): clinfer takes a reference of its own and leaves yours.
	probMap, err := rc.CreateTensor("det map", tensor.F32, tensor.Shape{1, 1, h, w}, clbackend.BufferParams(probs))
	if err != nil {
		log.Fatal(err)
	}
	defer probMap.Close()
	req, err := det.CreateInferRequest()
	if err != nil {
		log.Fatal(err)
	}
	defer req.Close()
	if err := req.SetTensor("x", page(h, w)); err != nil {
		log.Fatal(err)
	}
	if err := req.SetRemoteTensor("sigmoid_0.tmp_0", probMap); err != nil {
		log.Fatal(err)
	}
	if err := req.Infer(ctx); err != nil {
		log.Fatal(err)
	}
	stage1, err := req.Transfers()
	if err != nil {
		log.Fatal(err)
	}

	// Your kernel on your queue, after det's commands (the queue is in
	// order): nothing waits on the host in between.
	onDevice, err := binarize(clctx, dev, queue, probs, h*w, thresh)
	if err != nil {
		log.Fatal(err)
	}

	// The host path, for comparison: det's map read back, thresholded in Go.
	if err := req.SetTensor("sigmoid_0.tmp_0", tensor.MustNew(tensor.F32, tensor.Shape{1, 1, h, w})); err != nil {
		log.Fatal(err)
	}
	if err := req.Infer(ctx); err != nil {
		log.Fatal(err)
	}
	hostPath, err := req.Transfers()
	if err != nil {
		log.Fatal(err)
	}
	out, err := req.Tensor("sigmoid_0.tmp_0")
	if err != nil {
		log.Fatal(err)
	}
	onHost := 0
	for _, p := range out.F32() {
		if p > thresh {
			onHost++
		}
	}
	fmt.Println("det -> your buffer:", stage1)
	fmt.Println("det -> host:       ", hostPath)
	fmt.Println("text pixels on the device equal the host path's:", onDevice == onHost, onDevice > 0)
	// Output:
	// det -> your buffer: host->device=1228800 device->host=0 device->device=409600
	// det -> host:        host->device=1228800 device->host=409600 device->device=0
	// text pixels on the device equal the host path's: true true
}

// page returns a normalised f32[1,3,h,w] image of a white page with
// three-pixel-high lines of dark "glyphs", which det reads as text.
func page(h, w int64) *tensor.Tensor {
	const white, ink = 2.2, -2.1 // (x/255-mean)/std of PP-OCR's preprocessing
	px := make([]float32, 3*h*w)
	for c := range int64(3) {
		for y := range h {
			for x := range w {
				v := float32(white)
				line := (y/16)%3 == 1
				glyph := (x/6)%2 == 0 && x > 24 && x < w-24
				if line && glyph && (x*7+y*3)%5 != 0 {
					v = ink
				}
				px[(c*h+y)*w+x] = v
			}
		}
	}
	t, err := tensor.Wrap(tensor.Shape{1, 3, h, w}, px)
	if err != nil {
		log.Fatal(err)
	}
	return t
}

// binarize runs binarizeSource over the n probabilities in probs on queue
// and returns the text-pixel count: the only bytes read back are the
// count's four.
func binarize(clctx *cl.Context, dev *cl.Device, queue *cl.CommandQueue, probs *cl.MemObject, n int, thresh float32) (int, error) {
	prog, err := clctx.CreateProgramWithSource([]string{binarizeSource})
	if err != nil {
		return 0, err
	}
	defer prog.Close()
	if err := prog.BuildProgram([]*cl.Device{dev}, "-cl-std=CL1.2"); err != nil {
		return 0, err
	}
	k, err := prog.CreateKernel("binarize")
	if err != nil {
		return 0, err
	}
	defer k.Close()
	mask, err := clctx.CreateEmptyBuffer(cl.MemReadWrite, n)
	if err != nil {
		return 0, err
	}
	defer mask.Close()
	count, err := clctx.CreateBuffer(cl.MemReadWrite, make([]byte, 4))
	if err != nil {
		return 0, err
	}
	defer count.Close()
	if err := k.SetArgs(probs, mask, count, thresh, int32(n)); err != nil {
		return 0, err
	}
	ev, err := queue.EnqueueNDRangeKernel(k, nil, []int{(n + 63) / 64 * 64}, nil, nil)
	if err != nil {
		return 0, err
	}
	defer ev.Close()
	got := make([]int32, 1)
	rd, err := cl.EnqueueReadSlice(queue, count, true, 0, got, nil)
	if err != nil {
		return 0, err
	}
	return int(got[0]), rd.Close()
}

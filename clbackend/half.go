package clbackend

import (
	"os"

	"github.com/clinfer/clinfer/tensor"
)

// EnvEmulateFP16 names the environment variable that, set to 1, lets a
// device without cl_khr_fp16 accept INFERENCE_PRECISION_HINT=f16. The f16
// path stores activations as half and computes in float through
// vload_half/vstore_half, which every OpenCL 1.2 device has, so it runs
// the same kernels there; tests and kernel developers use this on POCL and
// oclgrind, which lack the extension. Users leave it unset: the hint then
// follows what the device reports.
const EnvEmulateFP16 = "CLINFER_EMULATE_FP16"

// hasFP16 reports whether d accepts the f16 hint: it reports cl_khr_fp16,
// or EnvEmulateFP16 is set to 1.
func (d *device) hasFP16() bool { return d.fp16 || os.Getenv(EnvEmulateFP16) == "1" }

// isHalf reports whether value v is stored as f16.
func (b *builder) isHalf(v int) bool { return v >= 0 && b.val(v).typ == tensor.F16 }

// halfDefine returns " -DHALF" when value v is stored as f16: kernels
// written with the FT/LD/ST macros of half.clh then read and write every
// float buffer as half and compute in float.
func (b *builder) halfDefine(v int) string {
	if b.isHalf(v) {
		return " -DHALF"
	}
	return ""
}

// floatsFor is floats stored as the element type of value like: f16 for
// an f16 activation (a kernel built with -DHALF reads every float buffer
// as half), f32 otherwise.
func (b *builder) floatsFor(like int, f []float32) slotArg {
	if !b.isHalf(like) {
		return b.floats(f)
	}
	if len(f) == 0 {
		f = []float32{0}
	}
	t, _ := tensor.FromF32(tensor.Shape{int64(len(f))}, f)
	h, _ := t.Convert(tensor.F16)
	return slotArg(b.newValue(tensor.F16, h.Shape(), h))
}

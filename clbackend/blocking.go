package clbackend

import (
	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/tensor"
)

// blocking is the register blocking of the blocked kernels (block.clh) on the
// plan's device: the vector width VW and the work-group size.
type blocking struct {
	vw    int64
	local func(dims int) []int // nil: the driver picks
}

// blocking picks VW from the device's preferred float vector width (4, 8
// or 16). On a CPU device each work item is its own work group: POCL then
// runs items one after another with their blocks in registers, 2-6x
// faster than larger groups on the PP-OCR shapes (bench/conv_test.go). On
// other devices the driver picks the group size.
func (b *builder) blocking() blocking {
	bl := blocking{vw: 4}
	if w, err := b.c.dev.cl.PreferredVectorWidths(); err == nil {
		switch {
		case w.Float >= 16:
			bl.vw = 16
		case w.Float >= 8:
			bl.vw = 8
		}
	}
	if b.c.dev.typ&cl.DeviceTypeCPU != 0 {
		bl.local = func(dims int) []int {
			l := make([]int, dims)
			for i := range l {
				l[i] = 1
			}
			return l
		}
	}
	return bl
}

// geometry returns the NDRange global rounded up to the work-group size,
// and the work-group size.
func (bl blocking) geometry(global ...int64) (g, l []int) {
	g = make([]int, len(global))
	for i, x := range global {
		g[i] = int(x)
	}
	if bl.local == nil {
		return g, nil
	}
	l = bl.local(len(g))
	for i := range g {
		g[i] = (g[i] + l[i] - 1) / l[i] * l[i]
	}
	return g, l
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// sameFloat reports whether output out is f32 or f16 and every present
// value of vs has its type: the conv and GEMM kernels, built with
// halfDefine(out), read every tensor buffer in that one type.
func (b *builder) sameFloat(out int, vs ...int) bool {
	t := b.val(out).typ
	if t != tensor.F32 && t != tensor.F16 {
		return false
	}
	for _, v := range vs {
		if v >= 0 && b.val(v).typ != t {
			return false
		}
	}
	return true
}

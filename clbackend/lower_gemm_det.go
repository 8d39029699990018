package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// lowerDet runs Det as one det launch over the matrices, eliminating in a
// scratch buffer in double on a device with doubles.
func lowerDet(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	t := b.val(x).typ
	defs, err := b.randomFloat(n, t) // f32, f16 (-DHALF) or f64 (-DDOUBLE)
	if err != nil {
		return err
	}
	ct := tensor.F32
	if b.c.dev.fp64 {
		defs, ct = defs+" -DCT=double", tensor.F64
	}
	s := b.val(x).shape
	m := s[len(s)-1]
	cnt := b.val(y).shape.NumElements()
	scratch := b.temp(ct, tensor.Shape{cnt * m * m})
	return b.emit(n, "det", defs, cnt, slotArg(x), slotArg(y), slotArg(scratch), uint64(cnt), uint64(m))
}

// detLowerings are the GPU table entries of the gemm family's linear
// algebra beyond products.
func detLowerings() map[string]lowering {
	return map[string]lowering{"Det": {lower: lowerDet, half: true}}
}

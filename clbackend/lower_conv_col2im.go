package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// lowerCol2Im runs Col2Im as one col2im launch over the image, each element
// gathering its column values; the geometry is known at plan time.
func lowerCol2Im(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	defines := b.halfDefine(x)
	switch t := b.val(x).typ; {
	case t == tensor.F32 || t == tensor.F16:
	case t == tensor.F64:
		if _, err := b.numType(n, t); err != nil { // cl_khr_fp64
			return err
		}
		defines = "-DT=double -DACC=double"
	case t == tensor.Bool:
		defines = "-DT=uchar -DACC=ulong -DIS_BOOL"
	case t.IsInteger() && t.Bits() != 4:
		defines = "-DT=" + clType(t) + " -DACC=ulong"
	default:
		return errUnsupported(n, "element type %s (the GPU kernel takes f32, f16, f64, integers and booleans)", t) // bf16, 8-bit floats: widerType
	}
	image, ok1 := b.hostInts(b.in(n, 1))
	block, ok2 := b.hostInts(b.in(n, 2))
	if !ok1 || !ok2 {
		return errUnsupported(n, "image_shape and block_shape not known at plan time")
	}
	g, err := graph.Col2ImGeometryOf(n, image, block)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	r := len(image)
	if r > 3 {
		return errUnsupported(n, "%d spatial axes (the GPU kernel takes up to 3)", r)
	}
	var m []int64
	for a := range 3 {
		d := a - (3 - r) // the missing leading axes are of size 1
		if d < 0 {
			m = append(m, 1, 1, 1, 1, 1, 0)
			continue
		}
		m = append(m, g.Image[d], g.Block[d], g.Blocks[d], g.Stride[d], g.Dil[d], g.PadB[d])
	}
	cnt := b.val(y).shape.NumElements()
	return b.emit(n, "col2im", defines, cnt, slotArg(x), slotArg(y), uint64(cnt), b.meta(m))
}

// col2ImLowerings are the GPU table entries of the conv family's Col2Im.
func col2ImLowerings() map[string]lowering {
	return map[string]lowering{"Col2Im": {lower: lowerCol2Im, half: true}}
}

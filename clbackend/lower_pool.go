package clbackend

import (
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// This file holds the windowed ops over three spatial axes: MaxPool and
// AveragePool of 1 to 3 spatial axes (pool.cl), and 3-D Conv and
// ConvTranspose (conv_3d.cl); 1-D and 2-D convolutions stay with lowerConv.

// to3D returns the (D, H, W) view of 1 to 3 spatial values, filling the
// missing leading axes with fill.
func to3D(v []int64, fill int64) (int64, int64, int64) {
	switch len(v) {
	case 1:
		return fill, fill, v[0]
	case 2:
		return fill, v[0], v[1]
	}
	return v[0], v[1], v[2]
}

// lowerPool runs MaxPool (f32, f16 storage, f64, i8, u8, with the
// optional Indices output), AveragePool and LpPool (f32, f16 storage,
// f64) over 1 to 3 spatial axes.
func lowerPool(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	xs, ys := b.val(x).shape, b.val(y).shape
	if len(xs) < 3 || len(xs) > 5 {
		return errUnsupported(n, "%d-D pooling (the GPU kernel takes 1-D to 3-D)", len(xs)-2)
	}
	t := b.val(x).typ
	isMax := n.OpType == "MaxPool"
	var defines string
	switch {
	case t == tensor.F32:
	case t == tensor.F16:
		defines = "-DHALF"
	case isMax && (t == tensor.I8 || t == tensor.U8):
		defines = "-DT=" + clType(t) + " -DIS_INT"
	case t == tensor.F64:
		if _, err := b.numType(n, t); err != nil { // cl_khr_fp64
			return err
		}
		defines = "-DT=double -DA=double"
	default:
		return errUnsupported(n, "element type %s", t)
	}
	r := len(xs) - 2
	kernel := n.Attrs.Ints("kernel_shape", nil)
	if len(kernel) != r {
		return errUnsupported(n, "kernel_shape %v", kernel)
	}
	stride := n.Attrs.Ints("strides", ones(r))
	dil := n.Attrs.Ints("dilations", ones(r))
	begin, end := windowPads(n, xs[2:], ys[2:], kernel, stride, dil)
	m := poolTable(xs, ys, kernel, stride, dil, begin, end, n.Attrs.Int("count_include_pad", 0), n.Attrs.Int("p", 2))
	cnt := ys.NumElements()
	if cnt == 0 {
		return nil
	}
	switch {
	case n.OpType == "LpPool":
		return b.emit(n, "lp_pool", defines, cnt, slotArg(x), slotArg(y), uint64(cnt), b.meta(m))
	case r == 2 && (t == tensor.F32 || t == tensor.F16) && dil[0] == 1 && dil[1] == 1 && ys.NumElements() < 1<<31 && (!isMax || len(n.Outputs) == 1):
		// By runs of output rows (pool_rows.cl), no division per element.
		rows := ys[0] * ys[1] * ys[2]
		run, local := b.profile().poolGroup()
		global := roundGlobal([]int64{ceilDiv(ys[3], run), rows}, local)
		tbl := []int64{xs[2], xs[3], ys[2], ys[3], kernel[0], kernel[1], stride[0], stride[1], begin[0], begin[1], rows,
			n.Attrs.Int("count_include_pad", 0), xs[2] + end[0], xs[3] + end[1]}
		name := "avg_pool2d"
		if isMax {
			name = "max_pool2d"
		}
		if isMax && kernel[0] == 2 && kernel[1] == 2 && stride[0] == 2 && stride[1] == 2 && begin[0] == 0 && begin[1] == 0 {
			name = "max_pool2d_2x2" // pairs of a row as vectors
		}
		if pv := b.profile().poolVector(); name == "max_pool2d_2x2" && pv > 4 {
			defines += fmt.Sprintf(" -DPV=%d", pv)
		}
		return b.emitND(n, name, defines+fmt.Sprintf(" -DRUN=%d", run), global, local, slotArg(x), slotArg(y), b.meta(tbl))
	case !isMax:
		return b.emit(n, "avg_pool", defines, cnt, slotArg(x), slotArg(y), uint64(cnt), b.meta(m))
	case len(n.Outputs) > 1:
		colMajor := int32(n.Attrs.Int("storage_order", 0))
		return b.emit(n, "max_pool_indices", defines, cnt, slotArg(x), slotArg(y), slotArg(b.out(n, 1)), colMajor, uint64(cnt), b.meta(m))
	}
	return b.emit(n, "max_pool", defines, cnt, slotArg(x), slotArg(y), uint64(cnt), b.meta(m))
}

// poolTable is pool.cl's table m of a pooling of x [N, C, spatial...] into
// y: the sizes, window, strides, pads begin and end, dilations, then
// count_include_pad, the padded sizes and LpPool's p.
func poolTable(xs, ys tensor.Shape, kernel, stride, dil, begin, end []int64, includePad, p int64) []int64 {
	D, H, W := to3D(xs[2:], 1)
	OD, OH, OW := to3D(ys[2:], 1)
	KD, KH, KW := to3D(kernel, 1)
	SD, SH, SW := to3D(stride, 1)
	PD, PH, PW := to3D(begin, 0)
	ED, EH, EW := to3D(end, 0)
	DD, DH, DW := to3D(dil, 1)
	return []int64{D, H, W, OD, OH, OW, KD, KH, KW, SD, SH, SW, PD, PH, PW, DD, DH, DW,
		includePad, D + PD + ED, H + PH + EH, W + PW + EW, p}
}

// lowerGlobalLpPool runs GlobalLpPool as lp_pool with one window over
// each plane.
func lowerGlobalLpPool(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	xs, ys := b.val(x).shape, b.val(y).shape
	if len(xs) < 3 || len(xs) > 5 {
		return errUnsupported(n, "%d-D pooling (the GPU kernel takes 1-D to 3-D)", len(xs)-2)
	}
	defines, err := b.uniformFloat(n)
	if err != nil {
		return err
	}
	r := len(xs) - 2
	m := poolTable(xs, ys, xs[2:], ones(r), ones(r), make([]int64, r), make([]int64, r), 0, n.Attrs.Int("p", 2))
	cnt := ys.NumElements()
	return b.emit(n, "lp_pool", defines, cnt, slotArg(x), slotArg(y), uint64(cnt), b.meta(m))
}

func lowerGlobalPool(b *builder, n *graph.Node) error {
	x := b.in(n, 0)
	var axes []int64
	for d := 2; d < len(b.val(x).shape); d++ {
		axes = append(axes, int64(d))
	}
	return b.reduce(n, lowerings()[n.OpType].kernel, x, b.out(n, 0), axes)
}

// poolLowerings are the GPU table entries (see lowering) of the poolings.
func poolLowerings() map[string]lowering {
	return map[string]lowering{
		// the global pools are reductions.
		"MaxPool": {lower: lowerPool, half: true}, "AveragePool": {lower: lowerPool, half: true},
		"GlobalAveragePool": {lower: lowerGlobalPool, kernel: "reduce_mean", half: true},
		"GlobalMaxPool":     {lower: lowerGlobalPool, kernel: "reduce_max", half: true},
		"LpPool":            {lower: lowerPool, half: true},
		"GlobalLpPool":      {lower: lowerGlobalLpPool, half: true},
		"MaxUnpool":         copies(lowerMaxUnpool),
	}
}

// lowerMaxUnpool zeroes the output and scatters the input's values to
// their indices (pool_unpool.cl), moving bits of any element type.
func lowerMaxUnpool(b *builder, n *graph.Node) error {
	x, idx, y := b.in(n, 0), b.in(n, 1), b.out(n, 0)
	xs, ys := b.val(x).shape, b.val(y).shape
	def, err := graph.UnpoolShape(n, xs, nil)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	if b.val(idx).typ != tensor.I64 {
		return errUnsupported(n, "indices of type %s", b.val(idx).typ)
	}
	defs := "-DT=" + bitsType(b.val(x).typ)
	total := ys.NumElements()
	if err := b.emit(n, "unpool_zero", defs, total, slotArg(y), uint64(total)); err != nil {
		return err
	}
	m := append(append([]int64{int64(len(def))}, def...), ys...)
	cnt := xs.NumElements()
	return b.emit(n, "unpool_scatter", defs, cnt, slotArg(x), slotArg(idx), slotArg(y), uint64(cnt), b.meta(m))
}

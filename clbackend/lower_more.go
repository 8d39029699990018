package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// This file holds lowerings of ops whose outputs depend on indices or on
// the order of elements (Hardmax, TopK, OneHot, GatherND, the scatters),
// LayerNormalization with its statistics outputs, and the ops whose
// outputs depend only on shapes (EyeLike, Dropout's mask), which become
// plan constants.

// normAxis returns axis counted from the front of a rank-r shape.
func normAxis(axis int64, r int) int64 {
	if axis < 0 {
		axis += int64(r)
	}
	return axis
}

// prod is the product of dims (1 for none).
func prod(dims []int64) int64 {
	p := int64(1)
	for _, d := range dims {
		p *= d
	}
	return p
}

// lowerDropout is inference-mode Dropout: the output is the input (zero
// copy) and the optional mask is all true, a plan constant. Training mode
// with a non-zero ratio draws a random mask, which no plan can do.
func lowerDropout(b *builder, n *graph.Node) error {
	if v := b.in(n, 2); v >= 0 {
		train, ok := b.hostFloat(v)
		if !ok {
			return errUnsupported(n, "training_mode is not known at plan time")
		}
		if train != 0 {
			ratio := 0.5
			if rv := b.in(n, 1); rv >= 0 {
				if ratio, ok = b.hostFloat(rv); !ok {
					return errUnsupported(n, "ratio is not known at plan time")
				}
			}
			if ratio != 0 {
				return errUnsupported(n, "training mode with ratio %g draws a random mask", ratio)
			}
		}
	}
	b.alias(b.out(n, 0), b.in(n, 0))
	if len(n.Outputs) > 1 {
		mv := b.val(b.out(n, 1))
		ones := make([]bool, mv.shape.NumElements())
		for i := range ones {
			ones[i] = true
		}
		mask, err := tensor.FromBool(mv.shape, ones)
		if err != nil {
			return n.Errorf("Dropout mask: %w", err)
		}
		mv.host = mask
	}
	return nil
}

// lowerEyeLike makes the output a plan constant: ones on diagonal k of a
// 2-D tensor of the input's shape, which is known at plan time.
func lowerEyeLike(b *builder, n *graph.Node) error {
	yv := b.val(b.out(n, 0))
	s := yv.shape
	if len(s) != 2 {
		return errUnsupported(n, "rank %d input (EyeLike takes 2-D)", len(s))
	}
	k := n.Attrs.Int("k", 0)
	v := make([]float64, s.NumElements())
	for i := int64(0); i < s[0]; i++ {
		if j := i + k; j >= 0 && j < s[1] {
			v[i*s[1]+j] = 1
		}
	}
	eye, err := tensor.FromFloat64s(yv.typ, s, v)
	if err != nil {
		return errUnsupported(n, "output type %s: %v", yv.typ, err)
	}
	yv.host = eye
	return nil
}

// lowerLayerNorm normalises over the axes from axis on, with the optional
// Mean and InvStdDev outputs (f32, one value per row).
func lowerLayerNorm(b *builder, n *graph.Node) error {
	half, err := b.uniformFloat(n)
	if err != nil {
		return err
	}
	x, sc, bias, y := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	s := b.val(x).shape
	ax := normAxis(n.Attrs.Int("axis", -1), len(s))
	outer, inner := prod(s[:ax]), prod(s[ax:])
	if b.val(sc).shape.NumElements() != inner || (bias >= 0 && b.val(bias).shape.NumElements() != inner) {
		return errUnsupported(n, "scale or bias broadcast over the normalised axes")
	}
	barg, has := optArg(bias, sc)
	eps := n.Attrs.Float("epsilon", 1e-5)
	if outer == 0 {
		return nil
	}
	if len(n.Outputs) == 1 {
		return b.emit(n, "layer_norm", half, outer, slotArg(x), slotArg(sc), barg, slotArg(y), uint64(outer), uint64(inner), eps, uint32(has))
	}
	for i := 1; i < len(n.Outputs); i++ {
		if t := b.val(b.out(n, i)).typ; t != tensor.F32 {
			return errUnsupported(n, "output %d of type %s (the GPU kernel writes f32 statistics)", i, t)
		}
	}
	mean := b.out(n, 1)
	inv := b.temp(tensor.F32, b.val(mean).shape)
	if len(n.Outputs) > 2 {
		inv = b.out(n, 2)
	}
	return b.emit(n, "layer_norm_stats", half, outer, slotArg(x), slotArg(sc), barg, slotArg(y), slotArg(mean), slotArg(inv),
		uint64(outer), uint64(inner), eps, uint32(has))
}

// lowerHardmax writes 1 at the first maximum of every fibre along the axis.
func lowerHardmax(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	if t := b.val(x).typ; t != tensor.F32 {
		return errUnsupported(n, "element type %s (the GPU kernel takes f32)", t)
	}
	s := b.val(x).shape
	if len(s) == 0 {
		return errUnsupported(n, "a scalar input")
	}
	ax := normAxis(n.Attrs.Int("axis", -1), len(s))
	outer, inner := prod(s[:ax]), prod(s[ax+1:])
	if cnt := outer * inner; cnt > 0 && s[ax] > 0 {
		return b.emit(n, "hardmax", "", cnt, slotArg(x), slotArg(y), uint64(cnt), uint64(s[ax]), uint64(inner))
	}
	return nil
}

// lowerTopK ranks every element within its fibre in parallel; K must be
// known at plan time (it sets the output shape).
func lowerTopK(b *builder, n *graph.Node) error {
	x := b.in(n, 0)
	ks, ok := b.hostInts(b.in(n, 1))
	if !ok || len(ks) != 1 {
		return errUnsupported(n, "K is not known at plan time")
	}
	t := b.val(x).typ
	if !t.IsInteger() && t != tensor.F32 && t != tensor.F64 {
		return errUnsupported(n, "element type %s", t)
	}
	ct, err := b.numType(n, t)
	if err != nil {
		return err
	}
	defines := "-DT=" + ct
	if t.IsFloat() {
		defines += " -DIS_FLOAT"
	}
	s := b.val(x).shape
	if len(s) == 0 {
		return errUnsupported(n, "a scalar input")
	}
	ax := normAxis(n.Attrs.Int("axis", -1), len(s))
	k, cnt := ks[0], s.NumElements()
	if k <= 0 || cnt == 0 {
		return nil
	}
	name := "topk"
	if n.Attrs.Int("largest", 1) == 0 {
		name = "topk_smallest"
	}
	return b.emit(n, name, defines, cnt, slotArg(x), slotArg(b.out(n, 0)), slotArg(b.out(n, 1)), uint64(cnt),
		uint64(s[ax]), uint64(prod(s[ax+1:])), uint64(k))
}

// lowerOneHot writes values[1] at each index along the new axis and
// values[0] elsewhere; depth must be known at plan time (it sets the
// output shape).
func lowerOneHot(b *builder, n *graph.Node) error {
	idx, vals, y := b.in(n, 0), b.in(n, 2), b.out(n, 0)
	depth, ok := b.hostFloat(b.in(n, 1))
	if !ok {
		return errUnsupported(n, "depth is not known at plan time")
	}
	it := b.val(idx).typ
	if !it.IsInteger() && it != tensor.F32 && it != tensor.F64 {
		return errUnsupported(n, "indices of type %s", it)
	}
	ct, err := b.numType(n, it)
	if err != nil {
		return err
	}
	is := b.val(idx).shape
	ax := normAxis(n.Attrs.Int("axis", -1), len(is)+1)
	cnt := b.val(y).shape.NumElements()
	if cnt == 0 {
		return nil
	}
	return b.emit(n, "onehot", "-DT="+bitsType(b.val(y).typ)+" -DIDX="+ct, cnt, slotArg(idx), slotArg(vals), slotArg(y),
		uint64(cnt), uint64(int64(depth)), uint64(prod(is[ax:])))
}

// indexType checks that v holds i32 or i64 indices and returns their
// OpenCL type.
func (b *builder) indexType(n *graph.Node, v int) (string, error) {
	if t := b.val(v).typ; t != tensor.I64 && t != tensor.I32 {
		return "", errUnsupported(n, "indices of type %s", t)
	}
	return clType(b.val(v).typ), nil
}

// lowerGatherND copies the slice every index tuple selects.
func lowerGatherND(b *builder, n *graph.Node) error {
	x, idx, y := b.in(n, 0), b.in(n, 1), b.out(n, 0)
	it, err := b.indexType(n, idx)
	if err != nil {
		return err
	}
	ds, is := b.val(x).shape, b.val(idx).shape
	batch := int(n.Attrs.Int("batch_dims", 0))
	if len(is) == 0 {
		return errUnsupported(n, "scalar indices")
	}
	k := int(is[len(is)-1])
	if batch < 0 || batch+k > len(ds) {
		return errUnsupported(n, "indices %v with batch_dims %d for data %v", is, batch, ds)
	}
	cnt := b.val(y).shape.NumElements()
	if cnt == 0 {
		return nil
	}
	tuples := prod(is[:len(is)-1])
	m := []int64{int64(k), prod(ds[batch+k:]), tuples / max(prod(ds[:batch]), 1), prod(ds[batch:])}
	m = append(m, ds[batch:batch+k]...)
	m = append(m, strides(ds)[batch:batch+k]...)
	return b.emit(n, "gather_nd", "-DT="+bitsType(b.val(y).typ)+" -DIDX="+it, cnt, slotArg(x), slotArg(idx), slotArg(y),
		uint64(cnt), b.meta(m))
}

// scatterReductions numbers the reduction attribute as scatter.cl does.
var scatterReductions = map[string]int32{"none": 0, "add": 1, "mul": 2, "max": 3, "min": 4}

// scatterSetup copies data into the output (the scatter kernels update it
// in place) and returns the kernel's type defines and reduction.
func (b *builder) scatterSetup(n *graph.Node) (string, int32, error) {
	x, idx, y := b.in(n, 0), b.in(n, 1), b.out(n, 0)
	it, err := b.indexType(n, idx)
	if err != nil {
		return "", 0, err
	}
	name := n.Attrs.String("reduction", "none")
	red, ok := scatterReductions[name]
	if !ok {
		return "", 0, errUnsupported(n, "reduction %q", name)
	}
	t := b.val(y).typ
	defines := "-DT=" + bitsType(t)
	if red != 0 {
		ct, err := b.numType(n, t)
		if err != nil || t == tensor.Bool {
			return "", 0, errUnsupported(n, "reduction %s on %s", name, t)
		}
		defines = "-DT=" + ct
		if t.IsFloat() {
			defines += " -DIS_FLOAT"
		}
	}
	if s := b.val(y).shape; s.NumElements() > 0 {
		st := strides(s)
		if err := b.copyView(n, x, y, s, st, 0, st, 0); err != nil {
			return "", 0, err
		}
	}
	return defines + " -DIDX=" + it, red, nil
}

// lowerScatterElements applies each line of updates along the axis in one
// work item, in order.
func lowerScatterElements(b *builder, n *graph.Node) error {
	defines, red, err := b.scatterSetup(n)
	if err != nil {
		return err
	}
	idx, upd, y := b.in(n, 1), b.in(n, 2), b.out(n, 0)
	us, os := b.val(upd).shape, b.val(y).shape
	if len(us) == 0 || len(us) != len(os) {
		return errUnsupported(n, "updates %v for data %v", us, os)
	}
	ax := normAxis(n.Attrs.Int("axis", 0), len(us))
	if us.NumElements() == 0 {
		return nil
	}
	m := []int64{int64(len(us))}
	m = append(m, us...)
	m = append(m, strides(os)...)
	m = append(m, ax, os[ax])
	cnt := us.NumElements() / us[ax]
	return b.emit(n, "scatter_elements", defines, cnt, slotArg(idx), slotArg(upd), slotArg(y), uint64(cnt), b.meta(m), red)
}

// lowerScatterND applies element i of every update slice in work item i,
// tuple by tuple.
func lowerScatterND(b *builder, n *graph.Node) error {
	defines, red, err := b.scatterSetup(n)
	if err != nil {
		return err
	}
	idx, upd, y := b.in(n, 1), b.in(n, 2), b.out(n, 0)
	is, os := b.val(idx).shape, b.val(y).shape
	if len(is) == 0 || int(is[len(is)-1]) > len(os) {
		return errUnsupported(n, "indices %v for data %v", is, os)
	}
	k := int(is[len(is)-1])
	tuples, slice := prod(is[:len(is)-1]), prod(os[k:])
	if tuples == 0 || slice == 0 {
		return nil
	}
	m := []int64{int64(k), tuples, slice}
	m = append(m, os[:k]...)
	m = append(m, strides(os)[:k]...)
	return b.emit(n, "scatter_nd", defines, slice, slotArg(idx), slotArg(upd), slotArg(y), uint64(slice), b.meta(m), red)
}

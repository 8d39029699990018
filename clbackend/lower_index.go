package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

func lowerGather(b *builder, n *graph.Node) error {
	x, idx, y := b.in(n, 0), b.in(n, 1), b.out(n, 0)
	is := b.val(x).shape
	ax := n.Attrs.Int("axis", 0)
	if ax < 0 {
		ax += int64(len(is))
	}
	it := b.val(idx).typ
	if it != tensor.I64 && it != tensor.I32 {
		return errUnsupported(n, "indices of type %s", it)
	}
	inner := int64(1)
	for _, d := range is[ax+1:] {
		inner *= d
	}
	cnt := b.val(y).shape.NumElements()
	nidx := max(b.val(idx).shape.NumElements(), 1)
	if b.gatherView(x, idx, y, ax, inner) {
		return nil
	}
	return b.emit(n, "gather", "-DT="+bitsType(b.val(y).typ)+" -DIDX="+clType(it), cnt,
		slotArg(x), slotArg(idx), slotArg(y), uint64(cnt), uint64(inner), uint64(is[ax]), uint64(nidx))
}

// lowerGatherElements gathers along one axis with an indices tensor of the
// output's shape.
func lowerGatherElements(b *builder, n *graph.Node) error {
	x, idx, y := b.in(n, 0), b.in(n, 1), b.out(n, 0)
	is, os := b.val(x).shape, b.val(y).shape
	it := b.val(idx).typ
	if it != tensor.I64 && it != tensor.I32 {
		return errUnsupported(n, "indices of type %s", it)
	}
	if len(is) == 0 {
		return errUnsupported(n, "a scalar input")
	}
	ax := n.Attrs.Int("axis", 0)
	if ax < 0 {
		ax += int64(len(is))
	}
	cnt := os.NumElements()
	if cnt == 0 {
		return nil
	}
	if is[ax] == 0 {
		return errUnsupported(n, "an empty axis %d", ax)
	}
	m := []int64{int64(len(is))}
	m = append(m, os...)
	m = append(m, strides(is)...)
	m = append(m, ax, is[ax])
	return b.emit(n, "gather_elements", "-DT="+bitsType(b.val(y).typ)+" -DIDX="+clType(it), cnt,
		slotArg(x), slotArg(idx), slotArg(y), uint64(cnt), b.meta(m))
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

// scatterReductions numbers the reduction attribute as index_scatter.cl does.
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

// indexLowerings are the GPU table entries (see lowering) of the gathers,
// scatters and OneHot.
func indexLowerings() map[string]lowering {
	return map[string]lowering{
		"Gather": copies(lowerGather), "GatherElements": copies(lowerGatherElements), "GatherND": {lower: lowerGatherND},
		"ScatterElements": {lower: lowerScatterElements}, "ScatterND": {lower: lowerScatterND}, "OneHot": {lower: lowerOneHot},
	}
}

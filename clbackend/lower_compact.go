package clbackend

import (
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/tensor"
)

// Stream compaction (compact_scan.cl, compact_select.cl): a count lowering
// flags the kept elements and prefix-sums the flags on the device (scan),
// whose total the plan reads back (plan_sizes.go); the lowering, in the
// continuation, scatters each kept element to its offset.

// scanned are the flags and their exclusive prefix sums a count lowering
// hands its lowering.
type scanned struct{ flags, offs int }

// hostI32 is a host value of one i32: a size known at plan time.
func (b *builder) hostI32(v int64) int {
	t, _ := tensor.FromI32(tensor.Shape{1}, []int32{int32(v)})
	return b.newValue(tensor.I32, t.Shape(), t)
}

// scan emits the exclusive prefix sums of the cnt i32 counts in flags into
// offs (the scan family's variants choose the work group), and returns
// the value holding their total (one i32).
func (b *builder) scan(n *graph.Node, flags, offs int, cnt int64) (int, error) {
	if cnt == 0 {
		return b.hostI32(0), nil
	}
	if cnt >= 1<<31 {
		return 0, errUnsupported(n, "%d elements to compact (the GPU counts in 32 bits)", cnt)
	}
	heur := mustVariant("scan", "blocks", 64)
	if b.profile().gpu {
		heur = mustVariant("scan", "blocks", 256)
	}
	// A node whose own family chose first (NonMaxSuppression) reports
	// that choice as its KERNEL_VARIANT.
	if prev, ok := b.pl.variants[n]; ok {
		defer func() { b.pl.variants[n] = prev }()
	}
	total := -1
	err := b.choose(n, "scan", fmt.Sprintf("n=%d", cnt), false, func(kernels.Variant) string { return "" }, heur, func(v kernels.Variant) error {
		t, err := b.scanLevels(n, v, flags, offs, cnt)
		total = t
		return err
	})
	return total, err
}

// scanLevels scans cnt counts of in into out by blocks, the blocks' totals
// by a level of their own, and returns the value of the last level's one
// total.
func (b *builder) scanLevels(n *graph.Node, v kernels.Variant, in, out int, cnt int64) (int, error) {
	wg := int64(v.Get("WG"))
	block := wg * 4
	nb := (cnt + block - 1) / block
	sums := b.temp(tensor.I32, tensor.Shape{nb})
	if err := b.emitND(n, "scan_blocks", v.Defines(), []int{int(nb * wg)}, []int{int(wg)},
		slotArg(in), slotArg(out), slotArg(sums), uint64(cnt)); err != nil {
		return 0, err
	}
	if nb == 1 {
		return sums, nil
	}
	offs := b.temp(tensor.I32, tensor.Shape{nb})
	total, err := b.scanLevels(n, v, sums, offs, nb)
	if err != nil {
		return 0, err
	}
	return total, b.emit(n, "scan_add", v.Defines(), cnt, slotArg(out), slotArg(offs), uint64(cnt))
}

// flagType is the -D options nonzero_flags tests an element of type t
// with: its OpenCL type, and for f16 and bf16 the bits of the magnitude.
func (b *builder) flagType(n *graph.Node, t tensor.ElementType) (string, error) {
	switch t {
	case tensor.F16, tensor.BF16:
		return "-DT=ushort -DMASK=0x7fff", nil
	}
	ct, err := b.numType(n, t)
	if err != nil {
		return "", err
	}
	return "-DT=" + ct, nil
}

// compacted returns what n's count lowering left for its lowering.
func (b *builder) compacted(n *graph.Node) (scanned, error) {
	s, ok := b.auxOf(n).(scanned)
	if !ok {
		return scanned{}, errUnsupported(n, "its output size was not counted on the device")
	}
	return s, nil
}

// countNonZero flags x's non-zero elements and scans them.
func countNonZero(b *builder, n *graph.Node) (int, error) {
	x := b.in(n, 0)
	cnt := b.val(x).shape.NumElements()
	defines, err := b.flagType(n, b.val(x).typ)
	if err != nil {
		return 0, err
	}
	flags, offs := b.temp(tensor.I32, tensor.Shape{cnt}), b.temp(tensor.I32, tensor.Shape{cnt})
	if err := b.emit(n, "nonzero_flags", defines, cnt, slotArg(x), slotArg(flags), uint64(cnt)); err != nil {
		return 0, err
	}
	b.setAux(n, scanned{flags, offs}, flags, offs)
	return b.scan(n, flags, offs, cnt)
}

// lowerNonZero writes each kept element's coordinates at its offset.
func lowerNonZero(b *builder, n *graph.Node) error {
	s, err := b.compacted(n)
	if err != nil {
		return err
	}
	shape := b.val(b.in(n, 0)).shape
	if len(shape) == 0 {
		shape = tensor.Shape{1}
	}
	k := b.val(b.out(n, 0)).shape[1]
	cnt := shape.NumElements()
	if k == 0 || cnt == 0 {
		return nil
	}
	m := append(append([]int64{int64(len(shape))}, shape...), strides(shape)...)
	return b.emit(n, "nonzero_scatter", "", cnt, slotArg(s.flags), slotArg(s.offs), slotArg(b.out(n, 0)), uint64(cnt), b.meta(m), uint64(k))
}

// axisItems returns the items Compress and Unique select from their
// input: its slices along the axis attribute (outer, the axis and inner
// sizes), or its elements without one.
func (b *builder) axisItems(n *graph.Node) (outer, dim, inner int64) {
	xs := b.val(b.in(n, 0)).shape
	if !n.Attrs.Has("axis") {
		return 1, xs.NumElements(), 1
	}
	ax := normAxis(n.Attrs.Int("axis", 0), len(xs))
	return prod(xs[:ax]), xs[ax], prod(xs[ax+1:])
}

// countCompress flags the slices whose condition is true and scans them.
func countCompress(b *builder, n *graph.Node) (int, error) {
	cond := b.in(n, 1)
	_, dim, _ := b.axisItems(n)
	clen := b.val(cond).shape.NumElements()
	flags, offs := b.temp(tensor.I32, tensor.Shape{dim}), b.temp(tensor.I32, tensor.Shape{dim})
	if err := b.emit(n, "compress_flags", "", dim, slotArg(cond), slotArg(flags), uint64(dim), uint64(clen)); err != nil {
		return 0, err
	}
	b.setAux(n, scanned{flags, offs}, flags, offs)
	return b.scan(n, flags, offs, dim)
}

// lowerCompress copies each kept slice to its offset.
func lowerCompress(b *builder, n *graph.Node) error {
	s, err := b.compacted(n)
	if err != nil {
		return err
	}
	x, y := b.in(n, 0), b.out(n, 0)
	outer, dim, inner := b.axisItems(n)
	k := b.val(y).shape.NumElements() / max(outer*inner, 1)
	cnt := outer * dim * inner
	if k == 0 || cnt == 0 {
		return nil
	}
	return b.emit(n, "compress_scatter", "-DT="+bitsType(b.val(x).typ), cnt, slotArg(x), slotArg(s.flags), slotArg(s.offs), slotArg(y),
		uint64(cnt), uint64(dim), uint64(inner), uint64(k))
}

// sortedUnique is what Unique's count lowering hands its lowering: the
// items' sorted order, the run starts and their offsets.
type sortedUnique struct{ order, flags, offs int }

// uniqueDefines are the type defines compact_unique.cl compares t with:
// f16 and bf16 are moved as ushort and compared by their float values.
func (b *builder) uniqueDefines(n *graph.Node, t tensor.ElementType) (string, error) {
	switch t {
	case tensor.F16:
		return "-DT=ushort -DKEY_HALF -DIS_FLOAT", nil
	case tensor.BF16:
		return "-DT=ushort -DKEY_BF16 -DIS_FLOAT", nil
	}
	ct, err := b.numType(n, t)
	if err != nil {
		return "", err
	}
	if t.IsFloat() {
		ct += " -DIS_FLOAT"
	}
	return "-DT=" + ct, nil
}

// countUnique sorts the items (a bitonic network over dim rounded up to a
// power of two), flags the start of each run of equal items and scans the
// flags: the runs are the unique items.
func countUnique(b *builder, n *graph.Node) (int, error) {
	x := b.in(n, 0)
	defines, err := b.uniqueDefines(n, b.val(x).typ)
	if err != nil {
		return 0, err
	}
	outer, dim, inner := b.axisItems(n)
	if dim == 0 {
		return b.hostI32(0), nil
	}
	p := int64(1)
	for p < dim {
		p *= 2
	}
	meta := b.meta([]int64{outer, dim, inner})
	order := b.temp(tensor.I32, tensor.Shape{p})
	if err := b.emit(n, "unique_init", "", p, slotArg(order), uint64(p)); err != nil {
		return 0, err
	}
	for k := int64(2); k <= p; k *= 2 {
		for j := k / 2; j > 0; j /= 2 {
			if err := b.emit(n, "unique_sort_step", defines, p/2, slotArg(x), slotArg(order), uint64(p/2), meta, uint64(j), uint64(k)); err != nil {
				return 0, err
			}
		}
	}
	flags, offs := b.temp(tensor.I32, tensor.Shape{dim}), b.temp(tensor.I32, tensor.Shape{dim})
	if err := b.emit(n, "unique_flags", defines, dim, slotArg(x), slotArg(order), slotArg(flags), uint64(dim), meta); err != nil {
		return 0, err
	}
	b.setAux(n, sortedUnique{order, flags, offs}, order, flags, offs)
	return b.scan(n, flags, offs, dim)
}

// lowerUnique writes the unique items, their first indices, the inverse
// indices and the counts, in sorted order or in order of first
// occurrence (sorted=0: the first occurrences ranked by a second scan).
func lowerUnique(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	outer, dim, inner := b.axisItems(n)
	k := b.val(y).shape.NumElements() / max(outer*inner, 1)
	if k == 0 {
		return nil
	}
	su, ok := b.auxOf(n).(sortedUnique)
	if !ok {
		return errUnsupported(n, "its output size was not counted on the device")
	}
	defines, err := b.uniqueDefines(n, b.val(x).typ)
	if err != nil {
		return err
	}
	out := func(i int, t tensor.ElementType, size int64) int {
		if i < len(n.Outputs) {
			return b.out(n, i)
		}
		return b.temp(t, tensor.Shape{size})
	}
	first, start, isfirst := b.temp(tensor.I32, tensor.Shape{k}), b.temp(tensor.I32, tensor.Shape{k}), b.temp(tensor.I32, tensor.Shape{dim})
	indices, inverse, counts := out(1, tensor.I64, k), out(2, tensor.I64, dim), out(3, tensor.I64, k)
	if err := b.emit(n, "unique_groups", "", dim, slotArg(su.order), slotArg(su.flags), slotArg(su.offs), slotArg(first), slotArg(start),
		slotArg(inverse), slotArg(isfirst), uint64(dim)); err != nil {
		return err
	}
	sorted := n.Attrs.Int("sorted", 1) != 0
	rank := first
	if !sorted {
		rank = b.temp(tensor.I32, tensor.Shape{dim})
		if _, err := b.scan(n, isfirst, rank, dim); err != nil {
			return err
		}
	}
	meta := b.meta([]int64{outer, dim, inner})
	cnt := outer * k * inner
	if err := b.emit(n, "unique_outputs", defines, cnt, slotArg(x), slotArg(first), slotArg(start), slotArg(rank), slotArg(y),
		slotArg(indices), slotArg(counts), uint64(cnt), meta, uint64(k), int32(boolInt(sorted))); err != nil {
		return err
	}
	if sorted {
		return nil
	}
	return b.emit(n, "unique_remap", "", dim, slotArg(inverse), slotArg(first), slotArg(rank), uint64(dim))
}

// boolInt is 1 for true.
func boolInt(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

// compactLowerings are the GPU table entries (see lowering) of NonZero,
// Compress and Unique: a count lowering and, in the continuation, the
// scatter.
func compactLowerings() map[string]lowering {
	return map[string]lowering{
		"NonZero":  {lower: lowerNonZero, count: countNonZero, half: true},
		"Compress": {lower: lowerCompress, count: countCompress, half: true},
		"Unique":   {lower: lowerUnique, count: countUnique},
	}
}

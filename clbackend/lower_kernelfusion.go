package clbackend

import (
	"fmt"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/kernels/gen"
	"github.com/clinfer/clinfer/tensor"
)

// lowerKernelFusion is the one lowering of every KernelFusion node, whatever
// fusion declared it (fusion.KernelFusions): it launches the catalogue
// kernel the node names under the node's launch convention with the
// arguments every such kernel takes: the inputs, the outputs, the number
// of work items n, the shape table and the float params (graph.LaunchRows
// and graph.LaunchElementwise say what the table holds). The inputs and
// outputs are all f32, or all f16 (f16 activations): the kernel is then
// built with -DHALF and reads and writes them through half.clh; the params
// stay f32. Adding a fusion changes nothing here.
func lowerKernelFusion(b *builder, n *graph.Node) error {
	if _, err := graph.KernelFusionBody(n); err != nil {
		return errUnsupported(n, "%v", err)
	}
	half, err := b.uniformFloat(n)
	if err != nil {
		return err
	}
	want := tensor.F32
	if half != "" {
		want = tensor.F16
	}
	y := b.out(n, 0)
	ys := b.val(y).shape
	name := n.Attrs.String(graph.AttrKernel, "")
	for j := range n.Outputs {
		o := b.val(b.out(n, j))
		if o.typ != want && !(name == graph.GeneratedKernel && quantTail(n) == o.typ) {
			return errUnsupported(n, "output %d of type %s (kernel fusions take f32, or f16 throughout)", j, o.typ)
		}
		if !o.shape.Equal(ys) {
			return errUnsupported(n, "output %d has shape %v, output 0 %v (the outputs of a kernel fusion share a shape)", j, o.shape, ys)
		}
	}
	launch := n.Attrs.String(graph.AttrLaunch, "")
	switch launch {
	case graph.LaunchGEMMRows:
		return lowerGEMMRows(b, n, half)
	case graph.LaunchDenseChain:
		return lowerDenseChain(b, n, half)
	case graph.LaunchSEBlock:
		return lowerSEBlock(b, n, half)
	case graph.LaunchDeconv:
		return lowerDeconvFusion(b, n)
	}
	// The iteration space the inputs broadcast to: the output, or what a
	// reduction's rows span.
	var args []any
	shapes := make([]tensor.Shape, len(n.Inputs))
	for i := range n.Inputs {
		if b.in(n, i) < 0 {
			return errUnsupported(n, "input %d is omitted (kernel fusions take every input)", i)
		}
		shapes[i] = b.val(b.in(n, i)).shape
	}
	space := ys
	if launch == graph.LaunchReduceRows {
		if space, err = reducedSpace(n, shapes); err != nil {
			return err
		}
	}
	for i := range n.Inputs {
		v := b.in(n, i)
		if !broadcastsTo(shapes[i], space) {
			return errUnsupported(n, "input %d %v does not broadcast to the iteration space %v, as the launch conventions need", i, shapes[i], space)
		}
		args = append(args, slotArg(v))
	}
	for j := range n.Outputs {
		args = append(args, slotArg(b.out(n, j)))
	}
	table := broadcastMeta(space, shapes...)
	cnt := ys.NumElements()
	switch launch {
	case graph.LaunchReduceRows:
		if cnt == 0 {
			return nil
		}
		d := space.NumElements() / cnt
		if d == 0 || d*cnt != space.NumElements() {
			return errUnsupported(n, "a reduction of %v to %v with empty or uneven rows", space, ys)
		}
		table = append([]int64{d}, table...)
	case graph.LaunchElementwise:
	case graph.LaunchRows:
		row := int64(1)
		if len(ys) > 0 {
			row = ys[len(ys)-1]
		}
		if row == 0 {
			return nil
		}
		cnt /= row
		table = append([]int64{row}, table...)
	default:
		return errUnsupported(n, "launch convention %q", launch)
	}
	if cnt == 0 {
		return nil
	}
	if name == graph.GeneratedKernel {
		return b.generated(n, half, cnt, table, args)
	}
	args = append(args, uint64(cnt), b.meta(table), b.floats(n.Attrs.Floats(graph.AttrParams, nil)))
	k, err := kernels.Lookup(name)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	fam, ok := kernels.FamilyOfEntry(k.Entry)
	if !ok || n.Attrs.String(graph.AttrLaunch, "") != graph.LaunchElementwise {
		return b.emit(n, name, half, cnt, args...)
	}
	// A kernel fusion of a hot family (se_residual): EPT elements per item.
	key := fmt.Sprintf("%s %v%s", name, table, half)
	return b.choose(n, fam.Name, key, true, func(kernels.Variant) string { return "" }, b.profile().runs(fam.Name),
		func(v kernels.Variant) error { return b.emitRuns(n, name, half, v, cnt, table, args...) })
}

// generated launches the kernel package gen prints from the body of
// KernelFusion node n (a chain of FuseElementwiseChains; only
// graph.LaunchElementwise) over cnt elements: the inputs and output in
// args, then cnt, the shape table and the params the generator chose. The
// program is built and cached by its source like a catalogue file's
// (program cache, CACHE_DIR, export), so chains of the same ops share it;
// the build options fix what the plan knows (the table's rank and each
// input's innermost stride), and the eltwise family's variants (flat or
// rows, EPT elements per item) lay out the launch as they do
// eltwise_binary's.
func (b *builder) generated(n *graph.Node, half string, cnt int64, table []int64, args []any) error {
	body, err := graph.KernelFusionBody(n)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	switch l := n.Attrs.String(graph.AttrLaunch, ""); l {
	case graph.LaunchReduceRows:
		// One item per output element, folding its row.
		k, err := gen.Reduction(body)
		if err != nil {
			return errUnsupported(n, "%v", err)
		}
		args = append(args, uint64(cnt), b.meta(table), b.floats(k.Params))
		global, _ := group1D(cnt, 0)
		return b.emitKernel(n, k.Spec(), half, global, nil, args...)
	case graph.LaunchElementwise:
	default:
		return errUnsupported(n, "a generated kernel of launch convention %q (generated chains are element-wise or reduce rows)", l)
	}
	k, err := gen.Elementwise(body)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	args = append(args, uint64(cnt), b.meta(table), b.floats(k.Params))
	r := table[0]
	defines := fmt.Sprintf("%s -DRANK=%d", half, r)
	if quantTail(n) != tensor.Undefined {
		defines += b.exactDivision()
	}
	for i := range n.Inputs {
		defines += fmt.Sprintf(" -DS%d=%d", i, table[(int64(i)+2)*r])
	}
	key := fmt.Sprintf("chain%d %v%s", len(n.Inputs), table, half)
	return b.choose(n, "eltwise", key, false, func(kernels.Variant) string { return "" }, b.profile().runs("eltwise"),
		func(v kernels.Variant) error {
			global, local := runsGeometry(v, cnt, table)
			return b.emitKernel(n, k.Spec(), defines+" "+v.Defines(), global, local, args...)
		})
}

// quantTail is the type a generated chain's QuantizeLinear tail
// (gen.SupportsQuantizeTail) stores, Undefined without one.
func quantTail(n *graph.Node) tensor.ElementType {
	body, err := graph.KernelFusionBody(n)
	if err != nil || len(body.Results) != 1 {
		return tensor.Undefined
	}
	if last := body.Results[0].Input(0).Node; last != nil && gen.SupportsQuantizeTail(last) {
		return last.Outputs[0].Type
	}
	return tensor.Undefined
}

// gemmRowsGroup is the most items of a graph.LaunchGEMMRows work group
// (the kernels' local arrays hold that many).
const gemmRowsGroup = 256

// lowerGEMMRows launches KernelFusion node n of graph.LaunchGEMMRows: one
// work group per row of output 0, input 0 rows of K, input 1 a [K, C]
// matrix, the other inputs [C]; the kernel is built with -DVW, the
// device's preferred vector width (4, 8 or 16: the columns an item takes
// at a time), and the group is the smallest power of two whose items
// cover C that way, within gemmRowsGroup and the device's work-group
// limit (its items then loop over the chunks).
func lowerGEMMRows(b *builder, n *graph.Node, half string) error {
	y := b.out(n, 0)
	ys := b.val(y).shape
	if len(n.Inputs) < 2 || len(n.Outputs) != 1 || len(ys) == 0 {
		return errUnsupported(n, "a %s fusion takes rows, a matrix and one output of rows", graph.LaunchGEMMRows)
	}
	xs, ws := b.val(b.in(n, 0)).shape, b.val(b.in(n, 1)).shape
	if len(xs) == 0 || len(ws) != 2 || xs[len(xs)-1] != ws[0] || ys[len(ys)-1] != ws[1] {
		return errUnsupported(n, "input %v times matrix %v into %v: want rows of K, [K, C] and rows of C", xs, ws, ys)
	}
	K, C := ws[0], ws[1]
	rows := ys.NumElements() / max(C, 1)
	if xs.NumElements() != rows*K {
		return errUnsupported(n, "input %v does not hold the %d rows of output %v", xs, rows, ys)
	}
	args := []any{slotArg(b.in(n, 0)), slotArg(b.in(n, 1))}
	for i := 2; i < len(n.Inputs); i++ {
		v := b.in(n, i)
		if v < 0 || b.val(v).shape.NumElements() != C {
			return errUnsupported(n, "input %d: want a vector of the row's %d columns", i, C)
		}
		args = append(args, slotArg(v))
	}
	if rows == 0 || C == 0 {
		return nil
	}
	// An item takes vw columns at a time, one vector of the device's
	// preferred width (4, 8 or 16).
	vw := b.rowsVW()
	defines := fmt.Sprintf("%s -DVW=%d", half, vw)
	group, err := b.rowsGroup(n, defines, C, vw)
	if err != nil {
		return err
	}
	args = append(args, slotArg(y), uint64(rows), b.meta([]int64{C, K}), b.floats(n.Attrs.Floats(graph.AttrParams, nil)))
	return b.emitND(n, n.Attrs.String(graph.AttrKernel, ""), defines, []int{int(rows) * group}, []int{group}, args...)
}

// rowsVW is the vector width of a kernel that runs one work group per row
// (the device's preferred one: 4, 8 or 16).
func (b *builder) rowsVW() int {
	vw := 4
	for vw < 16 && vw*2 <= b.profile().vectorWidth {
		vw *= 2
	}
	return vw
}

// rowsGroup is the work group of node n's kernel (built with defines)
// that runs one work group per row of C columns, vw at a time: the
// smallest power of two whose items cover the row, within gemmRowsGroup
// and the kernel's limit (groupLimit: the device's and the kernel's own
// CL_KERNEL_WORK_GROUP_SIZE).
func (b *builder) rowsGroup(n *graph.Node, defines string, C int64, vw int) (int, error) {
	limit, err := b.groupLimit(n, n.Attrs.String(graph.AttrKernel, ""), defines)
	if err != nil {
		return 0, err
	}
	group, limit := 1, min(gemmRowsGroup, limit)
	for int64(group*vw) < C && group*2 <= limit {
		group *= 2
	}
	return group, nil
}

// lowerDenseChain launches KernelFusion node n of graph.LaunchDenseChain
// (fusion.FuseDenseChain): one work group per row of input 0, the layers'
// weights in the kernel's fusion.DenseChainMaxLayers slots of four
// buffers, the row kept in local memory of DW floats per half (every
// layer's width C, rounded up to 64) between layers.
func lowerDenseChain(b *builder, n *graph.Node, half string) error {
	body, err := graph.KernelFusionBody(n)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	layers, err := fusion.DenseChainLayers(body)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	eps := n.Attrs.Floats(graph.AttrParams, nil)
	if len(eps) != len(layers) || len(n.Outputs) != 1 {
		return errUnsupported(n, "%d params and %d outputs for %d layers (want one epsilon per layer, one output)", len(eps), len(n.Outputs), len(layers))
	}
	xs := b.val(b.in(n, 0)).shape
	if len(xs) == 0 {
		return errUnsupported(n, "input 0 is a scalar, want rows")
	}
	K0 := xs[len(xs)-1]
	rows := xs.NumElements() / max(K0, 1)
	x := slotArg(b.in(n, 0))
	args := []any{x}
	table := []int64{int64(len(layers))}
	widest, K := int64(0), K0
	next := 1
	for _, l := range layers {
		take := 2
		if l.Norm {
			take = 4
		}
		if next+take > len(n.Inputs) {
			return errUnsupported(n, "%d inputs for layers %v", len(n.Inputs), layers)
		}
		ws := b.val(b.in(n, next)).shape
		if len(ws) != 2 || ws[0] != K {
			return errUnsupported(n, "layer matrix %v after a row of %d", ws, K)
		}
		C := ws[1]
		for i := next + 1; i < next+take; i++ {
			if b.val(b.in(n, i)).shape.NumElements() != C {
				return errUnsupported(n, "input %d: want a vector of the layer's %d columns", i, C)
			}
		}
		for i := range 4 {
			if i < take {
				args = append(args, slotArg(b.in(n, next+i)))
			} else {
				args = append(args, x) // never read
			}
		}
		norm := int64(0)
		if l.Norm {
			norm = 1
		}
		table = append(table, K, C, norm, l.Act)
		widest, K, next = max(widest, C), C, next+take
	}
	if next != len(n.Inputs) {
		return errUnsupported(n, "%d inputs for layers %v", len(n.Inputs), layers)
	}
	if ys := b.val(b.out(n, 0)).shape; ys.NumElements() != rows*K {
		return errUnsupported(n, "output %v does not hold %d rows of %d", ys, rows, K)
	}
	for range fusion.DenseChainMaxLayers - len(layers) {
		args = append(args, x, x, x, x)
	}
	if rows == 0 {
		return nil
	}
	dw := fusion.DenseChainRowFloats(widest)
	if lm := b.profile().localMem; lm > 0 && (2*dw+gemmRowsGroup)*4 > lm {
		return errUnsupported(n, "rows of %d floats do not fit the device's %d bytes of local memory", widest, lm)
	}
	vw := b.rowsVW()
	defines := fmt.Sprintf("%s -DVW=%d -DDW=%d", half, vw, dw)
	group, err := b.rowsGroup(n, defines, widest, vw)
	if err != nil {
		return err
	}
	args = append(args, slotArg(b.out(n, 0)), uint64(rows), b.meta(table), b.floats(eps))
	return b.emitND(n, n.Attrs.String(graph.AttrKernel, ""), defines, []int{int(rows) * group}, []int{group}, args...)
}

// broadcastsTo reports whether s broadcasts to out (numpy rules) without
// growing it.
func broadcastsTo(s, out tensor.Shape) bool {
	if len(s) > len(out) {
		return false
	}
	off := len(out) - len(s)
	for i, d := range s {
		if d != 1 && d != out[off+i] {
			return false
		}
	}
	return true
}

// kernelFusionLowerings are the GPU table entries (see lowering) of the generic
// fused op.
func kernelFusionLowerings() map[string]lowering {
	return map[string]lowering{
		// every declared kernel fusion;
		// its kernel is written with half.clh.
		graph.OpKernelFusion: {lower: lowerKernelFusion, half: true},
	}
}

// reducedSpace is the iteration space of KernelFusion node n of
// graph.LaunchReduceRows, the input of the reduction its body ends in:
// what the planned input shapes broadcast to, as the element-wise ops
// before the reduction broadcast them.
func reducedSpace(n *graph.Node, shapes []tensor.Shape) (tensor.Shape, error) {
	space := graph.ShapeOf()
	for _, s := range shapes {
		var err error
		if space, err = graph.BroadcastShapes(space, graph.ShapeOf(s...)); err != nil {
			return nil, errUnsupported(n, "inputs of shapes %v: %v", shapes, err)
		}
	}
	s, ok := space.ToShape()
	if !ok {
		return nil, errUnsupported(n, "inputs of shapes %v broadcast to %v", shapes, space)
	}
	return s, nil
}

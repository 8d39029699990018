package ir

import (
	"encoding/xml"
	"strconv"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// movementImports move data without arithmetic.
var movementImports = []importRow{
	{"Reshape", 1, importReshape},
	{"Transpose", 1, importTranspose},
	{"Squeeze", 1, importSqueeze},
	{"Squeeze", 15, importSqueeze},
	{"Unsqueeze", 1, axesOp("Unsqueeze", true)},
	{"Concat", 1, importConcat},
	{"Split", 1, importSplit},
	{"VariadicSplit", 1, importVariadicSplit},
	{"StridedSlice", 1, importStridedSlice},
	{"Slice", 8, importSlice},
	{"Tile", 1, importTile},
	{"Pad", 1, importPad},
	{"Pad", 12, importPad},
	{"Broadcast", 1, importBroadcast},
	{"Broadcast", 3, importBroadcast},
	{"DepthToSpace", 1, importDepthToSpace},
	{"SpaceToDepth", 1, importSpaceToDepth},
	{"ReverseSequence", 1, importReverseSequence},
	{"ShuffleChannels", 1, importShuffleChannels},
	{"Reverse", 1, importReverse},
	{"Roll", 7, importRoll},
	{"SpaceToBatch", 2, importSpaceToBatch},
	{"BatchToSpace", 2, importBatchToSpace},
}

// i64 casts an integer index input (shape, axes, repeats) to i64, the op
// set's index type, unless it is already.
func (c *layerCtx) i64(i int, suffix string) (graph.Output, error) {
	return c.castTo(c.in[i], tensor.I64, suffix)
}

func importReshape(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	special, err := c.boolean("special_zero", false)
	if err != nil {
		return nil, err
	}
	shape, err := c.i64(1, "shape_i64")
	if err != nil {
		return nil, err
	}
	return one(c.op("Reshape", "", graph.Attrs{"allowzero": b2i(!special)}, c.in[0], shape))
}

// importTranspose: the order input becomes perm (an empty order reverses
// the axes, as no perm does).
func importTranspose(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	order, err := c.ints(1, "order")
	if err != nil {
		return nil, err
	}
	attrs := graph.Attrs{}
	if len(order) > 0 {
		attrs["perm"] = order
	}
	return one(c.op("Transpose", "", attrs, c.in[0]))
}

func importSqueeze(c *layerCtx) ([]graph.Output, error) {
	if c.opset >= 15 {
		skip, err := c.boolean("allow_axis_skip", false)
		if err != nil {
			return nil, err
		}
		if skip {
			return nil, c.attrErrorf("allow_axis_skip", "true is not supported")
		}
	}
	return axesOp("Squeeze", false)(c)
}

// axesOp converts an op whose second input is axes (i64 in the op set).
func axesOp(opType string, required bool) importFunc {
	return func(c *layerCtx) ([]graph.Output, error) {
		lo := 1
		if required {
			lo = 2
		}
		if err := c.inputs(lo, 2); err != nil {
			return nil, err
		}
		in := []graph.Output{c.in[0]}
		if len(c.in) == 2 {
			a, err := c.i64(1, "axes_i64")
			if err != nil {
				return nil, err
			}
			in = append(in, a)
		}
		return one(c.op(opType, "", nil, in...))
	}
}

func importConcat(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, -1); err != nil {
		return nil, err
	}
	axis, err := c.int("axis", 0)
	if err != nil {
		return nil, err
	}
	return one(c.op("Concat", "", graph.Attrs{"axis": axis}, c.in...))
}

// importTile: repeats shorter than the rank repeat the last axes; longer,
// they add leading axes.
func importTile(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	x := c.in[0]
	reps, err := c.i64(1, "repeats_i64")
	if err != nil {
		return nil, err
	}
	r := x.Shape().Rank()
	if v, ok := c.value(1); ok && r >= 0 {
		l, _ := graph.IntValues(v)
		switch {
		case len(l) < r:
			pad := make([]int64, r-len(l))
			for i := range pad {
				pad[i] = 1
			}
			reps = c.constI64("repeats", false, append(pad, l...)...)
		case len(l) > r:
			axes := make([]int64, len(l)-r)
			for i := range axes {
				axes[i] = int64(i)
			}
			if x, err = c.op("Unsqueeze", "leading", nil, x, c.constI64("leading_axes", false, axes...)); err != nil {
				return nil, err
			}
		}
	}
	return one(c.op("Tile", "", nil, x, reps))
}

// importPad: pads_begin and pads_end become the op set's one pads list.
func importPad(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(3, 4); err != nil {
		return nil, err
	}
	mode, err := c.enum("pad_mode", "constant", "constant", "edge", "reflect", "symmetric")
	if err != nil {
		return nil, err
	}
	if mode == "symmetric" {
		return nil, c.attrErrorf("pad_mode", "symmetric padding is not in clinfer's op set (constant, edge, reflect are)")
	}
	var pads graph.Output
	b, okb := c.value(1)
	e, oke := c.value(2)
	if okb && oke {
		bv, _ := graph.IntValues(b)
		ev, _ := graph.IntValues(e)
		pads = c.constI64("pads", false, append(append([]int64(nil), bv...), ev...)...)
	} else {
		bo, err := c.i64(1, "pads_begin_i64")
		if err != nil {
			return nil, err
		}
		eo, err := c.i64(2, "pads_end_i64")
		if err != nil {
			return nil, err
		}
		if pads, err = c.op("Concat", "pads", graph.Attrs{"axis": int64(0)}, bo, eo); err != nil {
			return nil, err
		}
	}
	in := []graph.Output{c.in[0], pads}
	if len(c.in) == 4 && mode == "constant" {
		in = append(in, c.in[3])
	}
	attrs := graph.Attrs{}
	if mode != "constant" {
		attrs["mode"] = mode
	}
	return one(c.op("Pad", "", attrs, in...))
}

// importBroadcast: numpy and bidirectional are Expand (a numpy target is
// the output shape, which Expand's bidirectional rule also gives);
// explicit places the data's axes at axes_mapping first.
func importBroadcast(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 3); err != nil {
		return nil, err
	}
	mode, err := c.enum("mode", "numpy", "numpy", "explicit", "bidirectional", "pdpd")
	if err != nil {
		return nil, err
	}
	x := c.in[0]
	shape, err := c.i64(1, "target_shape_i64")
	if err != nil {
		return nil, err
	}
	switch mode {
	case "pdpd":
		return nil, c.attrErrorf("mode", "pdpd broadcasting is not supported")
	case "explicit":
		if len(c.in) != 3 {
			return nil, c.errorf(ErrInvalidModel, "explicit broadcasting needs axes_mapping")
		}
		mapping, err := c.ints(2, "axes_mapping")
		if err != nil {
			return nil, err
		}
		ts := c.in[1].Shape()
		if !ts.RankKnown || len(ts.Dims) != 1 || !ts.Dims[0].IsStatic() {
			return nil, c.errorf(ErrUnsupportedAttribute, "explicit broadcasting needs a target_shape of known length")
		}
		var missing []int64
		for i := int64(0); i < ts.Dims[0].Size; i++ {
			if !containsInt(mapping, i) {
				missing = append(missing, i)
			}
		}
		if len(missing) > 0 {
			if x, err = c.op("Unsqueeze", "explicit", nil, x, c.constI64("explicit_axes", false, missing...)); err != nil {
				return nil, err
			}
		}
	}
	return one(c.op("Expand", "", nil, x, shape))
}

func importDepthToSpace(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	bs, err := c.int("block_size", 1)
	if err != nil {
		return nil, err
	}
	mode, err := c.enum("mode", "blocks_first", "blocks_first", "depth_first")
	if err != nil {
		return nil, err
	}
	m := "DCR"
	if mode == "depth_first" {
		m = "CRD"
	}
	return one(c.op("DepthToSpace", "", graph.Attrs{"blocksize": bs, "mode": m}, c.in[0]))
}

func importSpaceToDepth(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	bs, err := c.int("block_size", 1)
	if err != nil {
		return nil, err
	}
	mode, err := c.enum("mode", "blocks_first", "blocks_first", "depth_first")
	if err != nil {
		return nil, err
	}
	if mode != "blocks_first" {
		return nil, c.attrErrorf("mode", "depth_first is not in clinfer's op set (SpaceToDepth is blocks_first)")
	}
	return one(c.op("SpaceToDepth", "", graph.Attrs{"blocksize": bs}, c.in[0]))
}

func importReverseSequence(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	batch, err := c.int("batch_axis", 0)
	if err != nil {
		return nil, err
	}
	seq, err := c.int("seq_axis", 1)
	if err != nil {
		return nil, err
	}
	r, err := c.rank(0)
	if err != nil {
		return nil, err
	}
	if batch < 0 {
		batch += int64(r)
	}
	if seq < 0 {
		seq += int64(r)
	}
	lens, err := c.i64(1, "seq_lengths_i64")
	if err != nil {
		return nil, err
	}
	return one(c.op("ReverseSequence", "", graph.Attrs{"batch_axis": batch, "time_axis": seq}, c.in[0], lens))
}

// importShuffleChannels: reshape the axis into [group, C/group], swap the
// two and reshape back (static input shapes).
func importShuffleChannels(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	axis, err := c.int("axis", 1)
	if err != nil {
		return nil, err
	}
	group, err := c.int("group", 1)
	if err != nil {
		return nil, err
	}
	s, ok := c.in[0].Shape().ToShape()
	if !ok {
		return nil, c.errorf(ErrUnsupportedAttribute, "ShuffleChannels needs a static input shape, have %v", c.in[0].Shape())
	}
	if axis < 0 {
		axis += int64(len(s))
	}
	if axis < 0 || int(axis) >= len(s) || group < 1 || s[axis]%group != 0 {
		return nil, c.badAttr("group", errf("%d does not divide axis %d of %v", group, axis, s))
	}
	split := append(append(append([]int64(nil), s[:axis]...), group, s[axis]/group), s[axis+1:]...)
	a, err := c.op("Reshape", "split", nil, c.in[0], c.constI64("split_shape", false, split...))
	if err != nil {
		return nil, err
	}
	perm := make([]int64, len(split))
	for i := range perm {
		perm[i] = int64(i)
	}
	perm[axis], perm[axis+1] = perm[axis+1], perm[axis]
	t, err := c.op("Transpose", "swap", graph.Attrs{"perm": perm}, a)
	if err != nil {
		return nil, err
	}
	return one(c.op("Reshape", "", nil, t, c.constI64("shape", false, s...)))
}

// movementExports write the data movement ops.
var movementExports = map[string]exportFunc{
	"Reshape": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("allowzero") || e.in(1).Type() != tensor.I64 {
			return false, nil
		}
		return e.single("Reshape", 1, []xml.Attr{dataAttr("special_zero", boolStr(e.attrInt("allowzero", 0) == 0))}, in...)
	},
	"Transpose": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("perm") {
			return false, nil
		}
		perm := e.n.Attrs.Ints("perm", nil)
		if perm == nil && e.n.Attrs.Has("perm") {
			return false, nil
		}
		return e.single("Transpose", 1, nil, in[0], e.i64Src("order", false, perm...))
	},
	"Squeeze":   axesAs("Squeeze"),
	"Unsqueeze": axesAs("Unsqueeze"),
	"Concat": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("axis") || !e.n.Attrs.Has("axis") {
			return false, nil
		}
		return e.single("Concat", 1, []xml.Attr{dataAttr("axis", strconv.FormatInt(e.attrInt("axis", 0), 10))}, in...)
	},
	"Split": func(e *exportCtx) (bool, error) {
		if !e.onlyAttrs("axis", "num_outputs") || !e.in(0).Valid() {
			return false, nil
		}
		axis := e.i64Src("axis", true, e.attrInt("axis", 0))
		if len(e.n.Inputs) == 1 {
			// An equal split into as many parts as outputs.
			return e.single("Split", 1, []xml.Attr{dataAttr("num_splits", strconv.Itoa(len(e.n.Outputs)))}, from(e.in(0)), axis)
		}
		l, ok := e.ints(1)
		if !ok || e.in(1).Type() != tensor.I64 || e.n.Attrs.Has("num_outputs") {
			return false, nil
		}
		for _, x := range l {
			if x < 0 {
				return false, nil
			}
		}
		return e.single("VariadicSplit", 1, nil, from(e.in(0)), axis, from(e.in(1)))
	},
	"Slice": exportSlice,
	"Tile": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs() || e.in(1).Type() != tensor.I64 {
			return false, nil
		}
		return e.single("Tile", 1, nil, in...)
	},
	"Pad":    exportPad,
	"Expand": exportExpand,
	"DepthToSpace": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("blocksize", "mode") {
			return false, nil
		}
		mode := "blocks_first"
		if e.n.Attrs.String("mode", "DCR") == "CRD" {
			mode = "depth_first"
		}
		return e.single("DepthToSpace", 1, []xml.Attr{dataAttr("block_size", strconv.FormatInt(e.attrInt("blocksize", 1), 10)), dataAttr("mode", mode)}, in...)
	},
	"SpaceToDepth": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("blocksize") {
			return false, nil
		}
		return e.single("SpaceToDepth", 1, []xml.Attr{dataAttr("block_size", strconv.FormatInt(e.attrInt("blocksize", 1), 10)), dataAttr("mode", "blocks_first")}, in...)
	},
	"ReverseSequence": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("batch_axis", "time_axis") || e.in(1).Type() != tensor.I64 {
			return false, nil
		}
		return e.single("ReverseSequence", 1, []xml.Attr{dataAttr("batch_axis", strconv.FormatInt(e.attrInt("batch_axis", 1), 10)),
			dataAttr("seq_axis", strconv.FormatInt(e.attrInt("time_axis", 0), 10))}, in...)
	},
}

// axesAs writes Squeeze or Unsqueeze (axes, when given, i64).
func axesAs(typ string) exportFunc {
	return func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs() || (len(in) == 2 && e.in(1).Type() != tensor.I64) {
			return false, nil
		}
		return e.single(typ, 1, nil, in...)
	}
}

// exportPad: constant pads on every axis split into IR's begin and end.
func exportPad(e *exportCtx) (bool, error) {
	if !e.onlyAttrs("mode") || len(e.n.Inputs) > 3 || !e.in(0).Valid() {
		return false, nil
	}
	mode := e.n.Attrs.String("mode", "constant")
	if mode != "constant" && mode != "edge" && mode != "reflect" {
		return false, nil
	}
	pads, ok := e.ints(1)
	if !ok || !e.owned(1) || e.in(1).Type() != tensor.I64 || len(pads)%2 != 0 {
		return false, nil
	}
	h := len(pads) / 2
	in := []src{from(e.in(0)), e.i64Src("pads_begin", false, pads[:h]...), e.i64Src("pads_end", false, pads[h:]...)}
	if v := e.in(2); v.Valid() {
		if mode != "constant" {
			return false, nil
		}
		in = append(in, from(v))
	}
	return e.single("Pad", 12, []xml.Attr{dataAttr("pad_mode", mode)}, in...)
}

// exportExpand is Broadcast-3's bidirectional mode.
func exportExpand(e *exportCtx) (bool, error) {
	in, ok := e.inputs()
	if !ok || !e.onlyAttrs() || e.in(1).Type() != tensor.I64 {
		return false, nil
	}
	return e.single("Broadcast", 3, []xml.Attr{dataAttr("mode", "bidirectional")}, in...)
}

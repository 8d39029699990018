package ir

import (
	"github.com/clinfer/clinfer/graph"
)

// importRegionYolo reads RegionYolo-1 over [N, C, H, W]: per region (num
// of them with do_softmax, else one per mask entry) of coords + 1 +
// classes channels, x and y (the first two) and the confidence (channel
// coords) go through a sigmoid, the classes through a softmax over them
// (do_softmax) or a sigmoid; the other coordinates pass. With do_softmax
// the dims axis..end_axis are flattened into one, as OpenVINO's output
// is; without, the output keeps the regions' channels.
func importRegionYolo(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	r, err := c.rank(0)
	if err != nil {
		return nil, err
	}
	if r != 4 {
		return nil, c.errorf(ErrInvalidModel, "input has rank %d, want 4 ([N, C, H, W])", r)
	}
	attr := func(name string, def int64) (int64, error) { return c.int(name, def) }
	coords, err := attr("coords", 4)
	if err != nil {
		return nil, err
	}
	classes, err := attr("classes", 1)
	if err != nil {
		return nil, err
	}
	num, err := attr("num", 1)
	if err != nil {
		return nil, err
	}
	soft, err := c.boolean("do_softmax", true)
	if err != nil {
		return nil, err
	}
	mask, _, err := c.intList("mask")
	if err != nil {
		return nil, err
	}
	regions := num
	if !soft {
		regions = int64(len(mask))
	}
	k := coords + 1 + classes
	if coords < 2 || classes < 1 || regions < 1 {
		return nil, c.errorf(ErrInvalidModel, "coords %d, classes %d and %d regions: want coords >= 2 and a class and a region", coords, classes, regions)
	}
	x := c.in[0]
	if d := x.Shape().Dims[1]; !d.IsStatic() || d.Size < regions*k {
		return nil, c.errorf(ErrInvalidModel, "input has %v channels, want %d regions of %d", d, regions, k)
	} else if d.Size > regions*k {
		if x, err = c.op("Slice", "regions", nil, x, c.constI64("regions_start", false, 0), c.constI64("regions_end", false, regions*k), c.constI64("channel_axis", false, 1)); err != nil {
			return nil, err
		}
	}
	shape, err := c.op("Shape", "shape", nil, x)
	if err != nil {
		return nil, err
	}
	y, err := c.op("Reshape", "by_region", nil, x, c.constI64("by_region_shape", false, 0, regions, k, -1))
	if err != nil {
		return nil, err
	}
	part := func(name string, from, to int64, op string, attrs graph.Attrs) (graph.Output, error) {
		p, err := c.op("Slice", name, nil, y, c.constI64(name+"_start", false, from), c.constI64(name+"_end", false, to), c.constI64(name+"_axis", false, 2))
		if err != nil || op == "" {
			return p, err
		}
		return c.op(op, name+"_out", attrs, p)
	}
	var parts []graph.Output
	for _, p := range []struct {
		name     string
		from, to int64
		op       string
		attrs    graph.Attrs
	}{{"xy", 0, 2, "Sigmoid", nil}, {"wh", 2, coords, "", nil}, {"confidence", coords, coords + 1, "Sigmoid", nil},
		{"classes", coords + 1, k, map[bool]string{true: "Softmax", false: "Sigmoid"}[soft], map[bool]graph.Attrs{true: {"axis": int64(2)}}[soft]}} {
		if p.from == p.to {
			continue
		}
		o, err := part(p.name, p.from, p.to, p.op, p.attrs)
		if err != nil {
			return nil, err
		}
		parts = append(parts, o)
	}
	if y, err = c.op("Concat", "regions_out", graph.Attrs{"axis": int64(2)}, parts...); err != nil {
		return nil, err
	}
	if !soft {
		return one(c.op("Reshape", "", nil, y, shape))
	}
	axis, err := attr("axis", 1)
	if err != nil {
		return nil, err
	}
	end, err := attr("end_axis", -1)
	if err != nil {
		return nil, err
	}
	if axis < 0 {
		axis += 4
	}
	if end < 0 {
		end += 4
	}
	if axis < 0 || end > 3 || axis > end {
		return nil, c.errorf(ErrInvalidModel, "axis %d to end_axis %d is not a range of the 4 dims", axis, end)
	}
	flat := []graph.Output{}
	if axis > 0 {
		lead, err := c.op("Slice", "lead_dims", nil, shape, c.constI64("lead_start", false, 0), c.constI64("lead_end", false, axis))
		if err != nil {
			return nil, err
		}
		flat = append(flat, lead)
	}
	flat = append(flat, c.constI64("flattened", false, -1))
	if end < 3 {
		tail, err := c.op("Slice", "tail_dims", nil, shape, c.constI64("tail_start", false, end+1), c.constI64("tail_end", false, 4))
		if err != nil {
			return nil, err
		}
		flat = append(flat, tail)
	}
	fs, err := c.op("Concat", "flat_shape", graph.Attrs{"axis": int64(0)}, flat...)
	if err != nil {
		return nil, err
	}
	return one(c.op("Reshape", "", nil, y, fs))
}

// importReorgYolo reads ReorgYolo-2 ([N, C, H, W], stride s, to [N, C*s*s,
// H/s, W/s]) as OpenVINO's reference orders it: the input's values viewed
// as [N, C/(s*s), H*s, W*s] are split into s-by-s phases, which lead the
// channels; static C, H and W.
func importReorgYolo(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	s, err := c.int("stride", -1)
	if err != nil {
		return nil, err
	}
	if s < 1 {
		return nil, c.badAttr("stride", errf("%d is not a positive stride", s))
	}
	sh := c.in[0].Shape()
	if !sh.RankKnown || sh.Rank() != 4 || !sh.Dims[1].IsStatic() || !sh.Dims[2].IsStatic() || !sh.Dims[3].IsStatic() {
		return nil, c.errorf(ErrUnsupportedAttribute, "the reader needs the input [N, C, H, W] with C, H and W static (%v)", sh)
	}
	ch, h, w := sh.Dims[1].Size, sh.Dims[2].Size, sh.Dims[3].Size
	if ch%(s*s) != 0 || h%s != 0 || w%s != 0 {
		return nil, c.errorf(ErrInvalidModel, "input %v does not split by stride %d (C by %d, H and W by %d)", sh, s, s*s, s)
	}
	x, err := c.op("Reshape", "phases", nil, c.in[0], c.constI64("phases_shape", false, 0, ch/(s*s), h, s, w, s))
	if err != nil {
		return nil, err
	}
	if x, err = c.op("Transpose", "phases_first", graph.Attrs{"perm": []int64{0, 3, 5, 1, 2, 4}}, x); err != nil {
		return nil, err
	}
	return one(c.op("Reshape", "", nil, x, c.constI64("shape", false, 0, ch*s*s, h/s, w/s)))
}

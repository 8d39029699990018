package ir

import (
	"math"
	"strconv"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// tiOutput is how a TensorIterator output comes out of the Loop it
// becomes.
type tiOutput struct {
	carried int // index into the carried values, or -1
	scan    int // index of the scan output, or -1
	axis    int64
	reverse bool // the iterations' values concatenated last first
	last    bool // the last iteration's value of a scan output
}

// tiSlicing reads a port map entry's axis, part_size and stride: the
// whole axis, forward (stride part_size, start 0, end -1) or backward
// (stride -part_size, start -1, end 0).
func (c *layerCtx) tiSlicing(e xmlPortMapEntry, rank int) (axis, part int64, reverse bool, err error) {
	num := func(s string, def int64) (int64, error) {
		if s == "" {
			return def, nil
		}
		return strconv.ParseInt(s, 10, 64)
	}
	axis, err1 := num(e.Axis, 0)
	part, err2 := num(e.PartSize, 1)
	stride, err3 := num(e.Stride, 1)
	start, err4 := num(e.Start, 0)
	end, err5 := num(e.End, -1)
	for _, e := range []error{err1, err2, err3, err4, err5} {
		if e != nil {
			return 0, 0, false, c.errorf(ErrInvalidModel, "port map: %v", e)
		}
	}
	if axis < 0 {
		axis += int64(rank)
	}
	if axis < 0 || axis >= int64(rank) || part < 1 {
		return 0, 0, false, c.errorf(ErrInvalidModel, "port map %s: axis %s or part_size %s out of range", e.ExternalPortID, e.Axis, e.PartSize)
	}
	switch {
	case stride == part && start == 0 && end == -1:
	case stride == -part && start == -1 && end == 0:
		reverse = true
	default:
		return 0, 0, false, c.errorf(ErrUnsupportedAttribute, "port map %s: start %d, end %d, stride %d, part_size %d (the whole axis forward or backward is supported)", e.ExternalPortID, start, end, stride, part)
	}
	return axis, part, reverse, nil
}

// importTensorIterator maps TensorIterator-1 onto the op set's Loop: the
// iteration count is the sliced inputs' length over part_size; a sliced
// input is captured whole and the body takes iteration i's part of it
// (from the end for a negative stride); inputs a back edge feeds are
// carried, the others captured. An output with an axis concatenates the
// iterations' values along it (last first for a negative stride); one
// without is the last iteration's value.
func importTensorIterator(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, -1); err != nil {
		return nil, err
	}
	l := c.l
	body, gc, backFrom, err := c.loopBody()
	if err != nil {
		return nil, err
	}
	iter := graph.NewParameter(c.name+"/iteration", tensor.I64, graph.ShapeOf())
	cond := graph.NewParameter(c.name+"/condition", tensor.Bool, graph.ShapeOf())
	var carriedIn []graph.Output
	var carriedParams []*graph.Node
	var carriedResults []string
	var captures []graph.Output
	var captureParams []*graph.Node
	var trip graph.Output
	for _, e := range l.PortMap.Inputs {
		p := gc.params[e.InternalLayer]
		i, ok := c.inputIndex(e.ExternalPortID)
		if p == nil || !ok {
			return nil, c.errorf(ErrInvalidModel, "port map input %s -> layer %s is not an input bound to a body Parameter", e.ExternalPortID, e.InternalLayer)
		}
		x := c.in[i]
		switch {
		case e.Axis != "":
			xs := x.Shape()
			if !xs.RankKnown {
				return nil, c.errorf(ErrUnsupportedAttribute, "input %s is sliced but has no known rank", e.ExternalPortID)
			}
			axis, part, reverse, err := c.tiSlicing(e, xs.Rank())
			if err != nil {
				return nil, err
			}
			if !trip.Valid() {
				if trip, err = c.tiTripCount(x, axis, part); err != nil {
					return nil, err
				}
			}
			whole := graph.NewParameter(c.gc.unique(c.name+"/whole_"+e.InternalLayer), x.Type(), xs)
			captures, captureParams = append(captures, x), append(captureParams, whole)
			redirect(body, p, tiPart(c.name+"/part_"+e.InternalLayer, whole.Out(0), iter.Out(0), axis, part, reverse))
		case backFrom[e.InternalLayer] != "":
			carriedIn, carriedParams = append(carriedIn, x), append(carriedParams, p)
			carriedResults = append(carriedResults, backFrom[e.InternalLayer])
		default:
			captures, captureParams = append(captures, x), append(captureParams, p)
		}
	}
	if !trip.Valid() {
		return nil, c.errorf(ErrInvalidModel, "no input is sliced along an axis: the number of iterations is not known")
	}
	always, _ := tensor.FromBool(tensor.Shape{}, []bool{true})
	results := []*graph.Node{graph.NewResult(c.name+"/condition_out", graph.NewConstant(c.name+"/always", always).Out(0))}
	for _, id := range carriedResults {
		results = append(results, gc.results[id])
	}
	outputs := make([]tiOutput, len(l.Outputs))
	nscan := 0
	for _, e := range l.PortMap.Outputs {
		j, ok := c.outputIndex(e.ExternalPortID)
		r := gc.results[e.InternalLayer]
		if !ok || r == nil {
			return nil, c.errorf(ErrInvalidModel, "port map output %s -> layer %s is not an output bound to a body Result", e.ExternalPortID, e.InternalLayer)
		}
		o := tiOutput{carried: -1, scan: -1}
		for k, id := range carriedResults {
			if id == e.InternalLayer && e.Axis == "" {
				o.carried = k
			}
		}
		if o.carried < 0 {
			o.scan, o.last = nscan, e.Axis == ""
			nscan++
			results = append(results, r)
			if e.Axis != "" {
				rank := r.Inputs[0].Shape().Rank()
				if o.axis, _, o.reverse, err = c.tiSlicing(e, rank); err != nil {
					return nil, err
				}
			}
		}
		outputs[j] = o
	}
	params := append([]*graph.Node{iter, cond}, carriedParams...)
	params = append(params, captureParams...)
	loopBody := graph.NewModel(body.Name, params, results)
	condIn := c.constant("condition", always)
	inputs := append([]graph.Output{trip, condIn}, carriedIn...)
	inputs = append(inputs, captures...)
	n := graph.NewNode(graph.OpLoop, c.name+"/loop", inputs, graph.Attrs{graph.AttrBody: loopBody, graph.AttrCaptures: int64(len(captures))}, len(carriedIn)+nscan)
	if err := graph.InferNode(n); err != nil {
		return nil, c.errorf(ErrInvalidModel, "%v", err)
	}
	c.created = append(c.created, n)
	out := make([]graph.Output, len(l.Outputs))
	for j, o := range outputs {
		if o.carried >= 0 {
			out[j] = n.Out(o.carried)
			continue
		}
		if o.scan < 0 {
			continue
		}
		stacked := n.Out(len(carriedIn) + o.scan)
		suffix := strconv.Itoa(j)
		if o.last {
			if out[j], err = c.op("Gather", "last_"+suffix, graph.Attrs{"axis": int64(0)}, stacked, c.constI64("last_index_"+suffix, true, -1)); err != nil {
				return nil, err
			}
			continue
		}
		if o.reverse {
			if stacked, err = c.op("Slice", "reversed_"+suffix, nil, stacked, c.constI64("rev_start_"+suffix, false, -1),
				c.constI64("rev_end_"+suffix, false, math.MinInt64), c.constI64("rev_axis_"+suffix, false, 0), c.constI64("rev_step_"+suffix, false, -1)); err != nil {
				return nil, err
			}
		}
		if out[j], err = c.concatScan(stacked, o.axis, j); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tiTripCount is the number of parts of x along axis: a constant when the
// axis is static.
func (c *layerCtx) tiTripCount(x graph.Output, axis, part int64) (graph.Output, error) {
	if d := x.Shape().Dims[axis]; d.IsStatic() {
		if d.Size%part != 0 {
			return graph.Output{}, c.errorf(ErrInvalidModel, "axis %d of size %d is not a whole number of parts of %d", axis, d.Size, part)
		}
		return c.constI64("iterations", true, d.Size/part), nil
	}
	s, err := c.op("Shape", "length_shape", nil, x)
	if err != nil {
		return graph.Output{}, err
	}
	length, err := c.op("Gather", "length", graph.Attrs{"axis": int64(0)}, s, c.constI64("length_axis", true, axis))
	if err != nil {
		return graph.Output{}, err
	}
	return c.op("Div", "iterations", nil, length, c.constI64("part_size", true, part))
}

// tiPart builds, in the body, iteration iter's part of whole along axis:
// elements [i*part, (i+1)*part), or counted from the end when reverse.
func tiPart(prefix string, whole, iter graph.Output, axis, part int64, reverse bool) graph.Output {
	k := func(name string, scalar bool, v int64) graph.Output {
		shape := tensor.Shape{1}
		if scalar {
			shape = tensor.Shape{}
		}
		t, _ := tensor.FromI64(shape, []int64{v})
		return graph.NewConstant(prefix+"/"+name, t).Out(0)
	}
	op := func(typ, name string, attrs graph.Attrs, in ...graph.Output) graph.Output {
		return graph.NewNode(typ, prefix+"/"+name, in, attrs, 1).Out(0)
	}
	start := op("Mul", "start", nil, iter, k("part", true, part))
	if reverse {
		// length - (i+1)*part
		shape := op("Shape", "shape", nil, whole)
		length := op("Gather", "length", graph.Attrs{"axis": int64(0)}, shape, k("axis", true, axis))
		next := op("Mul", "next", nil, op("Add", "i1", nil, iter, k("one", true, 1)), k("part_r", true, part))
		start = op("Sub", "start_r", nil, length, next)
	}
	starts := op("Unsqueeze", "starts", nil, start, k("zero", false, 0))
	ends := op("Add", "ends", nil, starts, k("part_e", false, part))
	return op("Slice", "slice", nil, whole, starts, ends, k("slice_axis", false, axis))
}

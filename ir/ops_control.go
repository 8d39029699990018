package ir

import (
	"strconv"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// controlImports are the ops with bodies. If-8 is the op set's If; Loop-5
// is its Loop, the port map arranging the body's Parameters and Results
// in the op set's order (iteration, condition, carried values, captured
// values; condition, carried values, scan outputs).
var controlImports = []importRow{
	{"If", 8, importIf},
	{"Loop", 5, importLoop},
	{"TensorIterator", 1, importTensorIterator},
}

// outputIndex maps a port map's output external_port_id to the layer's
// output index: IR writes either the output port's id or its index.
func (c *layerCtx) outputIndex(ext string) (int, bool) {
	for i, p := range c.l.Outputs {
		if p.ID == ext {
			return i, true
		}
	}
	i, err := strconv.Atoi(ext)
	if err != nil || i < 0 || i >= len(c.l.Outputs) {
		return 0, false
	}
	return i, true
}

// inputIndex maps a port map's input external_port_id to an input index.
func (c *layerCtx) inputIndex(ext string) (int, bool) {
	for i, p := range c.l.Inputs {
		if p.ID == ext {
			return i, true
		}
	}
	return 0, false
}

// importIf: each branch gets one Parameter per data input (the ones its
// port map leaves out read nothing) and one Result per output.
func importIf(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, -1); err != nil {
		return nil, err
	}
	l := c.l
	branches := []struct {
		attr string
		g    *xmlGraph
		pm   *xmlPortMap
	}{{graph.AttrThenBranch, l.ThenBody, l.ThenPortMap}, {graph.AttrElseBranch, l.ElseBody, l.ElsePortMap}}
	attrs := graph.Attrs{graph.AttrCaptures: int64(len(c.in) - 1)}
	for _, br := range branches {
		if br.g == nil || br.pm == nil {
			return nil, c.errorf(ErrInvalidModel, "the If has no %s body or port map", br.attr)
		}
		body, gc, err := c.gc.b.body(br.g, c.name+"/"+br.attr, c.gc.depth+1)
		if err != nil {
			return nil, c.errorf(ErrInvalidModel, "%s: %v", br.attr, err)
		}
		params := make([]*graph.Node, len(c.in)-1)
		for _, e := range br.pm.Inputs {
			i, ok := c.inputIndex(e.ExternalPortID)
			p := gc.params[e.InternalLayer]
			if !ok || i == 0 || p == nil || params[i-1] != nil {
				return nil, c.errorf(ErrInvalidModel, "%s port map: input %s -> layer %s is not a data input bound to a body Parameter once", br.attr, e.ExternalPortID, e.InternalLayer)
			}
			params[i-1] = p
		}
		for i := range params {
			if params[i] == nil {
				in := c.in[i+1]
				params[i] = graph.NewParameter(c.name+"/"+br.attr+"/unused_"+strconv.Itoa(i), in.Type(), in.Shape())
			}
		}
		results := make([]*graph.Node, len(l.Outputs))
		for _, e := range br.pm.Outputs {
			j, ok := c.outputIndex(e.ExternalPortID)
			r := gc.results[e.InternalLayer]
			if !ok || r == nil || results[j] != nil {
				return nil, c.errorf(ErrInvalidModel, "%s port map: output %s -> layer %s is not an output bound to a body Result once", br.attr, e.ExternalPortID, e.InternalLayer)
			}
			results[j] = r
		}
		for j, r := range results {
			if r == nil {
				return nil, c.errorf(ErrInvalidModel, "%s port map binds no Result to output %d", br.attr, j)
			}
		}
		attrs[br.attr] = graph.NewModel(body.Name, params, results)
	}
	n, err := c.node(graph.OpIf, "", c.in, attrs, len(l.Outputs))
	if err != nil {
		return nil, err
	}
	return outs(n), nil
}

// importLoop maps Loop-5 onto the op set's Loop. Inputs bound to a body
// Parameter that a back edge feeds are carried values; the others are
// captured. Outputs with an axis concatenate the iterations' values along
// it (the op set stacks them on a new leading axis, which a Reshape of
// static shapes merges); the others are a carried value's last.
func importLoop(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, -1); err != nil {
		return nil, err
	}
	l := c.l
	body, gc, backFrom, err := c.loopBody()
	if err != nil {
		return nil, err
	}
	var iterParam, condParam *graph.Node
	var condResult *graph.Node
	type carried struct {
		in        graph.Output
		param     *graph.Node
		resultID  string
		resultPos int
	}
	var vars []carried
	var captures []graph.Output
	var captureParams []*graph.Node
	condLayer := ""
	for _, e := range l.PortMap.Outputs {
		if e.Purpose == "execution_condition" {
			condLayer = e.InternalLayer
		}
	}
	for _, e := range l.PortMap.Inputs {
		p := gc.params[e.InternalLayer]
		if p == nil {
			return nil, c.errorf(ErrInvalidModel, "port map input %s binds layer %s, not a body Parameter", e.ExternalPortID, e.InternalLayer)
		}
		if e.Purpose == "current_iteration" {
			iterParam = p
			continue
		}
		if e.Axis != "" {
			return nil, c.errorf(ErrUnsupportedAttribute, "a Loop input sliced along an axis is not supported")
		}
		i, ok := c.inputIndex(e.ExternalPortID)
		if !ok {
			return nil, c.errorf(ErrInvalidModel, "port map input %s is not an input port", e.ExternalPortID)
		}
		switch {
		case i == 0:
			return nil, c.errorf(ErrUnsupportedAttribute, "a body reading the trip count is not supported")
		case i == 1 && (backFrom[e.InternalLayer] == "" || backFrom[e.InternalLayer] == condLayer):
			// The condition: the op set's body reads the previous
			// iteration's condition there, as the back edge says.
			condParam = p
		case backFrom[e.InternalLayer] != "":
			vars = append(vars, carried{in: c.in[i], param: p, resultID: backFrom[e.InternalLayer]})
		default:
			captures = append(captures, c.in[i])
			captureParams = append(captureParams, p)
		}
	}
	if l.Data != nil {
		if v, ok := l.Data.attr("special_body_ports"); ok && v != "" {
			return nil, c.errorf(ErrUnsupportedAttribute, "special_body_ports %q is not supported (the port map's purpose is)", v)
		}
	}
	for _, e := range l.PortMap.Outputs {
		if e.Purpose == "execution_condition" {
			condResult = gc.results[e.InternalLayer]
			if condResult == nil {
				return nil, c.errorf(ErrInvalidModel, "the execution condition is bound to layer %s, not a body Result", e.InternalLayer)
			}
		}
	}
	// Body parameters: iteration (i64), condition, carried, captured.
	iter := graph.NewParameter(c.name+"/iteration", tensor.I64, graph.ShapeOf())
	if iterParam != nil && iterParam.Outputs[0].Type != tensor.I64 {
		// The body reads the iteration as another type: cast the op
		// set's i64 one to it.
		cast := graph.NewNode("Cast", c.name+"/iteration_cast", []graph.Output{iter.Out(0)}, graph.Attrs{"to": int64(iterParam.Outputs[0].Type)}, 1)
		redirect(body, iterParam, cast.Out(0))
	} else if iterParam != nil {
		iter = iterParam
	}
	cond := condParam
	if cond == nil {
		cond = graph.NewParameter(c.name+"/condition", tensor.Bool, graph.ShapeOf())
	}
	params := []*graph.Node{iter, cond}
	for _, v := range vars {
		params = append(params, v.param)
	}
	params = append(params, captureParams...)
	// Body results: condition, carried (the back edges' Results), scan
	// outputs.
	condOut := condResult
	if condOut == nil {
		t, _ := tensor.FromBool(tensor.Shape{}, []bool{true})
		k := graph.NewConstant(c.name+"/always", t)
		condOut = graph.NewResult(c.name+"/condition_out", k.Out(0))
	}
	results := []*graph.Node{condOut}
	for i := range vars {
		vars[i].resultPos = len(results)
		results = append(results, gc.results[vars[i].resultID])
	}
	outputs := make([]struct {
		carried int // index into vars, or -1
		scan    int // index of the scan output, or -1
		axis    int64
	}, len(l.Outputs))
	nscan := 0
	for i := range outputs {
		outputs[i].carried, outputs[i].scan = -1, -1
	}
	for _, e := range l.PortMap.Outputs {
		if e.Purpose == "execution_condition" {
			continue
		}
		j, ok := c.outputIndex(e.ExternalPortID)
		r := gc.results[e.InternalLayer]
		if !ok || r == nil {
			return nil, c.errorf(ErrInvalidModel, "port map output %s -> layer %s is not an output bound to a body Result", e.ExternalPortID, e.InternalLayer)
		}
		if e.Axis != "" {
			axis, err := strconv.ParseInt(e.Axis, 10, 64)
			if err != nil || (e.Stride != "" && e.Stride != "1") || (e.Start != "" && e.Start != "0") || (e.End != "" && e.End != "-1") {
				return nil, c.errorf(ErrUnsupportedAttribute, "output %s: a concatenation with axis %q, start %q, end %q, stride %q is not supported (forward, whole)", e.ExternalPortID, e.Axis, e.Start, e.End, e.Stride)
			}
			outputs[j].scan, outputs[j].axis = nscan, axis
			nscan++
			results = append(results, r)
			continue
		}
		found := false
		for vi, v := range vars {
			if v.resultID == e.InternalLayer {
				outputs[j].carried, found = vi, true
			}
		}
		if !found {
			return nil, c.errorf(ErrUnsupportedAttribute, "output %s is the last value of body layer %s, which no back edge carries: not supported", e.ExternalPortID, e.InternalLayer)
		}
	}
	loopBody := graph.NewModel(body.Name, params, results)
	m := c.in[0]
	if v, ok := c.value(0); ok && v.NumElements() == 1 && v.Float64s()[0] < 0 {
		m = graph.Output{} // -1: no trip count
	} else if m, err = c.castTo(m, tensor.I64, "trip_count_i64"); err != nil {
		return nil, err
	}
	if m.Valid() && m.Shape().Rank() != 0 {
		if m, err = c.op("Reshape", "trip_count", nil, m, c.constI64("scalar", false)); err != nil {
			return nil, err
		}
	}
	condIn := c.in[1]
	if condIn.Shape().Rank() != 0 {
		if condIn, err = c.op("Reshape", "condition", nil, condIn, c.constI64("scalar", false)); err != nil {
			return nil, err
		}
	}
	inputs := []graph.Output{m, condIn}
	for _, v := range vars {
		inputs = append(inputs, v.in)
	}
	inputs = append(inputs, captures...)
	n := graph.NewNode(graph.OpLoop, c.name+"/loop", inputs, graph.Attrs{graph.AttrBody: loopBody, graph.AttrCaptures: int64(len(captures))}, len(vars)+nscan)
	if err := graph.InferNode(n); err != nil {
		return nil, c.errorf(ErrInvalidModel, "%v", err)
	}
	c.created = append(c.created, n)
	out := make([]graph.Output, len(l.Outputs))
	for j, o := range outputs {
		switch {
		case o.carried >= 0:
			out[j] = n.Out(o.carried)
		case o.scan >= 0:
			st, err := c.concatScan(n.Out(len(vars)+o.scan), o.axis, j)
			if err != nil {
				return nil, err
			}
			out[j] = st
		}
	}
	return out, nil
}

// loopBody reads the body of a Loop or TensorIterator layer and its back
// edges (body Parameter layer -> the body Result layer feeding it).
func (c *layerCtx) loopBody() (*graph.Model, *graphCtx, map[string]string, error) {
	l := c.l
	if l.Body == nil || l.PortMap == nil {
		return nil, nil, nil, c.errorf(ErrInvalidModel, "the %s has no body or port map", l.Type)
	}
	body, gc, err := c.gc.b.body(l.Body, c.name+"/body", c.gc.depth+1)
	if err != nil {
		return nil, nil, nil, c.errorf(ErrInvalidModel, "body: %v", err)
	}
	backFrom := map[string]string{}
	for _, e := range l.BackEdges {
		if gc.results[e.FromLayer] == nil || gc.params[e.ToLayer] == nil {
			return nil, nil, nil, c.errorf(ErrInvalidModel, "back edge %s -> %s does not join a body Result to a body Parameter", e.FromLayer, e.ToLayer)
		}
		backFrom[e.ToLayer] = e.FromLayer
	}
	return body, gc, backFrom, nil
}

// concatScan turns the op set's stacked scan output [T, s...] into IR's
// concatenation along axis (static body shapes).
func (c *layerCtx) concatScan(stacked graph.Output, axis int64, j int) (graph.Output, error) {
	s := stacked.Shape()
	if !s.RankKnown || len(s.Dims) < 2 {
		return graph.Output{}, c.errorf(ErrUnsupportedAttribute, "output %d: concatenating the iterations needs a body output of known rank", j)
	}
	r := int64(len(s.Dims) - 1)
	if axis < 0 {
		axis += r
	}
	if axis < 0 || axis >= r {
		return graph.Output{}, c.errorf(ErrInvalidModel, "output %d: axis %d is out of range for rank %d", j, axis, r)
	}
	x := stacked
	var err error
	if axis > 0 {
		perm := make([]int64, 0, r+1)
		for i := int64(1); i <= axis; i++ {
			perm = append(perm, i)
		}
		perm = append(perm, 0)
		for i := axis + 1; i <= r; i++ {
			perm = append(perm, i)
		}
		if x, err = c.op("Transpose", "iterations_"+strconv.Itoa(j), graph.Attrs{"perm": perm}, x); err != nil {
			return graph.Output{}, err
		}
	}
	// [.., T, s_axis, ..] -> [.., T*s_axis, ..]: 0 keeps a leading dim in
	// place, -1 takes the merged one, the trailing ones must be static.
	shape := make([]int64, r)
	shape[axis] = -1
	for i := axis + 1; i < r; i++ {
		d := s.Dims[i+1]
		if !d.IsStatic() {
			return graph.Output{}, c.errorf(ErrUnsupportedAttribute, "output %d: concatenating the iterations along axis %d needs static dims after it, have %v", j, axis, s)
		}
		shape[i] = d.Size
	}
	return c.op("Reshape", "concat_"+strconv.Itoa(j), nil, x, c.constI64("concat_shape_"+strconv.Itoa(j), false, shape...))
}

// redirect makes every reader of p in body read o instead.
func redirect(body *graph.Model, p *graph.Node, o graph.Output) {
	nodes, err := body.Nodes()
	if err != nil {
		return
	}
	for _, n := range nodes {
		for i, in := range n.Inputs {
			if in.Node == p {
				n.Inputs[i] = o
			}
		}
	}
}

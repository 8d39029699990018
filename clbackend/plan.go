package clbackend

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// workGroupMultiple is what global sizes are rounded up to; the kernels
// bounds-check the extra work items.
const workGroupMultiple = 64

// hostParamLimit is the largest Parameter (in elements) feeding only shape
// inputs whose
// values the planner treats as known on the host: shape-like inputs
// (Reshape shapes, Slice starts, Tile repeats...). A plan is specialised on
// their values, as it is on input shapes.
const hostParamLimit = 64

// value is one tensor of a plan: a node output, a temporary, or a host
// constant (weights, folded subgraphs, kernel parameter tables).
type value struct {
	typ   tensor.ElementType
	shape tensor.Shape
	bytes int
	// host is set when the value is known at plan time; it is uploaded
	// once (weights once per compiled model, the rest once per plan).
	host   *tensor.Tensor
	weight string // the Constant node whose tensor host is, shared by all plans
	// held is 1 + the model input whose state buffer (MAKE_STATEFUL, held
	// by the request between inferences) this value is, 0 otherwise.
	held int
	// root is the value whose device memory this one uses (itself unless
	// it is a zero-copy alias: Reshape, Squeeze, Identity..., a Concat's
	// input written in place into its output, or a Gather's or a Slice's
	// block of its input: blockView), and off where in that memory it
	// starts, in bytes (0 but for the Concat's inputs, the blocks' views
	// and their aliases: a request binds such a value as a sub-buffer).
	root, off int
	// buf is the activation buffer of a root device value (-1 otherwise).
	buf         int
	first, last int // liveness of a root, in launch indices
}

// unset marks a liveness bound not yet seen (-1 is "before the first
// launch", where inputs are written).
const unset = -2

// slotArg is a kernel argument naming a plan value: the device buffer that
// holds it is bound when a request creates the kernel.
type slotArg int

// launch is one kernel enqueue of a plan.
type launch struct {
	node    *graph.Node
	kernel  kernels.Kernel
	options string
	prog    *cl.Program
	args    []any // slotArg or a scalar of a type cl.Kernel.SetArg takes
	n       int64 // work items that do work; 0 skips the launch
	// global is the NDRange (1 to 3 dimensions) and local the work-group
	// size (nil: the driver picks); see emitND.
	global, local []int
	// bytes is the size of the buffers the launch binds: what it moves.
	bytes int64
	// cpuGroup marks a local chosen by cpuGroup on a CPU device (the
	// kernel lets the driver pick), which shareCPUGroups may change.
	cpuGroup bool
}

// plan is the launch plan of one set of input shapes (and host-known input
// values): values, kernels with fixed work sizes, and the activation buffer
// plan. It is immutable once built; requests create their own buffers and
// kernels from it.
type plan struct {
	key      string
	values   []value
	launches []launch
	params   []int // value of each model input
	hostIn   []bool
	// unread marks the model inputs that no launch, copy or output of the
	// plan reads (a sample rate only a condition planned away read): they
	// are not written to the device (nil: every input is written).
	unread   []bool
	results  []int // value of each model output
	bufSizes []int // activation buffers, by liveness
	// seed is 1 + the value (a u64) the random kernels read the request's
	// seed from, written with the inputs (0 without random ops).
	seed int

	planned, naive int64 // activation bytes: the plan's, and all intermediates'

	// pinned is 1 once a run of the plan on the in-thread companion has
	// pinned the kernel binaries of all its launches (read and written
	// with sync/atomic: InferRequest.pinning).
	pinned uint32

	// prog is the program of a plan with control flow (program.go), nil
	// otherwise; control is set while building once it has an instruction
	// other than a launch; loops are its loops.
	prog     []instr
	control  bool
	loops    []loopInfo
	failures []string // why an opFail's branch cannot run

	impl  map[*graph.Node]string
	order map[*graph.Node]int
	// variants is the kernel variant each node of a hot family runs
	// (kernels.Variant's String form), choices the choices in plan order.
	variants map[*graph.Node]string
	choices  []TunedOp
	byName   map[string]*graph.Node
	progs    []*shared[*cl.Program]
	// consts holds the device copies of host values that are not weights.
	consts map[int]*cl.MemObject
	// A plan whose data-dependent sizes are read back (plan_sizes.go):
	// cont builds its continuations; a continuation has its parent, whose
	// values are its first base values.
	cont   *contState
	parent *plan
	base   int
}

// nodeByName returns the plan's node called name (nil if none).
func (pl *plan) nodeByName(name string) *graph.Node { return pl.byName[name] }

// release frees what the plan owns on the device, in context cc (whose
// weight statistics count its constants).
func (pl *plan) release(cc *clContext) error {
	var errs []error
	for _, b := range pl.consts {
		cc.weightBytes.Add(-int64(b.Size()))
		errs = append(errs, b.Close())
	}
	pl.consts = nil
	for _, p := range pl.progs {
		errs = append(errs, p.release())
	}
	pl.progs = nil
	return errors.Join(errs...)
}

// builder turns one shape-inferred graph into a plan.
type builder struct {
	ctx   context.Context
	p     *Plugin
	c     *CompiledModel
	pl    *plan
	model *graph.Model
	of    map[graph.Output]int
	// mem is the plan record a restored plan's weights may be used from
	// in place (see hostMem); nil when planning.
	mem *hostMem

	// Kernel variant choice (variants.go, heuristics.go, tuner.go): the
	// device's limits and profile (read once), whether this is a probe plan (never tuned), whether
	// tuning timed a choice, the choices made and the tuner's session.
	lim       *kernels.Limits
	prof      *deviceProfile
	probe     bool
	tuned     bool
	tunedKeys map[string]bool
	choices   []variantChoice
	ts        *tuneSession
	// ds is the state of data-dependent sizes (plan_sizes.go).
	ds dataSizes
	// forced names the Ifs of the model's top level planned as the branch
	// of one outcome of their host conditions (plan_conds.go).
	forced map[string]bool
	// bodies is 2 when the model has control flow, 1 when not, 0 before
	// hasBodies looked (plan_inplace.go).
	bodies int
}

// errUnsupported is an error wrapping driver.ErrUnsupported about node n.
func errUnsupported(n *graph.Node, format string, args ...any) error {
	return driver.Errorf(driver.ErrUnsupported, "gpu: node %q: op %s: %s", n.Name, n.OpType, fmt.Sprintf(format, args...))
}

// isHostParam reports whether model input prm is small integer data used
// only where shapes, axes or bounds go, or a scalar whose value flows into
// such an input (a window length, cast to float, into Range; a Loop's trip
// count computed from float bounds);
// its values then specialise the plan (as input shapes do) instead of
// being uploaded, and what depends only on them is folded.
func isHostParam(model *graph.Model, prm *graph.Node) bool {
	port := prm.Outputs[0]
	if clType(port.Type) == "" {
		return false
	}
	s, ok := port.Shape.ToShape()
	if !ok || s.NumElements() > hostParamLimit {
		return false
	}
	cons, err := model.Consumers()
	if err != nil {
		return false
	}
	uses, direct := 0, true
	for _, in := range cons[prm.Out(0)] {
		if in.Node.OpType != graph.OpResult && !graph.IsHostInput(in.Node, in.Index) {
			direct = false
		}
		uses++
	}
	if direct {
		return uses > 0
	}
	return s.NumElements() == 1 && feedsShapeInput(cons, prm.Out(0))
}

// feedsShapeInput reports whether the value of o reaches a host input (see
// graph.OpSpec.HostInputs) through the ops that consume it; ops that fold
// from shapes (Shape, Size) read no values, so it does not flow through
// them.
func feedsShapeInput(cons map[graph.Output][]graph.Input, o graph.Output) bool {
	seen := map[*graph.Node]bool{}
	todo := []graph.Output{o}
	for len(todo) > 0 {
		cur := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, in := range cons[cur] {
			if graph.IsHostInput(in.Node, in.Index) {
				return true
			}
			if seen[in.Node] || graph.FoldOf(in.Node) == graph.FoldShapes {
				continue
			}
			seen[in.Node] = true
			for i := range in.Node.Outputs {
				todo = append(todo, in.Node.Out(i))
			}
		}
	}
	return false
}

// planKey names the plan of one set of input shapes and host parameter
// values (nil entries for the others).
func planKey(shapes []tensor.Shape, host []*tensor.Tensor) string {
	var sb strings.Builder
	for i, s := range shapes {
		sb.WriteString(s.String())
		if host != nil && host[i] != nil {
			sb.WriteString("=")
			sb.WriteString(fmt.Sprint(host[i].Float64s()))
		}
		sb.WriteByte(';')
	}
	return sb.String()
}

// shapeList formats input shapes for messages: "[1,3,48,192], [1]".
func shapeList(shapes []tensor.Shape) string {
	parts := make([]string, len(shapes))
	for i, s := range shapes {
		parts[i] = s.String()
	}
	return strings.Join(parts, ", ")
}

// buildPlan plans the compiled model for inputs of the given shapes; for
// host parameters ins holds their values (others may hold only a shape).
func (c *CompiledModel) buildPlan(ctx context.Context, p *Plugin, key string, shapes []tensor.Shape, hostVals []*tensor.Tensor) (_ *plan, err error) {
	if c.elided {
		// Imported from a model cache blob without the weights the plan
		// record packed: there is nothing to plan these shapes from.
		return nil, driver.Errorf(driver.ErrIncompatible, "gpu: model %q imported from the model cache has only the plan of its input shapes, not %s: compile the model again for other shapes", c.model.Name, shapeList(shapes))
	}
	// Inputs the model cannot take are reported as every device words it
	// (graph.InputShapeError), before the plan's own inference.
	if _, err := c.model.FitInputs(shapes, hostVals); err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "%w", err)
	}
	// Host parameters' values become constants of this plan, so that
	// shape inference sees them.
	model, err := c.model.Specialize(shapes, hostVals)
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: plan model %q for input shapes %s: %w", c.model.Name, shapeList(shapes), err)
	}
	forced := forcedOf(ctx)
	if forced != nil {
		if err := force(model, forced); err != nil {
			return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: plan model %q: %w", c.model.Name, err)
		}
	}
	nodes, err := model.Nodes()
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: plan model %q: %w", c.model.Name, err)
	}
	b := &builder{ctx: ctx, p: p, c: c, model: model, of: map[graph.Output]int{}, probe: isProbe(ctx),
		pl: &plan{key: key, impl: map[*graph.Node]string{}, order: map[*graph.Node]int{}, consts: map[int]*cl.MemObject{},
			variants: map[*graph.Node]string{}}, forced: forced}
	defer func() {
		if cerr := b.closeTuning(); err == nil && cerr != nil {
			err = driver.Errorf(driver.ErrDevice, "gpu: tuning queue: %w", cerr)
		}
		if err != nil {
			_ = b.pl.release(b.c.ctx)
		}
	}()
	progress := progressOf(ctx)
	b.pl.params = make([]int, len(model.Parameters))
	b.pl.hostIn = make([]bool, len(model.Parameters))
	pindex := map[*graph.Node]int{}
	for i, prm := range model.Parameters {
		pindex[prm] = i
	}
	b.pl.byName = map[string]*graph.Node{}
	for i, n := range nodes {
		if progress != nil && i > 0 {
			progress(TuneProgress{Done: i, Total: len(nodes), Node: nodes[i-1].Name, Tuned: b.tunedNode(nodes[i-1])})
		}
		b.pl.order[n] = i
		b.pl.byName[n.Name] = n
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("gpu: compile: %w", err)
		}
		switch n.OpType {
		case graph.OpParameter:
			pi := pindex[n]
			var host *tensor.Tensor
			if pi < len(hostVals) && hostVals[pi] != nil {
				host = hostVals[pi]
			}
			v := b.newValue(n.Outputs[0].Type, shapes[pi], host)
			if _, ok := c.stateOut[pi]; ok && host == nil {
				b.pl.values[v].held = pi + 1 // read in place from the request's state buffer
			}
			b.of[n.Out(0)] = v
			b.pl.params[pi] = v
			b.pl.hostIn[pi] = host != nil
			b.pl.impl[n] = "parameter"
			continue
		case graph.OpConstant:
			if pi, ok := pindex[n]; ok {
				v := b.newValue(n.Value.Type(), n.Value.Shape(), n.Value)
				b.of[n.Out(0)] = v
				b.pl.params[pi] = v
				b.pl.hostIn[pi] = true
				b.pl.impl[n] = "parameter (host)"
				continue
			}
		}
		if err := b.lowerNode(n, ""); err != nil {
			return nil, err
		}
	}
	if progress != nil && len(nodes) > 0 {
		progress(TuneProgress{Done: len(nodes), Total: len(nodes), Node: nodes[len(nodes)-1].Name, Tuned: b.tunedNode(nodes[len(nodes)-1])})
	}
	if err := b.finish(); err != nil {
		return nil, err
	}
	if b.tuned {
		if err := b.c.tuning.db.Save(); err != nil && b.c.tuning.db.Path() != "" {
			warnf("gpu: keeping the tuning results of %q: %v", c.model.Name, err)
		}
	}
	return b.pl, nil
}

// lowerNode plans one node that is not a Parameter: a Constant becomes a
// host value (a weight under prefix+name: bodies qualify their constants'
// names), a Result nothing, a node whose inputs are known on the host is
// folded, and any other node is lowered onto launches. Nodes of bodies go
// through here too (lower_control.go).
func (b *builder) lowerNode(n *graph.Node, prefix string) error {
	switch n.OpType {
	case graph.OpConstant:
		if n.Value == nil {
			return driver.Errorf(driver.ErrInvalidArgument, "gpu: node %q: constant has no value", n.Name)
		}
		v := b.newValue(n.Value.Type(), n.Value.Shape(), n.Value.Contiguous())
		b.pl.values[v].weight = prefix + n.Name
		b.of[n.Out(0)] = v
		b.pl.impl[n] = "constant"
		return nil
	case graph.OpResult:
		b.pl.impl[n] = "result"
		return nil
	}
	if prefix == "" && b.waits(n) { // an input waits for a size read back (plan_sizes.go)
		return nil
	}
	folded, err := b.tryFold(n)
	if err != nil {
		return err
	}
	if prefix == "" && graph.IsDataSized(n) && !portsStatic(n) {
		return b.sizeLater(n, folded)
	}
	if folded {
		return nil
	}
	// A control op may learn an output's shape by planning its bodies
	// (an unrolled Loop); it sets that output's value itself.
	bodies := n.HasBodies() && n.OpType != graph.OpKernelFusion
	for oi, o := range n.Outputs {
		if !o.Shape.IsStatic() && !bodies {
			return errUnsupported(n, "output %d has shape %v after shape inference (the GPU engine needs shapes known at plan time)", oi, o.Shape)
		}
	}
	l, ok := lowerings()[n.OpType]
	switch {
	case !ok || n.Domain != "":
		return errUnsupported(n, "no GPU kernel for this op")
	case l.lower == nil:
		return errUnsupported(n, "runs on the host only (%s), and its inputs are not known at plan time", l.host)
	}
	for oi, o := range n.Outputs {
		s, ok := o.Shape.ToShape()
		if !ok {
			delete(b.of, n.Out(oi))
			continue
		}
		if err := b.checkOutput(n, o, s); err != nil {
			return err
		}
		b.of[n.Out(oi)] = b.newValue(o.Type, s, nil)
	}
	first := len(b.pl.launches)
	if err := l.lower(b, n); err != nil {
		from := widenType(n, err)
		if from == tensor.Undefined {
			return err
		}
		b.pl.launches = b.pl.launches[:first] // what the refused form emitted
		if err := b.lowerWidened(n, l, from); err != nil {
			return err
		}
	}
	for oi, o := range n.Outputs {
		if _, ok := b.of[n.Out(oi)]; !ok {
			return errUnsupported(n, "output %d has shape %v at plan time (the GPU engine needs shapes known at plan time)", oi, o.Shape)
		}
	}
	if _, done := b.pl.impl[n]; done && n.HasBodies() {
		return nil // a control op reports its own implementation
	}
	b.setImpl(n, first)
	return nil
}

// tunedNode reports whether the latest choice timed candidates for n.
func (b *builder) tunedNode(n *graph.Node) bool {
	return len(b.choices) > 0 && b.choices[len(b.choices)-1].node == n.Name && b.choices[len(b.choices)-1].source == "tuned"
}

type probeKey struct{}

// withProbe marks a plan build as a probe of representative shapes: its
// choices are never tuned (the real shapes are tuned when planned).
func withProbe(ctx context.Context) context.Context { return context.WithValue(ctx, probeKey{}, true) }

func isProbe(ctx context.Context) bool { v, _ := ctx.Value(probeKey{}).(bool); return v }

// tryFold computes n on the host when its op folds (graph.FoldOf) and
// what it reads is known there: the values of all its inputs, or only
// their shapes (Shape, Size). It records n's outputs as host values.
func (b *builder) tryFold(n *graph.Node) (bool, error) {
	switch graph.FoldOf(n) {
	case graph.FoldNever:
		return false, nil
	case graph.FoldShapes:
		shapes := make([]tensor.Shape, len(n.Inputs))
		for i, o := range n.Inputs {
			shapes[i] = b.pl.values[b.of[o]].shape
		}
		t, err := graph.EvalFromShapes(n, shapes)
		if err != nil {
			return false, driver.Errorf(driver.ErrInvalidArgument, "gpu: folding node %q (%s) on the host: %w", n.Name, n.OpType, err)
		}
		b.of[n.Out(0)] = b.newValue(t.Type(), t.Shape(), t)
		b.pl.impl[n] = "folded"
		return true, nil
	}
	in := make([]*tensor.Tensor, len(n.Inputs))
	for i, o := range n.Inputs {
		if !o.Valid() {
			continue
		}
		v := b.pl.values[b.of[o]]
		if v.host == nil {
			return false, nil
		}
		in[i] = v.host
	}
	if fold, err := b.foldSize(n); err != nil || !fold {
		return false, err
	}
	out, err := ref.Evaluate(n, in)
	if errors.Is(err, tensor.ErrTooLarge) {
		return false, driver.Errorf(driver.ErrResourceExhausted, "gpu: folding node %q (%s) on the host: %w", n.Name, n.OpType, err)
	}
	if err != nil {
		return false, driver.Errorf(driver.ErrInvalidArgument, "gpu: folding constant node %q (%s) on the host: %w", n.Name, n.OpType, err)
	}
	for i := range n.Outputs {
		b.of[n.Out(i)] = b.newValue(out[i].Type(), out[i].Shape(), out[i].Contiguous())
	}
	b.pl.impl[n] = "folded"
	return true, nil
}

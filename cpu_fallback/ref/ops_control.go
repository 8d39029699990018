package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// The control-flow family: If, Loop and Scan run their bodies' Programs
// (body.go), planned once per node by Prepare; the table's kernels (what
// constant folding calls) plan them on every call.

// controlKernels are the table's kernels of If, Loop and Scan; table is
// the complete kernel table, which the bodies' nodes run with.
func controlKernels(table map[string]Kernel) map[string]Kernel {
	perCall := func(prep func(*graph.Node, map[string]Kernel) (Kernel, error)) Kernel {
		return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			k, err := prep(n, table)
			if err != nil {
				return nil, err
			}
			return k(n, in)
		}
	}
	return guardAll(map[string]Kernel{
		graph.OpIf:   perCall(prepareIf),
		graph.OpLoop: perCall(prepareLoop),
		graph.OpScan: perCall(prepareScan),
	})
}

// truth is the value of a one-element condition tensor.
func truth(n *graph.Node, x *tensor.Tensor, what string) (bool, error) {
	if x == nil || x.NumElements() != 1 {
		return false, n.Errorf("%s must have one element, got %v", what, x)
	}
	return x.Float64s()[0] != 0, nil
}

// prepareIf plans both branches and returns a kernel that runs the one the
// condition picks on the captured inputs.
func prepareIf(n *graph.Node, table map[string]Kernel) (Kernel, error) {
	then, els, err := graph.IfBranches(n)
	if err != nil {
		return nil, err
	}
	pt, err := compile(then, table)
	if err != nil {
		return nil, n.Errorf("then_branch %q: %w", then.Name, err)
	}
	pe, err := compile(els, table)
	if err != nil {
		return nil, n.Errorf("else_branch %q: %w", els.Name, err)
	}
	return guard(func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		c, err := truth(n, opt(in, 0), "the condition")
		if err != nil {
			return nil, err
		}
		p := pe
		if c {
			p = pt
		}
		out, err := p.Run(in[1:])
		if err != nil {
			return nil, n.Errorf("%w", err)
		}
		return out, nil
	}), nil
}

// prepareLoop plans the body once and returns a kernel that runs it until
// the trip count or the condition stops it.
func prepareLoop(n *graph.Node, table map[string]Kernel) (Kernel, error) {
	b, l, err := graph.LoopBody(n)
	if err != nil {
		return nil, err
	}
	return prepareBody(n, b, table, func(n *graph.Node, p *Program, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		return runLoop(n, p, l, in)
	})
}

// prepareBody plans body b of n and returns the kernel run makes of it.
func prepareBody(n *graph.Node, b *graph.Model, table map[string]Kernel, run func(*graph.Node, *Program, []*tensor.Tensor) ([]*tensor.Tensor, error)) (Kernel, error) {
	p, err := compile(b, table)
	if err != nil {
		return nil, n.Errorf("body %q: %w", b.Name, err)
	}
	return guard(func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) { return run(n, p, in) }), nil
}

func runLoop(n *graph.Node, p *Program, l graph.LoopLayout, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	trips := int64(math.MaxInt64)
	if m := opt(in, 0); m != nil {
		if m.NumElements() != 1 {
			return nil, n.Errorf("trip count must have one element, got %v", m)
		}
		trips = toI64s(m)[0]
	}
	cond := true
	if c := opt(in, 1); c != nil {
		var err error
		if cond, err = truth(n, c, "the condition"); err != nil {
			return nil, err
		}
	}
	carried := append([]*tensor.Tensor(nil), in[2:2+l.Carried]...)
	caps := in[2+l.Carried:]
	scans := make([][]*tensor.Tensor, l.ScanOutputs)
	args := make([]*tensor.Tensor, 2+l.Carried+l.Captures)
	for i := int64(0); i < trips && cond; i++ {
		args[0], _ = tensor.FromI64(tensor.Shape{}, []int64{i})
		args[1], _ = tensor.FromBool(tensor.Shape{}, []bool{cond})
		copy(args[2:], carried)
		copy(args[2+l.Carried:], caps)
		out, err := p.Run(args)
		if err != nil {
			return nil, n.Errorf("iteration %d: %w", i, err)
		}
		if cond, err = truth(n, out[0], "the body's condition output"); err != nil {
			return nil, err
		}
		copy(carried, out[1:1+l.Carried])
		for j := range scans {
			scans[j] = append(scans[j], out[1+l.Carried+j])
		}
	}
	outs := make([]*tensor.Tensor, 0, l.Carried+l.ScanOutputs)
	for i, v := range carried {
		if v == in[2+i] {
			v = v.Clone() // no iteration ran: the output is a copy of the input
		}
		outs = append(outs, v)
	}
	for j, list := range scans {
		y, err := stack(n, l.Carried+j, list, 0, false)
		if err != nil {
			return nil, err
		}
		outs = append(outs, y)
	}
	return outs, nil
}

// prepareScan plans the body once and returns a kernel that runs it on
// every slice of the scan inputs.
func prepareScan(n *graph.Node, table map[string]Kernel) (Kernel, error) {
	b, _, err := graph.ScanBody(n)
	if err != nil {
		return nil, err
	}
	return prepareBody(n, b, table, func(n *graph.Node, p *Program, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		_, l, err := graph.ScanBody(n)
		if err != nil {
			return nil, err
		}
		return runScan(n, p, l, in)
	})
}

func runScan(n *graph.Node, p *Program, l graph.ScanLayout, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	states := append([]*tensor.Tensor(nil), in[:l.States]...)
	scanIn := in[l.States : l.States+l.ScanInputs]
	caps := in[l.States+l.ScanInputs:]
	trips := int64(-1)
	axes := make([]int, l.ScanInputs)
	for j, x := range scanIn {
		if x == nil {
			return nil, n.Errorf("scan input %d is missing", j)
		}
		ax, err := normAxis(n, int64(l.InAxes[j]), x.Rank())
		if err != nil {
			return nil, err
		}
		axes[j] = ax
		if t := x.Shape()[ax]; trips < 0 {
			trips = t
		} else if t != trips {
			return nil, n.Errorf("scan inputs have %d and %d iterations along their axes", trips, t)
		}
	}
	scans := make([][]*tensor.Tensor, l.ScanOutputs)
	args := make([]*tensor.Tensor, l.States+l.ScanInputs+l.Captures)
	for t := int64(0); t < trips; t++ {
		copy(args, states)
		for j, x := range scanIn {
			at := t
			if l.InReverse[j] {
				at = trips - 1 - t
			}
			s, err := sliceAt(x, axes[j], at)
			if err != nil {
				return nil, n.Errorf("scan input %d: %w", j, err)
			}
			args[l.States+j] = s
		}
		copy(args[l.States+l.ScanInputs:], caps)
		out, err := p.Run(args)
		if err != nil {
			return nil, n.Errorf("iteration %d: %w", t, err)
		}
		copy(states, out[:l.States])
		for j := range scans {
			scans[j] = append(scans[j], out[l.States+j])
		}
	}
	outs := make([]*tensor.Tensor, 0, l.States+l.ScanOutputs)
	for i, v := range states {
		if v == in[i] {
			v = v.Clone()
		}
		outs = append(outs, v)
	}
	for j, list := range scans {
		ax := l.OutAxes[j]
		if ax < 0 && len(list) > 0 {
			ax += list[0].Rank() + 1
		}
		y, err := stack(n, l.States+j, list, ax, l.OutReverse[j])
		if err != nil {
			return nil, err
		}
		outs = append(outs, y)
	}
	return outs, nil
}

// sliceAt returns x[..., at, ...] along axis, without that axis.
func sliceAt(x *tensor.Tensor, axis int, at int64) (*tensor.Tensor, error) {
	s := x.Shape()
	begin := make([]int64, len(s))
	end := s.Clone()
	begin[axis], end[axis] = at, at+1
	v, err := x.View(begin, end)
	if err != nil {
		return nil, err
	}
	out := append(append(tensor.Shape{}, s[:axis]...), s[axis+1:]...)
	return v.Contiguous().Reshape(out)
}

// stack joins the per-iteration values of output o along a new axis
// (reversed: the last iteration first). Every value must have the same
// type and shape. With no iterations the output has size 0 along axis and
// the other dimensions the node's output port knows (0 where dynamic).
func stack(n *graph.Node, o int, list []*tensor.Tensor, axis int, reverse bool) (*tensor.Tensor, error) {
	if len(list) == 0 {
		port := n.Outputs[o]
		shape := tensor.Shape{0}
		if port.Shape.RankKnown {
			shape = make(tensor.Shape, len(port.Shape.Dims))
			for i, d := range port.Shape.Dims {
				if d.IsStatic() && i != axis {
					shape[i] = d.Size
				}
			}
		}
		return newOut(n, port.Type, shape)
	}
	first := list[0]
	es := first.Shape()
	if axis < 0 || axis > len(es) {
		return nil, n.Errorf("output %d: axis %d is out of range for rank %d", o, axis, len(es)+1)
	}
	for t, v := range list {
		if v.Type() != first.Type() || !v.Shape().Equal(es) {
			return nil, n.Errorf("output %d: iteration %d made %v, iteration 0 %v; scan outputs must keep their shape", o, t, v, first)
		}
	}
	T := int64(len(list))
	shape := append(append(append(tensor.Shape{}, es[:axis]...), T), es[axis:]...)
	y, err := newOut(n, first.Type(), shape)
	if err != nil {
		return nil, err
	}
	outer := es[:axis].NumElements()
	inner := es[axis:].NumElements() * int64(first.Type().Size())
	dst := y.Bytes()
	for t, v := range list {
		pos := int64(t)
		if reverse {
			pos = T - 1 - pos
		}
		src := v.Contiguous().Bytes()
		for i := int64(0); i < outer; i++ {
			copy(dst[(i*T+pos)*inner:(i*T+pos+1)*inner], src[i*inner:(i+1)*inner])
		}
	}
	return y, nil
}

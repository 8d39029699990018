package clbackend

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Plans per outcome of host conditions. A static model whose If at the top
// level is decided at run time from small model inputs alone (Silero VAD's
// sample rate: `sr == 16000`) plans, besides the plan of both branches
// (the static plan: a program that computes the condition on the host and
// branches), one straight-line plan per outcome of its conditions, in
// which each such If is the branch it takes: no launch computes the
// condition, the branch's results are the If's outputs (no copies into
// them), and the plan runs as straight-line plans do (one command buffer
// where the device has them) instead of through the program. Each
// inference computes the conditions on the host from its inputs and runs
// the plan of their outcomes; one whose inputs are not all on the host
// (a remote tensor) runs the static plan, which reads the condition
// back.

// maxCondPlans bounds the conditions a model is planned per outcome of
// (2^n plans besides the static one).
const maxCondPlans = 2

// condPlans are a static model's plans per outcome of its host
// conditions.
type condPlans struct {
	conds []*hostCond // in the static plan's program order
	plans []*plan     // by outcome: bit i set when conds[i] is true
}

// forcedKey is the context key of the If outcomes a plan is built for.
type forcedKey struct{}

// withForced tells buildPlan to plan each If named in forced as the
// branch forced names (true: then).
func withForced(ctx context.Context, forced map[string]bool) context.Context {
	return context.WithValue(ctx, forcedKey{}, forced)
}

// forcedOf returns the If outcomes ctx carries (withForced), or nil.
func forcedOf(ctx context.Context) map[string]bool {
	f, _ := ctx.Value(forcedKey{}).(map[string]bool)
	return f
}

// force replaces the condition of each If of model (its top level) named
// in forced with a constant of its outcome, so that the If plans as one
// known at plan time and what computed its condition, read by nothing
// else, drops out of the model's nodes.
func force(model *graph.Model, forced map[string]bool) error {
	nodes, err := model.Nodes()
	if err != nil {
		return err
	}
	for _, n := range nodes {
		v, ok := forced[n.Name]
		if !ok || n.OpType != graph.OpIf {
			continue
		}
		c, err := tensor.FromBool(tensor.Shape{}, []bool{v})
		if err != nil {
			return err
		}
		n.Inputs[0] = graph.NewConstant(n.Name+"/condition", c).Out(0)
	}
	return nil
}

// planConds builds c.conds from c.static when its program branches only on
// host conditions of Ifs at the model's top level (at most maxCondPlans of
// them, outside loops). An outcome whose plan fails (a branch these shapes
// make invalid) keeps the static plan, which reports the failure if an
// inference takes it.
func (c *CompiledModel) planConds(ctx context.Context, p *Plugin) error {
	pl := c.static
	if pl == nil || pl.prog == nil || c.elided {
		return nil
	}
	var conds []*hostCond
	for _, in := range pl.prog {
		switch in.op {
		case opBranch:
			if in.host == nil || in.host.ifName == "" {
				return nil
			}
			conds = append(conds, in.host)
		case opLoopBegin, opLoopEnd:
			return nil
		}
	}
	if len(conds) == 0 || len(conds) > maxCondPlans {
		return nil
	}
	shapes := make([]tensor.Shape, len(c.core.Inputs()))
	for i, in := range c.core.Inputs() {
		shapes[i], _ = in.Shape.ToShape()
	}
	cp := &condPlans{conds: conds, plans: make([]*plan, 1<<len(conds))}
	for mask := range cp.plans {
		forced := map[string]bool{}
		for i, hc := range conds {
			forced[hc.ifName] = mask&(1<<i) != 0
		}
		vp, err := c.buildPlan(withForced(ctx, forced), p, fmt.Sprintf("%s|conditions=%b", pl.key, mask), shapes, nil)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		cp.plans[mask] = vp
	}
	c.conds = cp
	return nil
}

// pickFrom returns the plan of the outcomes of cp's conditions on inputs
// ins (where remote[i] is not nil, input i is that remote tensor), or nil
// when cp is nil, a condition cannot be computed on the host or its
// outcome has no plan.
func (cp *condPlans) pickFrom(ins []*tensor.Tensor, remote []driver.RemoteTensor) *plan {
	if cp == nil {
		return nil
	}
	host := ins
	for i := range remote {
		if remote[i] != nil {
			if &host[0] == &ins[0] {
				host = append([]*tensor.Tensor(nil), ins...)
			}
			host[i] = nil
		}
	}
	mask := 0
	for i, hc := range cp.conds {
		v, ok, err := hc.cached(host)
		if err != nil || !ok {
			return nil
		}
		if v {
			mask |= 1 << i
		}
	}
	return cp.plans[mask]
}

// release frees the plans.
func (cp *condPlans) release(ctx *clContext) error {
	if cp == nil {
		return nil
	}
	var errs []error
	for _, pl := range cp.plans {
		if pl != nil {
			errs = append(errs, pl.release(ctx))
		}
	}
	return errors.Join(errs...)
}

// maxCondMemo bounds the bytes of the inputs a host condition's outcome is
// remembered with (condMemo): a sample rate, a flag, a few sizes.
const maxCondMemo = 256

// condMemo is an outcome of a host condition and the bytes of the inputs
// it was computed from (hostCond.inputs' order), each with its element
// type and shape.
type condMemo struct {
	types []tensor.ElementType
	shape []tensor.Shape
	bytes [][]byte
	cond  bool
}

// cached is eval through hc's memo: inputs whose bytes, element types and
// shapes are the last ones remembered give that outcome without running
// the reference kernels again (Silero VAD's `sr == 16000` on every frame:
// about 6 us and a dozen allocations an inference). The condition is a
// pure function of its inputs (host-foldable ops on inputs and
// constants), so the outcome is the one eval would compute. Requests of
// the model share the memo; each outcome it remembers is a fresh,
// immutable entry.
func (hc *hostCond) cached(inputs []*tensor.Tensor) (cond, ok bool, err error) {
	if m := hc.memo.Load(); m != nil && m.matches(hc.inputs, inputs) {
		return m.cond, true, nil
	}
	cond, ok, err = hc.eval(inputs)
	if err == nil && ok {
		if m := newCondMemo(hc.inputs, inputs, cond); m != nil {
			hc.memo.Store(m)
		}
	}
	return cond, ok, err
}

// memoizable reports whether t can key a condMemo: a contiguous tensor of
// fixed-size elements.
func memoizable(t *tensor.Tensor) bool {
	return t != nil && t.Type() != tensor.String && t.IsContiguous()
}

// newCondMemo remembers outcome cond of inputs idx of ins, or returns nil
// when one of them cannot key it or they hold more than maxCondMemo bytes.
func newCondMemo(idx []int, ins []*tensor.Tensor, cond bool) *condMemo {
	m := &condMemo{cond: cond}
	total := 0
	for _, i := range idx {
		t := ins[i]
		if !memoizable(t) {
			return nil
		}
		b := t.Bytes()
		if total += len(b); total > maxCondMemo {
			return nil
		}
		m.types = append(m.types, t.Type())
		m.shape = append(m.shape, t.Shape())
		m.bytes = append(m.bytes, bytes.Clone(b))
	}
	return m
}

// matches reports whether inputs idx of ins are the ones m remembers.
func (m *condMemo) matches(idx []int, ins []*tensor.Tensor) bool {
	for k, i := range idx {
		if i >= len(ins) {
			return false
		}
		t := ins[i]
		if !memoizable(t) || t.Type() != m.types[k] || !t.HasShape(m.shape[k]) || !bytes.Equal(t.Bytes(), m.bytes[k]) {
			return false
		}
	}
	return true
}

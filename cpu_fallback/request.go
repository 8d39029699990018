package cpufallback

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
)

// InferRequest runs a CPU compiled model on its own tensors. Methods are
// safe for concurrent use; while Infer runs, SetTensor fails with
// plugin.ErrBusy.
type InferRequest struct {
	c *CompiledModel

	mu      sync.Mutex
	busy    bool
	closed  bool
	inputs  []*tensor.Tensor // per model input
	outputs []*tensor.Tensor // per model output; set by Infer or the user
	userOut []bool           // outputs the user bound with SetTensor
	prof    []plugin.ProfilingInfo
}

var _ plugin.InferRequest = (*InferRequest)(nil)

func newInferRequest(c *CompiledModel) (*InferRequest, error) {
	r := &InferRequest{c: c, inputs: make([]*tensor.Tensor, len(c.inputs)),
		outputs: make([]*tensor.Tensor, len(c.outputs)), userOut: make([]bool, len(c.outputs))}
	for i, in := range c.inputs {
		if s, ok := in.Shape.ToShape(); ok {
			t, err := tensor.New(in.Type, s)
			if err != nil {
				return nil, plugin.Errorf(plugin.ErrInvalidArgument, "cpu: input %q: %w", in.Name, err)
			}
			r.inputs[i] = t
		}
	}
	return r, nil
}

// ports returns inputs then outputs, for plugin.CheckTensor.
func (r *InferRequest) ports() []plugin.PortInfo {
	return append(clonePorts(r.c.inputs), r.c.outputs...)
}

// SetTensor binds t to the input or output called name. An input tensor is
// never modified; an output tensor receives the result (its shape must
// match the result's after Infer).
func (r *InferRequest) SetTensor(name string, t *tensor.Tensor) error {
	idx, err := plugin.CheckTensor(r.ports(), name, t)
	if err != nil {
		return fmt.Errorf("cpu: set tensor: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if idx < len(r.inputs) {
		r.inputs[idx] = t
		return nil
	}
	idx -= len(r.inputs)
	r.outputs[idx] = t
	r.userOut[idx] = true
	return nil
}

// usable reports ErrClosed or ErrBusy; r.mu is held.
func (r *InferRequest) usable() error {
	if r.closed {
		return fmt.Errorf("cpu: infer request: %w", plugin.ErrClosed)
	}
	if r.busy {
		return fmt.Errorf("cpu: infer request is running: %w", plugin.ErrBusy)
	}
	return nil
}

// Tensor returns the tensor bound to an input, or an output's tensor
// (valid after Infer).
func (r *InferRequest) Tensor(name string) (*tensor.Tensor, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, p := range r.c.inputs {
		if p.Name == name {
			if r.inputs[i] == nil {
				return nil, plugin.Errorf(plugin.ErrNotFound, "cpu: input %q has no tensor yet (dynamic shape %v; bind one with SetTensor)", name, p.Shape)
			}
			return r.inputs[i], nil
		}
	}
	for i, p := range r.c.outputs {
		if p.Name == name {
			if r.outputs[i] == nil {
				return nil, plugin.Errorf(plugin.ErrNotFound, "cpu: output %q has no tensor yet (run Infer first)", name)
			}
			return r.outputs[i], nil
		}
	}
	names := make([]string, 0, len(r.c.inputs)+len(r.c.outputs))
	for _, p := range r.ports() {
		names = append(names, p.Name)
	}
	return nil, plugin.Errorf(plugin.ErrNotFound, "cpu: no tensor %q (ports: %s)", name, strings.Join(names, ", "))
}

// Infer runs the plan once. It checks ctx between ops and returns its
// error wrapped when it is done.
func (r *InferRequest) Infer(ctx context.Context) error {
	r.mu.Lock()
	if err := r.usable(); err != nil {
		r.mu.Unlock()
		return err
	}
	if err := r.c.check(); err != nil {
		r.mu.Unlock()
		return err
	}
	r.busy = true
	inputs := append([]*tensor.Tensor(nil), r.inputs...)
	outputs := append([]*tensor.Tensor(nil), r.outputs...)
	userOut := append([]bool(nil), r.userOut...)
	r.mu.Unlock()

	results, prof, err := r.run(ctx, inputs, outputs, userOut)

	r.mu.Lock()
	defer r.mu.Unlock()
	r.busy = false
	if err != nil {
		return err
	}
	for i, t := range results {
		if !r.userOut[i] {
			r.outputs[i] = t
		}
	}
	r.prof = prof
	if r.c.profiling {
		r.c.recordPerf(prof)
	}
	return nil
}

// run executes the stages; it touches no request state.
func (r *InferRequest) run(ctx context.Context, inputs, outputs []*tensor.Tensor, userOut []bool) ([]*tensor.Tensor, []plugin.ProfilingInfo, error) {
	c := r.c
	var prof []plugin.ProfilingInfo
	stage := func(name string, t0 time.Time) {
		if c.profiling {
			d := time.Since(t0)
			prof = append(prof, plugin.ProfilingInfo{NodeName: name, NodeType: "Stage", ExecType: "go", Status: plugin.Executed, RealTime: d, CPUTime: d})
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("cpu: infer %q: %w", c.model.Name, err)
	}

	// Preprocess: bind inputs, making strided views contiguous.
	t0 := time.Now()
	vals := make([]*tensor.Tensor, c.numSlots)
	for s, v := range c.consts {
		vals[s] = v
	}
	for i, t := range inputs {
		if t == nil {
			return nil, nil, plugin.Errorf(plugin.ErrInvalidArgument, "cpu: infer %q: input %q has no tensor (dynamic shape %v; bind one with SetTensor)", c.model.Name, c.inputs[i].Name, c.inputs[i].Shape)
		}
		vals[c.paramSlot[i]] = t.Contiguous()
	}
	stage("preprocess", t0)

	// Infer: run the kernels in order, releasing values after their last
	// reader.
	t0 = time.Now()
	var opProf []plugin.ProfilingInfo
	for si := range c.steps {
		st := &c.steps[si]
		if st.k != nil {
			if err := ctx.Err(); err != nil {
				return nil, nil, fmt.Errorf("cpu: infer %q: stopped before node %q: %w", c.model.Name, st.node.Name, err)
			}
			ts := time.Now()
			if err := runStep(st, vals); err != nil {
				return nil, nil, plugin.Errorf(plugin.ErrInvalidArgument, "cpu: infer %q: %w", c.model.Name, err)
			}
			if c.profiling {
				d := time.Since(ts)
				opProf = append(opProf, plugin.ProfilingInfo{NodeName: st.node.Name, NodeType: st.node.OpType, ExecType: st.impl, Status: plugin.Executed, RealTime: d, CPUTime: d})
			}
		}
		if st.node.OpType == graph.OpResult {
			// Results keep their value alive; free only other slots.
			continue
		}
		for _, s := range st.free {
			if !isResultInput(c, s) {
				vals[s] = nil
			}
		}
	}
	stage("infer", t0)

	// Postprocess: hand out results, copying into user-bound outputs.
	t0 = time.Now()
	results := make([]*tensor.Tensor, len(c.outputs))
	seen := map[*tensor.Tensor]bool{}
	for i, s := range c.resultIn {
		v := vals[s]
		if v == nil {
			return nil, nil, plugin.Errorf(plugin.ErrDevice, "cpu: infer %q: output %q was not computed", c.model.Name, c.outputs[i].Name)
		}
		if userOut[i] {
			dst := outputs[i]
			if !dst.Shape().Equal(v.Shape()) || dst.Type() != v.Type() {
				return nil, nil, plugin.Errorf(plugin.ErrInvalidArgument, "cpu: infer %q: output %q is %v but the bound tensor is %v", c.model.Name, c.outputs[i].Name, v, dst)
			}
			if err := dst.CopyFrom(v); err != nil {
				return nil, nil, plugin.Errorf(plugin.ErrInvalidArgument, "cpu: infer %q: output %q: %w", c.model.Name, c.outputs[i].Name, err)
			}
			results[i] = dst
			continue
		}
		// Results may alias an input, a constant, another result or a view
		// a movement kernel returned; users get storage of their own.
		if seen[v] || aliasesModel(c, v, inputs) || !v.IsContiguous() {
			v = v.Clone()
		}
		seen[v] = true
		results[i] = v
	}
	stage("postprocess", t0)
	if c.profiling {
		prof = append(opProf, prof...)
	}
	return results, prof, nil
}

// isResultInput reports whether slot s feeds a model output.
func isResultInput(c *CompiledModel, s int) bool {
	for _, r := range c.resultIn {
		if r == s {
			return true
		}
	}
	return false
}

// aliasesModel reports whether v is one of the constants or inputs.
func aliasesModel(c *CompiledModel, v *tensor.Tensor, inputs []*tensor.Tensor) bool {
	for _, k := range c.consts {
		if k == v {
			return true
		}
	}
	for _, in := range inputs {
		if in == v {
			return true
		}
	}
	return false
}

// runStep runs one kernel; a panic inside it becomes an error naming the
// node.
func runStep(st *step, vals []*tensor.Tensor) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = st.node.Errorf("cpu kernel %s panicked: %v", st.impl, p)
		}
	}()
	in := make([]*tensor.Tensor, len(st.in))
	for i, s := range st.in {
		if s >= 0 {
			in[i] = vals[s]
			if in[i] == nil {
				return st.node.Errorf("input %d was released before use (plan bug)", i)
			}
			in[i] = in[i].Contiguous()
		}
	}
	outs, err := st.k(st.node, in)
	if err != nil {
		return err
	}
	if len(outs) < len(st.out) {
		return st.node.Errorf("kernel %s returned %d outputs, want %d", st.impl, len(outs), len(st.out))
	}
	for i, s := range st.out {
		vals[s] = outs[i]
	}
	return nil
}

// ProfilingInfo returns per-op entries and the preprocess, infer and
// postprocess stages of the last Infer when ENABLE_PROFILING is on.
func (r *InferRequest) ProfilingInfo() []plugin.ProfilingInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]plugin.ProfilingInfo(nil), r.prof...)
}

// Close releases the request's tensors.
func (r *InferRequest) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy {
		return fmt.Errorf("cpu: close infer request: %w", plugin.ErrBusy)
	}
	r.closed = true
	clear(r.inputs)
	clear(r.outputs)
	return nil
}

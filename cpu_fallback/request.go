package cpufallback

import (
	"context"
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// InferRequest runs a CPU compiled model on its own tensors. Methods are
// safe for concurrent use; while Infer runs, SetTensor fails with
// driver.ErrBusy.
type InferRequest struct {
	c *CompiledModel

	core driver.RequestCore // bindings, busy/closed state and the lock (core.Mu) for the rest
}

var _ driver.InferRequest = (*InferRequest)(nil)

func newInferRequest(c *CompiledModel) (*InferRequest, error) {
	r := &InferRequest{c: c}
	r.core.Init("cpu", c.Inputs(), c.Outputs())
	for i, in := range c.Inputs() {
		if s, ok := in.Shape.ToShape(); ok && in.Kind == tensor.KindTensor {
			t, err := tensor.New(in.Type, s)
			if err != nil {
				return nil, driver.Errorf(driver.ErrInvalidArgument, "cpu: input %q: %w", in.Name, err)
			}
			r.core.IO.In[i] = t
		}
	}
	return r, nil
}

// SetTensor binds t to the input or output called name. An input tensor is
// never modified; an output tensor receives the result in place.
func (r *InferRequest) SetTensor(name string, t *tensor.Tensor) error {
	return r.core.SetTensor(name, t)
}

// Tensor returns the tensor bound to an input, or an output's tensor
// (valid after Infer). Host tensors stay readable after Close.
func (r *InferRequest) Tensor(name string) (*tensor.Tensor, error) {
	return r.core.Tensor(name)
}

// Infer runs the plan once, as the stages of Stages in order on the
// calling goroutine. It checks ctx between ops and returns its error
// wrapped when it is done.
func (r *InferRequest) Infer(ctx context.Context) error {
	return r.core.RunInline(ctx, r.Stages())
}

// ProfilingInfo returns per-op entries and the preprocess, infer and
// postprocess stages of the last Infer when ENABLE_PROFILING is on.
func (r *InferRequest) ProfilingInfo() []driver.ProfilingInfo {
	return r.core.ProfilingInfo()
}

// Close releases the request's tensors.
func (r *InferRequest) Close() error {
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	if r.core.Busy {
		return fmt.Errorf("cpu: close infer request: %w", driver.ErrBusy)
	}
	r.core.Closed = true
	return nil
}

// runStep runs one kernel; a panic inside it becomes an error naming the
// node.
func runStep(st *step, vals []*tensor.Tensor, seed *tensor.Tensor) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if e, ok := p.(error); ok {
				err = st.node.Errorf("cpu kernel %s panicked: %w", st.impl, e)
				return
			}
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
	if graph.IsRandom(st.node) {
		in = append(in, seed) // the request's seed, after the node's inputs
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

package hetero

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Interface checks.
var (
	_ driver.InferRequest    = (*InferRequest)(nil)
	_ driver.Stager          = (*InferRequest)(nil)
	_ driver.TransferCounter = (*InferRequest)(nil)
)

// InferRequest runs a HETERO compiled model: one request per subgraph, run
// in subgraph order. A value one subgraph computes and a later one reads
// lives in one tensor, allocated when the request is created (for static
// shapes) and bound with SetTensor as the producer's output and the
// consumer's input, so it is neither copied nor reallocated per inference;
// between GPU subgraphs it is a remote tensor (see links.go), one per
// shape for values of dynamic shape. Methods are safe for concurrent use;
// while Infer runs, SetTensor fails with driver.ErrBusy.
type InferRequest struct {
	c    *CompiledModel
	subs []driver.InferRequest
	// remotes are the device tensors of links between subgraphs of one
	// remote context (linkOnDevice, sizeLinks), closed after the
	// sub-requests.
	remotes []driver.RemoteTensor
	// bound[k][i] reports that input i of subgraph k is bound by the
	// request itself: once and for all to its producer's output tensor,
	// or, for a link of dynamic shape on the device, by sizeLinks before
	// its producer runs. link binds the others from the producer's result.
	bound [][]bool
	// dynamic[k] are the links of dynamic shape subgraph k makes on the
	// device, sized by sizeLinks before each of its runs.
	dynamic [][]*deviceLink

	core driver.RequestCore // bindings, busy/closed state and the lock (core.Mu) for the rest
}

func newInferRequest(c *CompiledModel) (_ *InferRequest, err error) {
	r := &InferRequest{c: c}
	r.core.Init("hetero", c.Inputs(), c.Outputs())
	defer func() {
		if err != nil {
			_ = r.closeSubs()
		}
	}()
	for i, in := range c.Inputs() {
		if s, ok := in.Shape.ToShape(); ok && in.Kind == tensor.KindTensor {
			t, err := tensor.New(in.Type, s)
			if err != nil {
				return nil, driver.Errorf(driver.ErrInvalidArgument, "hetero: input %q: %w", in.Name, err)
			}
			r.core.IO.In[i] = t
		}
	}
	for k, cm := range c.compiled {
		sr, err := cm.CreateInferRequest()
		if err != nil {
			return nil, fmt.Errorf("hetero: request of %s on %s: %w", c.subs[k].name, c.subs[k].device, err)
		}
		r.subs = append(r.subs, sr)
	}
	// Intermediate tensors of static shape: one per link, shared; on the
	// device for links between subgraphs of one remote context.
	shared := map[source]*tensor.Tensor{}
	r.bound = make([][]bool, len(c.subs))
	for k, sg := range c.subs {
		r.bound[k] = make([]bool, len(sg.inputs))
	}
	if err := r.linkOnDevice(); err != nil {
		return nil, err
	}
	for k, sg := range c.subs {
		for i, in := range sg.inputs {
			if in.from.sub < 0 || r.bound[k][i] {
				continue
			}
			t, ok := shared[in.from]
			if !ok {
				port, found := portNamed(c.compiled[in.from.sub].Outputs(), in.from.name)
				s, static := port.Shape.ToShape()
				if !found || !static {
					continue
				}
				if t, err = tensor.New(port.Type, s); err != nil {
					return nil, driver.Errorf(driver.ErrInvalidArgument, "hetero: intermediate %q: %w", in.from.name, err)
				}
				if err := r.subs[in.from.sub].SetTensor(in.from.name, t); err != nil {
					return nil, fmt.Errorf("hetero: binding intermediate %q as output of %s: %w", in.from.name, c.subs[in.from.sub].name, err)
				}
				shared[in.from] = t
			}
			if err := r.subs[k].SetTensor(in.name, t); err != nil {
				return nil, fmt.Errorf("hetero: binding intermediate %q as input of %s: %w", in.name, sg.name, err)
			}
			r.bound[k][i] = true
		}
	}
	return r, nil
}

func portNamed(ps []driver.PortInfo, name string) (driver.PortInfo, bool) {
	if i := portIndex(ps, name); i >= 0 {
		return ps[i], true
	}
	return driver.PortInfo{}, false
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

// Infer runs the stages of Stages in order on the calling goroutine: the
// subgraphs' requests one after another, all with ctx, so cancelling ctx
// stops whichever sub-request is running and skips the rest.
func (r *InferRequest) Infer(ctx context.Context) error {
	r.c.running.RLock()
	defer r.c.running.RUnlock()
	return r.core.RunInline(ctx, r.Stages())
}

// runState is what the stages of one inference share.
type runState struct {
	inputs, outputs []*tensor.Tensor
	userOut         []bool
}

// Stages implements driver.Stager: "preprocess" (snapshot the bindings and
// bind the inputs and user outputs to the sub-requests), then every stage
// of every subgraph's request named "subgraphN/stage" on the executor kind
// the device asked for (a sub-request that is not a Stager is one stage,
// "subgraphN/infer"), then "postprocess" (collect the outputs and the
// profile).
func (r *InferRequest) Stages() []driver.Stage {
	s := &runState{}
	stages := []driver.Stage{{Name: "preprocess", Executor: driver.ExecutorTask, Run: func(ctx context.Context) error { return r.preprocess(ctx, s) }}}
	for k, sub := range r.subs {
		var ss []driver.Stage
		if st, ok := sub.(driver.Stager); ok {
			ss = st.Stages()
		} else {
			ss = []driver.Stage{{Name: "infer", Executor: driver.ExecutorTask, Run: sub.Infer}}
		}
		for i, st := range ss {
			st.Name = r.c.subs[k].name + "/" + st.Name
			if i == 0 {
				run, k := st.Run, k
				st.Run = func(ctx context.Context) error {
					if err := r.link(k); err != nil {
						return err
					}
					return run(ctx)
				}
			}
			stages = append(stages, st)
		}
	}
	return append(stages, driver.Stage{Name: "postprocess", Executor: driver.ExecutorTask, Run: func(ctx context.Context) error { return r.postprocess(ctx, s) }})
}

func (r *InferRequest) preprocess(ctx context.Context, s *runState) error {
	c := r.c
	var err error
	if s.inputs, s.outputs, s.userOut, err = r.core.Begin(ctx, c.model.Name, c.check, nil); err != nil {
		return err
	}
	if err := c.fitInputs(s.inputs); err != nil {
		return err
	}
	for k, sg := range c.subs {
		for _, in := range sg.inputs {
			if in.from.sub >= 0 {
				continue
			}
			if err := r.subs[k].SetTensor(in.name, s.inputs[in.from.input]); err != nil {
				return fmt.Errorf("hetero: infer %q: input %q of %s on %s: %w", c.model.Name, in.name, sg.name, sg.device, err)
			}
		}
	}
	for i, user := range s.userOut {
		if !user {
			continue
		}
		k := c.producer[i]
		if err := r.subs[k].SetTensor(c.core.Output(i).Name, s.outputs[i]); err != nil {
			return fmt.Errorf("hetero: infer %q: output %q of %s on %s: %w", c.model.Name, c.core.Output(i).Name, c.subs[k].name, c.subs[k].device, err)
		}
	}
	return nil
}

// link binds the inputs of subgraph k that earlier subgraphs computed
// with shapes known only now (the producer's output tensor itself), then
// sizes the links of dynamic shape k makes on the device (sizeLinks).
func (r *InferRequest) link(k int) error {
	sg := r.c.subs[k]
	for i, in := range sg.inputs {
		if in.from.sub < 0 || r.bound[k][i] {
			continue
		}
		t, err := r.subs[in.from.sub].Tensor(in.from.name)
		if err != nil {
			return fmt.Errorf("hetero: intermediate %q from %s: %w", in.from.name, r.c.subs[in.from.sub].name, err)
		}
		if err := r.subs[k].SetTensor(in.name, t); err != nil {
			return fmt.Errorf("hetero: intermediate %q into %s on %s: %w", in.name, sg.name, sg.device, err)
		}
	}
	return r.sizeLinks(k)
}

func (r *InferRequest) postprocess(ctx context.Context, s *runState) error {
	c := r.c
	t0 := time.Now()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("hetero: infer %q: %w", c.model.Name, err)
	}
	results := make([]*tensor.Tensor, len(c.model.Results))
	for i, out := range c.Outputs() {
		k := c.producer[i]
		t, err := r.subs[k].Tensor(out.Name)
		if err != nil {
			return fmt.Errorf("hetero: infer %q: output %q of %s: %w", c.model.Name, out.Name, c.subs[k].name, err)
		}
		results[i] = t
	}
	var prof []driver.ProfilingInfo
	if c.profiling {
		for k, sub := range r.subs {
			for _, e := range sub.ProfilingInfo() {
				e.NodeName = c.subs[k].name + "/" + e.NodeName
				prof = append(prof, e)
			}
		}
		d := time.Since(t0)
		prof = append(prof, driver.ProfilingInfo{NodeName: "postprocess", NodeType: "Stage", ExecType: "go", Status: driver.Executed, RealTime: d, CPUTime: d})
	}
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	r.core.IO.Publish(results)
	r.core.Prof = prof
	return nil
}

// ProfilingInfo returns the last inference's profile when ENABLE_PROFILING
// is on: every sub-request's entries with the node name prefixed by the
// subgraph ("subgraph0/conv1", "subgraph1/infer").
func (r *InferRequest) ProfilingInfo() []driver.ProfilingInfo {
	return r.core.ProfilingInfo()
}

// Close releases the sub-requests. It fails with driver.ErrBusy while
// Infer runs (the sub-requests' stages are running) and is idempotent.
func (r *InferRequest) Close() error {
	r.core.Mu.Lock()
	if r.core.Closed {
		r.core.Mu.Unlock()
		return nil
	}
	if r.core.Busy {
		r.core.Mu.Unlock()
		return fmt.Errorf("hetero: close infer request: %w", driver.ErrBusy)
	}
	r.core.Closed = true
	r.core.Mu.Unlock()
	return r.closeSubs()
}

func (r *InferRequest) closeSubs() error {
	var errs []error
	for k, s := range r.subs {
		if err := s.Close(); err != nil {
			errs = append(errs, fmt.Errorf("hetero: closing the request of %s: %w", r.c.subs[k].name, err))
		}
	}
	for _, t := range r.remotes {
		if err := t.Close(); err != nil {
			errs = append(errs, fmt.Errorf("hetero: closing intermediate %q: %w", t.Name(), err))
		}
	}
	r.remotes = nil
	return errors.Join(errs...)
}

// Transfers returns the bytes the sub-requests moved in the last
// inference, summed: a link between subgraphs of one remote context moves
// none across the host.
func (r *InferRequest) Transfers() driver.Transfers {
	var t driver.Transfers
	for _, s := range r.subs {
		if tc, ok := s.(driver.TransferCounter); ok {
			t = t.Add(tc.Transfers())
		}
	}
	return t
}

// SubTransfers returns each sub-request's transfers of the last
// inference, in subgraph order.
func (r *InferRequest) SubTransfers() []driver.Transfers {
	out := make([]driver.Transfers, len(r.subs))
	for k, s := range r.subs {
		if tc, ok := s.(driver.TransferCounter); ok {
			out[k] = tc.Transfers()
		}
	}
	return out
}

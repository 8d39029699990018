package clbackend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// hostImpl names the reference kernel a host node runs.
func hostImpl(n *graph.Node) string { return ref.Impl(n) }

// hostNodeUnsupported says why a host node cannot run ("" when it can):
// no reference kernel for its op.
func hostNodeUnsupported(n *graph.Node) string {
	if n.Domain != "" || !ref.Supports(n) {
		return "the host has no kernel for op " + n.OpType
	}
	return ""
}

// hostPartsRequest runs a HostParts model: a request per device part, and
// the host parts' kernels on the calling goroutine.
type hostPartsRequest struct {
	h    *HostParts
	subs []driver.InferRequest // per part; nil for host parts
	core driver.RequestCore
}

var _ driver.InferRequest = (*hostPartsRequest)(nil)

func newHostPartsRequest(h *HostParts) (*hostPartsRequest, error) {
	r := &hostPartsRequest{h: h, subs: make([]driver.InferRequest, len(h.parts))}
	r.core.Init("gpu", h.Inputs(), h.Outputs())
	for k, pt := range h.parts {
		if pt.gpu == nil {
			continue
		}
		sub, err := pt.gpu.CreateInferRequest()
		if err != nil {
			_ = r.closeSubs()
			return nil, fmt.Errorf("gpu: request of part %d: %w", k, err)
		}
		r.subs[k] = sub
	}
	for i, in := range h.Inputs() {
		if s, ok := in.Shape.ToShape(); ok && in.Kind == tensor.KindTensor && in.Type != tensor.String {
			t, err := tensor.New(in.Type, s)
			if err != nil {
				_ = r.closeSubs()
				return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: input %q: %w", in.Name, err)
			}
			r.core.IO.In[i] = t
		}
	}
	return r, nil
}

// SetTensor binds a value (a tensor, sequence or optional) to an input or
// output.
func (r *hostPartsRequest) SetTensor(name string, t *tensor.Tensor) error {
	return r.core.SetTensor(name, t)
}

// Tensor returns the value bound to an input, or an output's value.
func (r *hostPartsRequest) Tensor(name string) (*tensor.Tensor, error) { return r.core.Tensor(name) }

// ProfilingInfo returns the last inference's device parts' entries
// (prefixed "partN/") and one entry per host node.
func (r *hostPartsRequest) ProfilingInfo() []driver.ProfilingInfo { return r.core.ProfilingInfo() }

// Infer runs the parts in order.
func (r *hostPartsRequest) Infer(ctx context.Context) error {
	return r.core.RunInline(ctx, []driver.Stage{{Name: "infer", Run: r.run}})
}

func (r *hostPartsRequest) run(ctx context.Context) error {
	h := r.h
	name := h.model.Name
	inputs, outputs, userOut, err := r.core.Begin(ctx, name, h.core.Check, nil)
	if err != nil {
		return err
	}
	vals := map[graph.Output]*tensor.Tensor{}
	for i, prm := range h.model.Parameters {
		vals[prm.Out(0)] = inputs[i]
	}
	var prof []driver.ProfilingInfo
	for k, pt := range h.parts {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("gpu: infer %q: stopped before part %d: %w", name, k, err)
		}
		if pt.host {
			p, err := runHostPart(pt, vals, h.profiling)
			if err != nil {
				return fmt.Errorf("gpu: infer %q: host part %d: %w", name, k, err)
			}
			prof = append(prof, p...)
			continue
		}
		sub := r.subs[k]
		for i, o := range pt.ins {
			v, err := valueOf(vals, o)
			if err != nil {
				return fmt.Errorf("gpu: infer %q: part %d: %w", name, k, err)
			}
			if err := sub.SetTensor(pt.gpu.model.Parameters[i].Name, v); err != nil {
				return fmt.Errorf("gpu: infer %q: part %d input %d: %w", name, k, i, err)
			}
		}
		if err := sub.Infer(ctx); err != nil {
			return fmt.Errorf("gpu: infer %q: part %d: %w", name, k, err)
		}
		for j, o := range pt.out {
			t, err := sub.Tensor(pt.gpu.model.Results[j].Name)
			if err != nil {
				return fmt.Errorf("gpu: infer %q: part %d output %d: %w", name, k, j, err)
			}
			vals[o] = t.Clone() // the part's request reuses its outputs
		}
		if h.profiling {
			for _, e := range sub.ProfilingInfo() {
				e.NodeName = fmt.Sprintf("part%d/%s", k, e.NodeName)
				prof = append(prof, e)
			}
		}
	}
	results := make([]*tensor.Tensor, len(h.model.Results))
	for i, res := range h.model.Results {
		v, err := valueOf(vals, res.Inputs[0])
		if err != nil {
			return fmt.Errorf("gpu: infer %q: output %q: %w", name, res.Name, err)
		}
		if userOut[i] {
			if err := outputs[i].CopyFrom(v); err != nil {
				return driver.Errorf(driver.ErrInvalidArgument, "gpu: infer %q: output %q is %v but the bound tensor is %v: %w", name, res.Name, v, outputs[i], err)
			}
			v = outputs[i]
		}
		results[i] = v
	}
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	r.core.IO.Publish(results)
	r.core.Prof = prof
	if h.profiling {
		h.core.RecordPerf(prof)
	}
	return nil
}

// valueOf returns the value at o: a model input, a constant, or what an
// earlier part made.
func valueOf(vals map[graph.Output]*tensor.Tensor, o graph.Output) (*tensor.Tensor, error) {
	if o.Node.OpType == graph.OpConstant {
		return o.Node.Value, nil
	}
	v, ok := vals[o]
	if !ok || v == nil {
		return nil, driver.Errorf(driver.ErrDevice, "value %s was not computed", o)
	}
	return v, nil
}

// runHostPart runs a host part's nodes with the reference kernels,
// storing their outputs in vals.
func runHostPart(pt *part, vals map[graph.Output]*tensor.Tensor, profiling bool) ([]driver.ProfilingInfo, error) {
	var prof []driver.ProfilingInfo
	for _, n := range pt.nodes {
		k, ok := ref.Lookup(n.OpType)
		if !ok {
			return nil, driver.Errorf(driver.ErrUnsupported, "node %q: the host has no kernel for op %s", n.Name, n.OpType)
		}
		in := make([]*tensor.Tensor, len(n.Inputs))
		for i, o := range n.Inputs {
			if !o.Valid() {
				continue
			}
			v, err := valueOf(vals, o)
			if err != nil {
				return nil, fmt.Errorf("node %q: %w", n.Name, err)
			}
			in[i] = v
		}
		t0 := time.Now()
		out, err := k(n, in)
		if err != nil {
			return nil, err
		}
		if len(out) > len(n.Outputs) {
			return nil, driver.Errorf(driver.ErrDevice, "node %q: the kernel made %d outputs for %d ports", n.Name, len(out), len(n.Outputs))
		}
		for i, v := range out {
			vals[n.Out(i)] = v
		}
		if profiling {
			d := time.Since(t0)
			prof = append(prof, driver.ProfilingInfo{NodeName: n.Name, NodeType: n.OpType, ExecType: "host:" + hostImpl(n),
				Status: driver.Executed, RealTime: d, CPUTime: d})
		}
	}
	return prof, nil
}

// Close closes the parts' requests. It is idempotent.
func (r *hostPartsRequest) Close() error {
	r.core.Mu.Lock()
	if r.core.Closed {
		r.core.Mu.Unlock()
		return nil
	}
	r.core.Closed = true
	r.core.Mu.Unlock()
	return r.closeSubs()
}

func (r *hostPartsRequest) closeSubs() error {
	var errs []error
	for _, s := range r.subs {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}

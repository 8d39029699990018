package driver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// Stateful models (OpenVINO's MakeStateful and LowLatency with
// ReadValue/Assign): a compile option turns named pairs of a model's
// inputs and outputs, such as a recurrent network's state in and state
// out, into states of each infer request. The model then has neither port;
// every request starts with zero states, and each inference's state
// output is the next inference's state input without the caller seeing
// it. On a device with remote contexts (the GPU) a state is a device
// tensor bound to both ports, so it never leaves the device between
// inferences; elsewhere it is the host tensor the last inference made.

// KeyMakeStateful is the compile option that makes a model stateful:
// "input:output[,input:output...]", each pair a state input and the output
// that carries its next value (same element type and static shape). The
// Core handles it for every device (MakeStateful); a plugin never sees
// it.
const KeyMakeStateful = "MAKE_STATEFUL"

// VariableState is one state of a stateful request (OpenVINO's
// ov::VariableState).
type VariableState interface {
	// Name is the state's input name.
	Name() string
	// Reset sets the state to zeros, its value before the first
	// inference.
	Reset() error
	// State returns a copy of the state's value.
	State() (*tensor.Tensor, error)
	// SetState sets the state's value (a tensor of its type and shape);
	// the next inference reads it.
	SetState(t *tensor.Tensor) error
}

// Stateful is implemented by the requests of stateful models.
type Stateful interface {
	// QueryState returns the request's states, in MAKE_STATEFUL order.
	QueryState() []VariableState
}

// StateHolder is implemented by requests that keep a state pair in device
// memory of their own between inferences (the model was compiled with
// MAKE_STATEFUL by a StatefulCompiler): HoldState returns the state of
// input in, which the request reads in place and into which each
// inference writes output out.
type StateHolder interface {
	HoldState(in, out string) (VariableState, error)
}

// StatefulCompiler is implemented by plugins that take MAKE_STATEFUL among
// their compile properties and keep the states on the device themselves
// (their requests are StateHolders); the Core passes the option to them
// and still wraps the compiled model (MakeStateful) for its ports and
// states.
type StatefulCompiler interface {
	CompilesStateful() bool
}

// StatePair is one state: the input that reads it and the output that
// writes its next value.
type StatePair struct {
	Input, Output string
}

// ParseStatePairs parses a MAKE_STATEFUL value.
func ParseStatePairs(s string) ([]StatePair, error) {
	var out []StatePair
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
		in, o, ok := strings.Cut(p, ":")
		if !ok || in == "" || o == "" {
			return nil, errorf(ErrInvalidArgument, "plugin: %s: %q is not input:output", KeyMakeStateful, p)
		}
		out = append(out, StatePair{Input: in, Output: o})
	}
	if len(out) == 0 {
		return nil, errorf(ErrInvalidArgument, "plugin: %s is empty; want input:output pairs", KeyMakeStateful)
	}
	return out, nil
}

// statefulModel is a compiled model whose state ports are its requests'
// own.
type statefulModel struct {
	inner            CompiledModel
	pairs            []StatePair
	ports            []PortInfo // of each pair's input
	inputs, outputs  []PortInfo // without the states
	stateIn, stateOu map[string]bool
}

// MakeStateful wraps cm so that each pair's input and output become a
// state of its requests (see KeyMakeStateful). A pair that names no port,
// ports of different types or shapes, or a dynamic shape is an error
// wrapping ErrInvalidArgument.
func MakeStateful(cm CompiledModel, pairs []StatePair) (CompiledModel, error) {
	m := &statefulModel{inner: cm, pairs: pairs, stateIn: map[string]bool{}, stateOu: map[string]bool{}}
	find := func(ports []PortInfo, name string) (PortInfo, bool) {
		for _, p := range ports {
			if p.Name == name {
				return p, true
			}
		}
		return PortInfo{}, false
	}
	for _, p := range pairs {
		in, ok1 := find(cm.Inputs(), p.Input)
		out, ok2 := find(cm.Outputs(), p.Output)
		switch {
		case !ok1 || !ok2:
			return nil, errorf(ErrInvalidArgument, "plugin: %s: the model has no input %q or no output %q", KeyMakeStateful, p.Input, p.Output)
		case m.stateIn[p.Input] || m.stateOu[p.Output]:
			return nil, errorf(ErrInvalidArgument, "plugin: %s: input %q or output %q is in two pairs", KeyMakeStateful, p.Input, p.Output)
		case !in.Shape.IsStatic():
			return nil, errorf(ErrInvalidArgument, "plugin: %s: state input %q has shape %v; give it a static shape before compiling", KeyMakeStateful, p.Input, in.Shape)
		case in.Type != out.Type || !graph.SameShape(in.Shape, out.Shape) && out.Shape.IsStatic():
			return nil, errorf(ErrInvalidArgument, "plugin: %s: input %q is %v%v and output %q %v%v", KeyMakeStateful, p.Input, in.Type, in.Shape, p.Output, out.Type, out.Shape)
		}
		m.stateIn[p.Input], m.stateOu[p.Output] = true, true
		m.ports = append(m.ports, in)
	}
	for _, p := range cm.Inputs() {
		if !m.stateIn[p.Name] {
			m.inputs = append(m.inputs, p)
		}
	}
	for _, p := range cm.Outputs() {
		if !m.stateOu[p.Name] {
			m.outputs = append(m.outputs, p)
		}
	}
	return m, nil
}

// Inputs are the model's inputs but the states.
func (m *statefulModel) Inputs() []PortInfo { return slices.Clone(m.inputs) }

// Outputs are the model's outputs but the states.
func (m *statefulModel) Outputs() []PortInfo { return slices.Clone(m.outputs) }

// Property answers MAKE_STATEFUL with the pairs and the rest from the
// model.
func (m *statefulModel) Property(key string) (string, error) {
	if CanonicalKey(key) == KeyMakeStateful {
		var s []string
		for _, p := range m.pairs {
			s = append(s, p.Input+":"+p.Output)
		}
		return strings.Join(s, ","), nil
	}
	return m.inner.Property(key)
}

// RuntimeModel is the model's.
func (m *statefulModel) RuntimeModel() (*graph.Model, error) { return m.inner.RuntimeModel() }

// Close closes the model.
func (m *statefulModel) Close() error { return m.inner.Close() }

// Context is the model's remote context, when it has one.
func (m *statefulModel) Context() (RemoteContext, error) {
	if cm, ok := m.inner.(ContextModel); ok {
		return cm.Context()
	}
	return nil, errorf(ErrNotImplemented, "plugin: the model's device has no remote context")
}

// CreateInferRequest returns a request with zero states: device tensors
// of the model's context bound to both ports of each pair when the device
// has remote contexts, host tensors otherwise.
func (m *statefulModel) CreateInferRequest() (_ InferRequest, err error) {
	r, err := m.inner.CreateInferRequest()
	if err != nil {
		return nil, err
	}
	sr := &statefulRequest{m: m, inner: r}
	defer func() {
		if err != nil {
			_ = sr.Close()
		}
	}()
	rb, remote := r.(RemoteBinder)
	cm, hasCtx := m.inner.(ContextModel)
	if _, holds := r.(StateHolder); !holds && remote && hasCtx {
		if sr.rc, err = cm.Context(); err != nil {
			return nil, err
		}
	}
	holder, holds := r.(StateHolder)
	for i, p := range m.pairs {
		if holds {
			vs, err := holder.HoldState(p.Input, p.Output)
			if err != nil {
				return nil, err
			}
			sr.held = append(sr.held, vs)
			continue
		}
		v := &variable{r: sr, pair: p, port: m.ports[i]}
		sr.vars = append(sr.vars, v)
		if sr.rc != nil {
			s, _ := m.ports[i].Shape.ToShape()
			if v.rt, err = sr.rc.CreateTensor("state "+p.Input, m.ports[i].Type, s, nil); err != nil {
				return nil, err
			}
			for _, port := range []string{p.Input, p.Output} {
				if err := rb.SetRemoteTensor(port, v.rt); err != nil {
					return nil, err
				}
			}
		}
		if err := v.Reset(); err != nil {
			return nil, err
		}
	}
	return sr, nil
}

// statefulRequest is a request of a stateful model.
type statefulRequest struct {
	m     *statefulModel
	inner InferRequest
	rc    RemoteContext // nil: host states
	vars  []*variable
	held  []VariableState // the states a StateHolder request keeps itself
}

// SetTensor binds a tensor to a port that is not a state.
func (r *statefulRequest) SetTensor(name string, t *tensor.Tensor) error {
	if err := r.checkPort(name); err != nil {
		return err
	}
	return r.inner.SetTensor(name, t)
}

// Tensor returns the tensor of a port that is not a state.
func (r *statefulRequest) Tensor(name string) (*tensor.Tensor, error) {
	if err := r.checkPort(name); err != nil {
		return nil, err
	}
	return r.inner.Tensor(name)
}

func (r *statefulRequest) checkPort(name string) error {
	if r.m.stateIn[name] || r.m.stateOu[name] {
		return errorf(ErrInvalidArgument, "plugin: port %q is a state of the stateful model (%s); use QueryState", name, KeyMakeStateful)
	}
	return nil
}

// Infer runs one inference; each state output becomes the state.
func (r *statefulRequest) Infer(ctx context.Context) error {
	if err := r.inner.Infer(ctx); err != nil {
		return err
	}
	if r.rc != nil || len(r.held) > 0 {
		return nil // written into the state on the device
	}
	for _, v := range r.vars {
		next, err := r.inner.Tensor(v.pair.Output)
		if err != nil {
			return err
		}
		// The output is the request's own new tensor: it is the state
		// now, without a copy.
		if err := r.inner.SetTensor(v.pair.Input, next); err != nil {
			return err
		}
	}
	return nil
}

// QueryState returns the request's states.
func (r *statefulRequest) QueryState() []VariableState {
	out := append([]VariableState(nil), r.held...)
	for _, v := range r.vars {
		out = append(out, v)
	}
	return out
}

// ProfilingInfo is the inner request's.
func (r *statefulRequest) ProfilingInfo() []ProfilingInfo { return r.inner.ProfilingInfo() }

// Transfers is the inner request's (zero when it does not count them).
func (r *statefulRequest) Transfers() Transfers {
	if tc, ok := r.inner.(TransferCounter); ok {
		return tc.Transfers()
	}
	return Transfers{}
}

// SetRemoteTensor binds a remote tensor to a port that is not a state.
func (r *statefulRequest) SetRemoteTensor(name string, t RemoteTensor) error {
	if err := r.checkPort(name); err != nil {
		return err
	}
	rb, ok := r.inner.(RemoteBinder)
	if !ok {
		return errorf(ErrNotImplemented, "plugin: the request's device takes host tensors only")
	}
	return rb.SetRemoteTensor(name, t)
}

// RemoteTensor returns the remote tensor of a port that is not a state.
func (r *statefulRequest) RemoteTensor(name string) (RemoteTensor, error) {
	if err := r.checkPort(name); err != nil {
		return nil, err
	}
	rb, ok := r.inner.(RemoteBinder)
	if !ok {
		return nil, errorf(ErrNotFound, "plugin: port %q has no remote tensor", name)
	}
	return rb.RemoteTensor(name)
}

// Close releases the states and the request.
func (r *statefulRequest) Close() error {
	var errs []error
	errs = append(errs, r.inner.Close())
	for _, v := range r.vars {
		if v.rt != nil {
			errs = append(errs, v.rt.Close())
		}
	}
	if r.rc != nil {
		errs = append(errs, r.rc.Close())
	}
	return errors.Join(errs...)
}

// variable is one state of a request.
type variable struct {
	r    *statefulRequest
	pair StatePair
	port PortInfo
	rt   RemoteTensor // the device state, or nil: the input's host tensor
}

// Name is the state's input name.
func (v *variable) Name() string { return v.pair.Input }

// Reset sets the state to zeros.
func (v *variable) Reset() error {
	s, _ := v.port.Shape.ToShape()
	z, err := tensor.New(v.port.Type, s)
	if err != nil {
		return fmt.Errorf("plugin: state %q: %w", v.pair.Input, err)
	}
	return v.set(z)
}

// State returns a copy of the state.
func (v *variable) State() (*tensor.Tensor, error) {
	if v.rt != nil {
		s, _ := v.port.Shape.ToShape()
		t, err := tensor.New(v.port.Type, s)
		if err != nil {
			return nil, err
		}
		if err := v.rt.CopyTo(context.Background(), t); err != nil {
			return nil, err
		}
		return t, nil
	}
	t, err := v.r.inner.Tensor(v.pair.Input)
	if err != nil {
		return nil, err
	}
	return t.Clone(), nil
}

// SetState sets the state to a copy of t.
func (v *variable) SetState(t *tensor.Tensor) error {
	if t == nil || t.Type() != v.port.Type || !v.port.Shape.Compatible(t.Shape()) {
		return errorf(ErrInvalidArgument, "plugin: state %q is %v%v; got %v", v.pair.Input, v.port.Type, v.port.Shape, t)
	}
	return v.set(t.Clone())
}

// set makes t (owned) the state.
func (v *variable) set(t *tensor.Tensor) error {
	if v.rt != nil {
		return v.rt.CopyFrom(context.Background(), t)
	}
	return v.r.inner.SetTensor(v.pair.Input, t)
}

// Interface checks.
var (
	_ Stateful        = (*statefulRequest)(nil)
	_ TransferCounter = (*statefulRequest)(nil)
	_ RemoteBinder    = (*statefulRequest)(nil)
	_ ContextModel    = (*statefulModel)(nil)
)

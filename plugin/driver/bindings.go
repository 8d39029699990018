package driver

import (
	"github.com/clinfer/clinfer/tensor"
)

// Bindings are the tensors one infer request binds to its compiled model's
// inputs and outputs. Devices keep one per request so that SetTensor and
// Tensor check and answer the same way on every device. Bindings does no
// locking: the request guards it with its own mutex. Its errors carry no
// package prefix: the request adds its device's.
type Bindings struct {
	ports []PortInfo // inputs, then outputs
	nIn   int
	// In holds the input tensors, in input order; nil until bound (or made
	// by the device for static shapes).
	In []*tensor.Tensor
	// Out holds the output tensors, in output order: the user's (UserOut)
	// or the last inference's results.
	Out []*tensor.Tensor
	// UserOut marks outputs the user bound with Set; inference writes into
	// them instead of replacing them.
	UserOut []bool
}

// NewBindings returns empty bindings for a model's inputs and outputs.
func NewBindings(inputs, outputs []PortInfo) Bindings {
	ports := make([]PortInfo, 0, len(inputs)+len(outputs))
	ports = append(append(ports, inputs...), outputs...)
	return Bindings{
		ports:   ports,
		nIn:     len(inputs),
		In:      make([]*tensor.Tensor, len(inputs)),
		Out:     make([]*tensor.Tensor, len(outputs)),
		UserOut: make([]bool, len(outputs)),
	}
}

// Set binds t to the input or output called name after CheckTensor's
// checks (unknown name: ErrNotFound; wrong element type or shape:
// ErrInvalidArgument). A bound output receives the results of later
// inferences.
func (b *Bindings) Set(name string, t *tensor.Tensor) error {
	idx, err := CheckTensor(b.ports, name, t)
	if err != nil {
		return err
	}
	if idx < b.nIn {
		b.In[idx] = t
		return nil
	}
	b.Out[idx-b.nIn] = t
	b.UserOut[idx-b.nIn] = true
	return nil
}

// Get returns the tensor bound to an input, or an output's tensor. An
// unknown name, or a port with no tensor yet, is an error wrapping
// ErrNotFound that says what to do.
func (b *Bindings) Get(name string) (*tensor.Tensor, error) {
	for i, p := range b.ports {
		if p.Name != name {
			continue
		}
		if i < b.nIn {
			if b.In[i] == nil {
				return nil, errorf(ErrNotFound, "input %q has no tensor yet (shape %v; bind one with SetTensor)", name, p.Shape)
			}
			return b.In[i], nil
		}
		if t := b.Out[i-b.nIn]; t != nil {
			return t, nil
		}
		return nil, errorf(ErrNotFound, "output %q has no tensor yet (run Infer first)", name)
	}
	_, err := CheckTensor(b.ports, name, nil) // the same unknown-name error as Set
	return nil, err
}

// Unbound returns an error wrapping ErrInvalidArgument that names the
// first input with no tensor (one with a dynamic shape that SetTensor
// never bound), or nil when every input has one.
func (b *Bindings) Unbound() error {
	for i, t := range b.In {
		if t == nil {
			p := b.ports[i]
			return errorf(ErrInvalidArgument, "input %q has no tensor (dynamic shape %v; bind one with SetTensor)", p.Name, p.Shape)
		}
	}
	return nil
}

// Snapshot returns copies of the slices, for an inference to work on while
// the user may bind new tensors.
func (b *Bindings) Snapshot() (in, out []*tensor.Tensor, userOut []bool) {
	return append([]*tensor.Tensor(nil), b.In...), append([]*tensor.Tensor(nil), b.Out...), append([]bool(nil), b.UserOut...)
}

// Publish stores an inference's results as the outputs the user did not
// bind (bound ones were written in place).
func (b *Bindings) Publish(results []*tensor.Tensor) {
	for i, t := range results {
		if !b.UserOut[i] {
			b.Out[i] = t
		}
	}
}

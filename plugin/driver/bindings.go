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
	// RemoteIn and RemoteOut hold the remote tensors bound with SetRemote
	// (nil for host-bound ports); a port has a host tensor or a remote
	// one, not both.
	RemoteIn, RemoteOut []RemoteTensor
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

		RemoteIn:  make([]RemoteTensor, len(inputs)),
		RemoteOut: make([]RemoteTensor, len(outputs)),
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
		b.RemoteIn[idx] = nil
		return nil
	}
	b.Out[idx-b.nIn] = t
	b.UserOut[idx-b.nIn] = true
	b.RemoteOut[idx-b.nIn] = nil
	return nil
}

// SetRemote binds remote tensor t to the input or output called name
// after CheckRemote's checks, in place of a host tensor. The device
// checks that t is of its context. A nil t unbinds the port: an output
// then gets the device's own tensor again, an input has none until the
// next Set or SetRemote.
func (b *Bindings) SetRemote(name string, t RemoteTensor) error {
	var idx int
	var err error
	if t == nil {
		idx, err = portIndex(b.ports, name)
	} else {
		idx, err = CheckRemote(b.ports, name, t)
	}
	if err != nil {
		return err
	}
	if idx < b.nIn {
		b.RemoteIn[idx] = t
		b.In[idx] = nil
		return nil
	}
	b.RemoteOut[idx-b.nIn] = t
	b.Out[idx-b.nIn] = nil
	b.UserOut[idx-b.nIn] = false
	return nil
}

// Remote returns the remote tensor bound to a port; an unknown name is an
// error wrapping ErrNotFound, as is a port bound to a host tensor.
func (b *Bindings) Remote(name string) (RemoteTensor, error) {
	idx, err := portIndex(b.ports, name)
	if err != nil {
		return nil, err
	}
	var t RemoteTensor
	if idx < b.nIn {
		t = b.RemoteIn[idx]
	} else {
		t = b.RemoteOut[idx-b.nIn]
	}
	if t == nil {
		return nil, errorf(ErrNotFound, "port %q has no remote tensor (bind one with SetRemoteTensor)", name)
	}
	return t, nil
}

// remoteAt returns the remote tensor bound to port i (inputs first).
func (b *Bindings) remoteAt(i int) RemoteTensor {
	if i < b.nIn {
		return b.RemoteIn[i]
	}
	return b.RemoteOut[i-b.nIn]
}

// Get returns the tensor bound to an input, or an output's tensor. An
// unknown name, or a port with no tensor yet, is an error wrapping
// ErrNotFound that says what to do.
func (b *Bindings) Get(name string) (*tensor.Tensor, error) {
	for i, p := range b.ports {
		if p.Name != name {
			continue
		}
		if rt := b.remoteAt(i); rt != nil {
			return nil, errorf(ErrInvalidArgument, "port %q is bound to remote tensor %q, which stays on the device (read it with its CopyTo, or bind a host tensor)", name, rt.Name())
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
		if t == nil && b.RemoteIn[i] == nil {
			p := b.ports[i]
			return errorf(ErrInvalidArgument, "input %q has no tensor (dynamic shape %v; bind one with SetTensor)", p.Name, p.Shape)
		}
	}
	return nil
}

// Snapshot returns copies of the slices, for an inference to work on while
// the user may bind new tensors.
func (b *Bindings) Snapshot() (in, out []*tensor.Tensor, userOut []bool) {
	return b.SnapshotInto(nil, nil, nil)
}

// SnapshotInto is Snapshot into the memory of an earlier snapshot's
// slices, which it overwrites: a request that keeps them from one
// inference to the next allocates nothing for it.
func (b *Bindings) SnapshotInto(in, out []*tensor.Tensor, userOut []bool) ([]*tensor.Tensor, []*tensor.Tensor, []bool) {
	return append(in[:0], b.In...), append(out[:0], b.Out...), append(userOut[:0], b.UserOut...)
}

// SnapshotRemote returns copies of RemoteIn and RemoteOut.
func (b *Bindings) SnapshotRemote() (in, out []RemoteTensor) {
	return b.SnapshotRemoteInto(nil, nil)
}

// SnapshotRemoteInto is SnapshotRemote into the memory of an earlier
// snapshot's slices (see SnapshotInto).
func (b *Bindings) SnapshotRemoteInto(in, out []RemoteTensor) ([]RemoteTensor, []RemoteTensor) {
	return append(in[:0], b.RemoteIn...), append(out[:0], b.RemoteOut...)
}

// Publish stores an inference's results as the outputs the user did not
// bind (bound ones were written in place).
func (b *Bindings) Publish(results []*tensor.Tensor) {
	for i, t := range results {
		if !b.UserOut[i] && b.RemoteOut[i] == nil {
			b.Out[i] = t
		}
	}
}

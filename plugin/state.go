package plugin

import (
	"fmt"
	"strings"

	"github.com/clinfer/clinfer/plugin/driver"
)

// VariableState is one state of a request of a stateful model, OpenVINO's
// ov::VariableState: Name (its input's name), Reset (to zeros, as before
// the first inference), State (a copy) and SetState.
type VariableState = driver.VariableState

// KeyMakeStateful is the compile option that makes a model stateful
// (OpenVINO's MakeStateful): "input:output[,input:output...]" pairs of
// state inputs and the outputs that carry their next values. The model
// then has neither port: each request starts with zero states, each
// inference's output is the next one's input, and QueryState reaches them.
// The GPU keeps the states in device memory (no state byte crosses the
// host between inferences); other devices in host memory.
const KeyMakeStateful = driver.KeyMakeStateful

// MakeStateful is the KeyMakeStateful option for the given input:output
// pairs.
func MakeStateful(pairs ...string) Option {
	return WithProperty(KeyMakeStateful, strings.Join(pairs, ","))
}

// QueryState returns the request's states, in MAKE_STATEFUL order. A
// request of a model compiled without it is an error wrapping
// ErrNotImplemented.
func (r *request) QueryState() ([]VariableState, error) {
	if err := r.check("query state"); err != nil {
		return nil, err
	}
	s, ok := r.r.(driver.Stateful)
	if !ok {
		return nil, fmt.Errorf("plugin: query state: the model has no states (compile it with %s): %w", KeyMakeStateful, ErrNotImplemented)
	}
	return s.QueryState(), nil
}

package serve

import (
	"context"
	"sync"
	"time"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/tensor"
)

// version is one served version of a model: its compiled model and the
// bounded queue in front of it. Requests hold it (inflight) from lookup to
// response, so a reload that replaces it closes the compiled model only
// after the last of them is answered.
type version struct {
	model   string
	number  int64
	sig     string // what it was loaded from, to tell a changed file
	cm      *clinfer.CompiledModel
	inputs  []clinfer.PortInfo
	outputs []clinfer.PortInfo
	device  string
	timeout time.Duration

	// admit bounds the requests queued or running (the queue and the
	// pool); exec bounds the running ones to the compiled model's
	// OPTIMAL_NUMBER_OF_INFER_REQUESTS, so the time spent waiting for it
	// is the queue time.
	admit, exec chan struct{}

	inflight sync.WaitGroup
}

// newVersion wraps a compiled model with a queue of queueSize.
func newVersion(model string, number int64, sig string, cm *clinfer.CompiledModel, device string, cfg ModelConfig, timeout time.Duration) *version {
	n, err := cm.OptimalNumberOfInferRequests()
	if err != nil || n < 1 {
		n = 1
	}
	return &version{
		model: model, number: number, sig: sig, cm: cm, device: device,
		inputs: cm.Inputs(), outputs: cm.Outputs(), timeout: cfg.timeout(timeout),
		admit: make(chan struct{}, n+cfg.queueSize()), exec: make(chan struct{}, n),
	}
}

// input returns the port called name.
func (v *version) input(name string) (clinfer.PortInfo, bool) {
	for _, p := range v.inputs {
		if p.Name == name {
			return p, true
		}
	}
	return clinfer.PortInfo{}, false
}

// output returns the port called name.
func (v *version) output(name string) (clinfer.PortInfo, bool) {
	for _, p := range v.outputs {
		if p.Name == name {
			return p, true
		}
	}
	return clinfer.PortInfo{}, false
}

// timing is where a request's time went.
type timing struct {
	queue, compute time.Duration
}

// enqueue takes a place in the queue, or refuses at once when it is full;
// the caller calls the returned function when the request is answered.
// REST admits before it reads the body, so the queue bounds the memory
// of bodies being read too.
func (v *version) enqueue() (func(), error) {
	select {
	case v.admit <- struct{}{}:
		return func() { <-v.admit }, nil
	default:
		return nil, errorf(codeQueueFull, "model %q version %d: queue full (%d requests queued or running): retry later", v.model, v.number, cap(v.admit))
	}
}

// infer runs one inference: admitted to the queue (or refused at once when
// it is full), then waiting for a free request, then on the device. ctx
// (the client's, so a client that goes away cancels it) bounds every step,
// with the version's timeout on top.
func (v *version) infer(ctx context.Context, inputs map[string]*tensor.Tensor) (map[string]*tensor.Tensor, timing, error) {
	done, err := v.enqueue()
	if err != nil {
		return nil, timing{}, err
	}
	defer done()
	return v.run(ctx, inputs)
}

// run is infer for an admitted request.
func (v *version) run(ctx context.Context, inputs map[string]*tensor.Tensor) (map[string]*tensor.Tensor, timing, error) {
	var tm timing
	if v.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, v.timeout)
		defer cancel()
	}
	t0 := time.Now()
	select {
	case v.exec <- struct{}{}:
	case <-ctx.Done():
		tm.queue = time.Since(t0)
		return nil, tm, classify(ctx.Err())
	}
	defer func() { <-v.exec }()
	t1 := time.Now()
	tm.queue = t1.Sub(t0)
	out, err := v.cm.Infer(ctx, inputs)
	tm.compute = time.Since(t1)
	if err != nil {
		return nil, tm, classify(err)
	}
	return out, tm, nil
}

package driver

import (
	"sync"
)

// AsyncSupport is the asynchronous machinery a device's compiled model
// embeds to implement AsyncCompiledModel: the Pipeline its requests share,
// made on the first asynchronous request (so purely synchronous users never
// start executors) and closed, waiting for running requests, when the
// compiled model closes. The zero value is not usable: call Init from
// compile.
type AsyncSupport struct {
	mu       sync.Mutex
	mgr      *ExecutorManager
	cfg      PipelineConfig
	name     string // for messages: "cpu: compiled model \"net\""
	pipeline *Pipeline
	closed   bool
}

// Init records the executor manager (normally the plugin's) and the
// pipeline configuration; what names the compiled model in errors.
func (a *AsyncSupport) Init(mgr *ExecutorManager, cfg PipelineConfig, what string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mgr, a.cfg, a.name = mgr, cfg, what
}

// NewRequest wraps a new synchronous request of the compiled model in an
// AsyncInferRequest on the shared pipeline. It fails with ErrClosed after
// Close.
func (a *AsyncSupport) NewRequest(sync InferRequest, opts ...AsyncOption) (*AsyncInferRequest, error) {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, Errorf(ErrClosed, "%s: asynchronous request after Close", a.name)
	}
	if a.pipeline == nil {
		p, err := NewPipeline(a.mgr, a.cfg)
		if err != nil {
			a.mu.Unlock()
			return nil, prefixed(a.name, err)
		}
		a.pipeline = p
	}
	p := a.pipeline
	a.mu.Unlock()
	return p.NewRequest(sync, opts...)
}

// Close waits for running asynchronous requests and releases the
// executors. It is idempotent; later NewRequest calls fail with ErrClosed.
func (a *AsyncSupport) Close() error {
	a.mu.Lock()
	a.closed = true
	p := a.pipeline
	a.pipeline = nil
	a.mu.Unlock()
	if p != nil {
		return p.Close()
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"time"

	"github.com/clinfer/clinfer/bench"
	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tests/conformance"
)

// clRunner is a model compiled on a clinfer device, with one request.
type clRunner struct {
	cm  driver.CompiledModel
	req driver.InferRequest
	// choices counts the GPU plan's kernel variant choices, shipped those
	// the shipped tuning database made.
	choices, shipped int
	// compile is CompileModel's time (with the device's warm-up run).
	compile time.Duration
}

// choicer is what a GPU compiled model reports of its kernel choices.
type choicer interface {
	KernelChoices() []clbackend.TunedOp
}

// clProps are the compile properties of a clinfer configuration.
func clProps(cfg string, m benchModel) (device string, props map[string]string) {
	props = map[string]string{driver.KeyPerformanceHint: driver.HintLatency.String()}
	if m.Stateful != "" {
		props[driver.KeyMakeStateful] = m.Stateful
	}
	switch cfg {
	case cfgGPU:
		props[clbackend.KeyShippedTuning] = "NO"
		props[clbackend.KeyInThread] = "NO"
		return "GPU", props
	case cfgGPUTuned:
		props[clbackend.KeyInThread] = "NO"
		return "GPU", props
	case cfgGPUInThread:
		props[clbackend.KeyShippedTuning] = "NO"
		props[clbackend.KeyInThread] = "AUTO"
		return "GPU", props
	}
	return "CPU", props
}

// compileCL reads the model, fixes its inputs to m's shapes, compiles it
// for cfg, binds seeded random inputs (and m's values) and runs the
// warm-up inference.
func compileCL(ctx context.Context, core *driver.Core, path string, m benchModel, cfg string) (_ *clRunner, err error) {
	device, props := clProps(cfg, m)
	cm, req, compile, err := bench.CompileWithInputs(ctx, core, path, m.Inputs, m.Values, device, props)
	if err != nil {
		return nil, err
	}
	r := &clRunner{cm: cm, req: req, compile: compile}
	defer func() {
		if err != nil {
			err = errors.Join(err, r.Close())
		}
	}()
	if err := r.req.Infer(ctx); err != nil {
		return nil, err
	}
	if ch, ok := cm.(choicer); ok {
		for _, c := range ch.KernelChoices() {
			r.choices++
			if c.Source == "shipped" && c.Variant != c.Heuristic {
				r.shipped++
			}
		}
	}
	return r, nil
}

func (r *clRunner) runFor(ctx context.Context, d time.Duration) ([]float64, error) {
	var times []float64
	start := time.Now()
	for len(times) == 0 || time.Since(start) < d {
		t0 := time.Now()
		if err := r.req.Infer(ctx); err != nil {
			return nil, err
		}
		times = append(times, ms(time.Since(t0)))
	}
	return times, nil
}

// Close releases the request and the compiled model.
func (r *clRunner) Close() error {
	var err error
	if r.req != nil {
		err = r.req.Close()
		r.req = nil
	}
	if r.cm != nil {
		err = errors.Join(err, r.cm.Close())
		r.cm = nil
	}
	return err
}

// ortThreads is ONNX Runtime's intra-op thread count.
const ortThreads = 2

// ortRunner is ONNX Runtime as a peer process (bench.ORTPeer).
type ortRunner struct{ *bench.ORTPeer }

// startORT starts the peer on the model with m's shapes, values and
// states, and waits for its warm-up.
func startORT(ctx context.Context, path string, m benchModel) (*ortRunner, error) {
	root, err := conformance.RepoRoot()
	if err != nil {
		return nil, err
	}
	p, err := bench.StartORT(ctx, bench.ORTSpec{Root: root, Model: path, Inputs: m.Inputs, Values: m.Values, Stateful: m.Stateful, Threads: ortThreads})
	if err != nil {
		return nil, err
	}
	return &ortRunner{p}, nil
}

func (r *ortRunner) runFor(_ context.Context, d time.Duration) ([]float64, error) {
	return r.RunFor(d)
}

package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// CompiledModel is a model compiled for one device. Infer runs it in one
// call and is safe from many goroutines; CreateInferRequest and
// CreateAsyncInferRequest give requests of its own for finer control.
// Every method is safe for concurrent use; after Close the ones that
// return an error return one wrapping ErrClosed.
type CompiledModel struct {
	cm     driver.CompiledModel
	device string

	// slots holds a token for every request Infer uses, so at most
	// cap(slots) exist: OPTIMAL_NUMBER_OF_INFER_REQUESTS.
	slots chan struct{}

	mu     sync.Mutex
	idle   []driver.InferRequest // requests of Infer between calls
	closed bool
}

// newCompiledModel wraps a device's compiled model; Infer's pool gets as
// many requests as the model's OPTIMAL_NUMBER_OF_INFER_REQUESTS (at least
// one).
func newCompiledModel(cm driver.CompiledModel, device string) *CompiledModel {
	n := 1
	if v, err := cm.Property(KeyOptimalNumberOfInferRequests); err == nil {
		if k, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && k > 1 {
			n = k
		}
	}
	return &CompiledModel{cm: cm, device: device, slots: make(chan struct{}, n)}
}

// errClosed is the error of a method called after Close.
func (c *CompiledModel) errClosed(what string) error {
	return fmt.Errorf("plugin: compiled model on %s: %s after Close: %w", c.device, what, ErrClosed)
}

// check returns errClosed once the model is closed.
func (c *CompiledModel) check(what string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.errClosed(what)
	}
	return nil
}

// Inputs describes the model inputs, in order.
func (c *CompiledModel) Inputs() []PortInfo { return c.cm.Inputs() }

// Outputs describes the model outputs, in order.
func (c *CompiledModel) Outputs() []PortInfo { return c.cm.Outputs() }

// Property returns a property of the compiled model as a string: its
// effective configuration (the device's, overridden by the compile-time
// properties, with AUTO values resolved) and read-only facts
// (NETWORK_NAME, OPTIMAL_NUMBER_OF_INFER_REQUESTS, EXECUTION_DEVICES,
// LOADED_FROM_CACHE). An unknown key is an error wrapping ErrNotFound that
// lists the keys and suggests the closest.
func (c *CompiledModel) Property(key string) (string, error) {
	if err := c.check("property " + key); err != nil {
		return "", err
	}
	return c.cm.Property(key)
}

// Infer runs one inference on inputs, which must bind every model input by
// name, and returns every output by name. It is safe from many goroutines:
// each call takes a request from a pool of at most
// OPTIMAL_NUMBER_OF_INFER_REQUESTS requests (creating them as needed) and
// waits for a free one when all are busy. It honours ctx while it waits and
// while the device runs, and then returns an error wrapping ctx's.
//
// Inputs are never modified (a pooled request keeps a reference to them
// until its next call or Close). The outputs are new tensors of this call
// (the next call does not write into them). A missing or unknown input is an
// error wrapping ErrInvalidArgument or ErrNotFound that names it, as is a
// tensor whose element type or shape does not fit the input.
func (c *CompiledModel) Infer(ctx context.Context, inputs map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	if err := c.check("infer"); err != nil {
		return nil, err
	}
	ins := c.cm.Inputs()
	if err := checkInputs(ins, inputs); err != nil {
		return nil, err
	}
	r, err := c.acquire(ctx)
	if err != nil {
		return nil, err
	}
	out, err := c.run(ctx, r, ins, inputs)
	return out, c.release(r, err)
}

// checkInputs checks that inputs binds exactly the ports ins, each with a
// tensor that fits.
func checkInputs(ins []PortInfo, inputs map[string]*tensor.Tensor) error {
	names := make([]string, len(ins))
	for i, p := range ins {
		names[i] = p.Name
	}
	for _, p := range ins {
		if _, ok := inputs[p.Name]; !ok {
			return driver.Errorf(ErrInvalidArgument, "plugin: infer: input %q (%s%v) missing from the map (inputs: %s)", p.Name, p.Type, p.Shape, strings.Join(names, ", "))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		if _, err := driver.CheckTensor(ins, name, inputs[name]); err != nil {
			return fmt.Errorf("plugin: infer: %w", err)
		}
	}
	return nil
}

// acquire takes a slot (waiting for one while ctx allows) and an idle
// request or a new one.
func (c *CompiledModel) acquire(ctx context.Context) (driver.InferRequest, error) {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("plugin: infer on %s: waiting for a free request: %w", c.device, ctx.Err())
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.slots
		return nil, c.errClosed("infer")
	}
	if n := len(c.idle); n > 0 {
		r := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return r, nil
	}
	c.mu.Unlock()
	r, err := c.cm.CreateInferRequest()
	if err != nil {
		<-c.slots
		return nil, err
	}
	return r, nil
}

// run binds inputs, infers and collects the outputs.
func (c *CompiledModel) run(ctx context.Context, r driver.InferRequest, ins []PortInfo, inputs map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	for _, p := range ins {
		if err := r.SetTensor(p.Name, inputs[p.Name]); err != nil {
			return nil, err
		}
	}
	if err := r.Infer(ctx); err != nil {
		return nil, err
	}
	outs := c.cm.Outputs()
	res := make(map[string]*tensor.Tensor, len(outs))
	for _, p := range outs {
		t, err := r.Tensor(p.Name)
		if err != nil {
			return nil, err
		}
		res[p.Name] = t
	}
	return res, nil
}

// release returns r to the pool after a successful run; after a failed
// one, or once the model is closed, it closes r instead (a new request
// replaces it). It returns err joined with r's Close error.
func (c *CompiledModel) release(r driver.InferRequest, err error) error {
	c.mu.Lock()
	keep := err == nil && !c.closed
	if keep {
		c.idle = append(c.idle, r)
	}
	c.mu.Unlock()
	if !keep {
		err = errors.Join(err, r.Close())
	}
	<-c.slots
	return err
}

// CreateInferRequest returns a new synchronous request with its own
// tensors. Close it when done.
func (c *CompiledModel) CreateInferRequest() (*InferRequest, error) {
	if err := c.check("create infer request"); err != nil {
		return nil, err
	}
	r, err := c.cm.CreateInferRequest()
	if err != nil {
		return nil, err
	}
	return &InferRequest{request{r: r}}, nil
}

// CreateAsyncInferRequest returns a new asynchronous request: StartAsync
// returns at once and runs the inference's stages on the device's
// executors, so the stages of several requests overlap; Wait or a callback
// reports the result. Close it when done.
func (c *CompiledModel) CreateAsyncInferRequest() (*AsyncInferRequest, error) {
	if err := c.check("create async infer request"); err != nil {
		return nil, err
	}
	r, err := driver.CreateAsyncInferRequest(c.cm)
	if err != nil {
		return nil, err
	}
	return &AsyncInferRequest{request: request{r: r}, a: r}, nil
}

// BatchStats returns the counters of a model that gathers concurrent
// inferences into batches (compiled on BATCH, or on a device that batches
// implicitly with PERFORMANCE_HINT=THROUGHPUT): the batch size, how many
// batched inferences ran and how many inferences ran alone. The second
// result is false, with zero counters, for a model that does not batch.
func (c *CompiledModel) BatchStats() (BatchStats, bool) {
	b, ok := c.cm.(driver.Batcher)
	if !ok {
		return BatchStats{}, false
	}
	return b.BatchStats(), true
}

// Export writes the compiled model to w so that Core.ImportModel on the
// same device (and device architecture) rebuilds it without compiling. A
// device that cannot export is an error wrapping ErrNotImplemented.
func (c *CompiledModel) Export(w io.Writer) error {
	if err := c.check("export"); err != nil {
		return err
	}
	ex, ok := c.cm.(driver.Exporter)
	if !ok {
		return driver.Errorf(ErrNotImplemented, "plugin: device %s cannot export its compiled models", c.device)
	}
	return ex.Export(w)
}

// RuntimeModel returns the graph as the device executes it (after fusion),
// each node carrying RuntimeLayerType, RuntimeExecutionOrder,
// RuntimeImplType, RuntimeOriginalNames and, once a profiled request ran
// it, RuntimePerfCounter in its RT.Extra.
func (c *CompiledModel) RuntimeModel() (*graph.Model, error) {
	if err := c.check("runtime model"); err != nil {
		return nil, err
	}
	return c.cm.RuntimeModel()
}

// Close closes the requests Infer kept and releases the compiled model's
// device resources; close the requests made with CreateInferRequest and
// CreateAsyncInferRequest first. Later calls return nil.
func (c *CompiledModel) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	idle := c.idle
	c.idle = nil
	c.mu.Unlock()
	var errs []error
	for _, r := range idle {
		errs = append(errs, r.Close())
	}
	errs = append(errs, c.cm.Close())
	return errors.Join(errs...)
}

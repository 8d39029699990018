package batch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/virtual"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Interface checks.
var (
	_ driver.CompiledModel      = (*CompiledModel)(nil)
	_ driver.AsyncCompiledModel = (*CompiledModel)(nil)
	_ driver.Batcher            = (*CompiledModel)(nil)
)

// CompiledModel is a model compiled at batch N and as given (batch 1, or
// a dynamic batch) on one device; its requests' inferences of batch 1 are
// gathered into batches (see the package documentation). It is safe for
// concurrent use.
type CompiledModel struct {
	name      string
	device    string
	n         int
	timeout   time.Duration
	single    driver.CompiledModel // the model as given: lone requests
	batched   driver.CompiledModel // batch n; nil when n is 1
	inputs    []driver.PortInfo    // the model's (axis 0 may be dynamic)
	outputs   []driver.PortInfo
	outOne    []tensor.Shape // the outputs' shapes at batch 1
	props     *driver.Properties
	profiling bool

	// Batched requests ("workers"): at most cap(slots) exist; idle ones
	// wait in idle.
	slots chan struct{}
	idle  chan *worker

	// life is cancelled by Close: it ends batched inferences and waits of
	// inferences that Close overtook.
	life context.Context
	stop context.CancelFunc
	runs driver.RequestTracker // inferences in progress, for Close

	mu      sync.Mutex
	closed  bool
	open    *group    // the batch requests join, nil when none is open
	live    int       // requests created and not closed
	workers []*worker // every worker made, for Close

	batches, alone atomic.Int64

	async driver.AsyncSupport
}

// Stats are a BATCH compiled model's counters, like sql.DBStats.
type Stats struct {
	// Batches is the number of batched inferences run (each served
	// OPTIMAL_BATCH_SIZE requests).
	Batches int64
	// Alone is the number of inferences that ran on their own: after
	// AUTO_BATCH_TIMEOUT, or with fewer live requests than the batch size.
	Alone int64
	// Gathering is the number of inferences waiting in the open batch now.
	Gathering int
}

// Stats returns the model's counters.
func (c *CompiledModel) Stats() Stats {
	c.mu.Lock()
	gathering := 0
	if c.open != nil {
		gathering = len(c.open.members)
	}
	c.mu.Unlock()
	return Stats{Batches: c.batches.Load(), Alone: c.alone.Load(), Gathering: gathering}
}

// BatchStats returns Stats with the batch size, for
// plugin.CompiledModel.BatchStats.
func (c *CompiledModel) BatchStats() driver.BatchStats {
	st := c.Stats()
	return driver.BatchStats{Size: c.n, Batches: st.Batches, Alone: st.Alone, Gathering: st.Gathering}
}

// worker is one batched request of the device with its batch-N input
// tensors bound.
type worker struct {
	req driver.InferRequest
	in  []*tensor.Tensor
}

// group states.
const (
	groupOpen      = iota // requests may join
	groupFull             // n members: runs batched
	groupDissolved        // timed out (or can no longer fill): members run alone
)

// group is one batch being gathered.
type group struct {
	members  []*member
	deadline time.Time
	state    int
	gone     chan struct{} // closed when the group is dissolved
}

// member is one inference in a group: where its inputs are and where its
// outputs go, and how it ended. Only an inference of batch 1 joins a
// group; the others run alone.
type member struct {
	in, out []*tensor.Tensor
	one     bool          // every input has 1 on axis 0
	done    chan struct{} // closed once a batched run wrote out and set err
	err     error
	prof    []driver.ProfilingInfo
}

func newCompiledModel(name string, s *setup, single, batched driver.CompiledModel, outOne []tensor.Shape) (*CompiledModel, error) {
	c := &CompiledModel{name: name, device: s.device, n: s.n, single: single, batched: batched,
		inputs: single.Inputs(), outputs: single.Outputs(), outOne: outOne}
	ms, err := s.cfg.Get(KeyTimeout)
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	msec, err := strconv.Atoi(ms)
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "batch: %s=%q: %w", KeyTimeout, ms, err)
	}
	c.timeout = time.Duration(msec) * time.Millisecond
	workers := 1
	if batched != nil {
		workers = virtual.OptimalRequests(batched)
	}
	if batched == nil {
		c.n = 1
	}
	c.slots = make(chan struct{}, workers)
	c.idle = make(chan *worker, workers)
	c.life, c.stop = context.WithCancel(context.Background())
	execDevs, err := single.Property(driver.KeyExecutionDevices)
	if err != nil {
		execDevs = s.device
	}
	loaded, err := single.Property(driver.KeyLoadedFromCache)
	if err != nil {
		loaded = "NO"
	}
	c.props = s.cfg.Extend(
		driver.ReadOnlySpec(driver.KeyNetworkName, name),
		driver.ReadOnlySpec(KeyOptimalBatchSize, strconv.Itoa(c.n)),
		driver.ReadOnlySpec(driver.KeyOptimalNumberOfInferRequests, strconv.Itoa(c.n*workers)),
		driver.ReadOnlySpec(driver.KeyExecutionDevices, execDevs),
		driver.ReadOnlySpec(driver.KeyLoadedFromCache, loaded),
		// NUM_STREAMS reads as what the device resolved it to.
		driver.PropertySpec{Key: driver.KeyNumStreams, Mutable: true, Get: func() (string, error) { return single.Property(driver.KeyNumStreams) }},
	)
	conf, err := driver.ParseConfig(c.props)
	if err != nil {
		return nil, fmt.Errorf("batch: compile: %w", err)
	}
	c.profiling = conf.EnableProfiling
	// The "batch" stage of a request waits for its batch on the wait
	// executor: one stream per request that may be waiting, n for the
	// batch gathering and n for each running one.
	c.async.Init(nil, driver.PipelineConfig{Device: DeviceName, Streams: 2, WaitStreams: c.n * (workers + 1)},
		fmt.Sprintf("batch: compiled model %q", name))
	return c, nil
}

// Inputs describes the model inputs, as the model gives them (axis 0 is 1
// or dynamic).
func (c *CompiledModel) Inputs() []driver.PortInfo { return driver.ClonePorts(c.inputs) }

// Outputs describes the model outputs, as the model gives them.
func (c *CompiledModel) Outputs() []driver.PortInfo { return driver.ClonePorts(c.outputs) }

// Property returns the compiled model's configuration or a read-only fact:
// NETWORK_NAME, OPTIMAL_BATCH_SIZE, OPTIMAL_NUMBER_OF_INFER_REQUESTS,
// EXECUTION_DEVICES, LOADED_FROM_CACHE.
func (c *CompiledModel) Property(key string) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	v, err := c.props.Get(key)
	if err != nil {
		return "", fmt.Errorf("batch: %w", err)
	}
	return v, nil
}

// CreateInferRequest returns a new request with zero tensors bound to its
// inputs.
func (c *CompiledModel) CreateInferRequest() (driver.InferRequest, error) {
	return c.newRequest()
}

// CreateAsyncInferRequest implements driver.AsyncCompiledModel: the
// request's stages run on the model's executors, its wait for the batch on
// a wait executor with a stream per request that may be waiting.
func (c *CompiledModel) CreateAsyncInferRequest(opts ...driver.AsyncOption) (*driver.AsyncInferRequest, error) {
	r, err := c.newRequest()
	if err != nil {
		return nil, err
	}
	ar, err := c.async.NewRequest(r, opts...)
	if err != nil {
		return nil, errors.Join(err, r.Close())
	}
	return ar, nil
}

// RuntimeModel returns the device's runtime model of the batch-N model
// (batch 1 when the batch size is 1).
func (c *CompiledModel) RuntimeModel() (*graph.Model, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	cm := c.batched
	if cm == nil {
		cm = c.single
	}
	rm, err := cm.RuntimeModel()
	if err != nil {
		return nil, fmt.Errorf("batch: runtime model: %w", err)
	}
	return rm, nil
}

// Close waits for running requests, ends the batches still gathering
// (their requests fail with driver.ErrClosed), and closes the batched
// requests and both compiled models. It is idempotent.
func (c *CompiledModel) Close() error {
	aerr := c.async.Close()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return aerr
	}
	c.closed = true
	c.mu.Unlock()
	c.stop()
	c.runs.Close()
	var errs []error
	errs = append(errs, aerr)
	c.mu.Lock()
	workers := c.workers
	c.workers = nil
	c.mu.Unlock()
	for _, w := range workers {
		errs = append(errs, w.req.Close())
	}
	errs = append(errs, closeIf(c.batched), c.single.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("batch: close compiled model %q: %w", c.name, err)
	}
	return nil
}

func (c *CompiledModel) check() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.closedErr()
	}
	return nil
}

func (c *CompiledModel) closedErr() error {
	return fmt.Errorf("batch: compiled model %q: %w", c.name, driver.ErrClosed)
}

// submit runs m: in a batch when one can fill, alone otherwise (see the
// package documentation). It returns once m's outputs are written.
func (c *CompiledModel) submit(ctx context.Context, m *member, alone func(context.Context, *member) error) error {
	c.mu.Lock()
	if c.batched == nil || c.live < c.n || !m.one {
		c.mu.Unlock()
		c.alone.Add(1)
		return alone(ctx, m)
	}
	g := c.open
	if g == nil {
		g = &group{deadline: time.Now().Add(c.timeout), gone: make(chan struct{})}
		c.open = g
	}
	g.members = append(g.members, m)
	if len(g.members) == c.n {
		g.state = groupFull
		c.open = nil
		c.mu.Unlock()
		c.execute(g)
		return m.err
	}
	c.mu.Unlock()

	timer := time.NewTimer(time.Until(g.deadline))
	defer timer.Stop()
	select {
	case <-m.done:
		return m.err
	case <-g.gone:
	case <-timer.C:
	case <-ctx.Done():
		if c.withdraw(g, m) {
			return fmt.Errorf("batch: infer %q: %w", c.name, ctx.Err())
		}
		<-m.done // already running in a batch: its outputs are being written
		return errors.Join(fmt.Errorf("batch: infer %q: %w", c.name, ctx.Err()), m.err)
	case <-c.life.Done():
		if c.withdraw(g, m) {
			return c.closedErr()
		}
		<-m.done
		return m.err
	}
	c.mu.Lock()
	if g.state == groupOpen {
		c.dissolve(g)
	}
	full := g.state == groupFull
	c.mu.Unlock()
	if full {
		<-m.done
		return m.err
	}
	c.alone.Add(1)
	return alone(ctx, m)
}

// withdraw takes m out of g if g is still gathering and reports whether it
// did; otherwise g is running (or dissolved) and m is part of it.
func (c *CompiledModel) withdraw(g *group, m *member) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g.state == groupDissolved {
		return true // m was going to run alone; it will not
	}
	if g.state != groupOpen {
		return false
	}
	for i, x := range g.members {
		if x == m {
			g.members = append(g.members[:i], g.members[i+1:]...)
			break
		}
	}
	if len(g.members) == 0 && c.open == g {
		c.open = nil
	}
	return true
}

// dissolve ends a gathering group: its members run alone. c.mu is held.
func (c *CompiledModel) dissolve(g *group) {
	g.state = groupDissolved
	close(g.gone)
	if c.open == g {
		c.open = nil
	}
}

// requestCreated and requestClosed count the live requests; a batch can
// fill only while there are at least n of them, so when the count drops
// below n the gathering batch is dissolved at once instead of timing out.
func (c *CompiledModel) requestCreated() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.closedErr()
	}
	c.live++
	return nil
}

func (c *CompiledModel) requestClosed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live--
	if c.live < c.n && c.open != nil {
		c.dissolve(c.open)
	}
}

// execute runs a full group as one batched inference and hands every
// member its slice of the outputs.
func (c *CompiledModel) execute(g *group) {
	c.batches.Add(1)
	prof, err := c.runBatch(g)
	for _, m := range g.members {
		m.err, m.prof = err, prof
		close(m.done)
	}
}

func (c *CompiledModel) runBatch(g *group) ([]driver.ProfilingInfo, error) {
	w, err := c.acquire()
	if err != nil {
		return nil, err
	}
	defer func() { c.idle <- w }()
	for i, m := range g.members {
		for j, in := range c.inputs {
			dst, err := sample(w.in[j], i)
			if err == nil {
				err = dst.CopyFrom(m.in[j])
			}
			if err != nil {
				return nil, driver.Errorf(driver.ErrInvalidArgument, "batch: infer %q: input %q of request %d in the batch: %w", c.name, in.Name, i, err)
			}
		}
	}
	if err := w.req.Infer(c.life); err != nil {
		if c.life.Err() != nil {
			return nil, errors.Join(c.closedErr(), err)
		}
		return nil, fmt.Errorf("batch: infer %q: batch of %d on %s: %w", c.name, c.n, c.device, err)
	}
	for j, out := range c.outputs {
		t, err := w.req.Tensor(out.Name)
		if err != nil {
			return nil, fmt.Errorf("batch: infer %q: batched output %q: %w", c.name, out.Name, err)
		}
		for i, m := range g.members {
			src, err := sample(t, i)
			if err == nil {
				err = m.out[j].CopyFrom(src)
			}
			if err != nil {
				return nil, driver.Errorf(driver.ErrInvalidArgument, "batch: infer %q: output %q of request %d in the batch: %w", c.name, out.Name, i, err)
			}
		}
	}
	var prof []driver.ProfilingInfo
	if c.profiling {
		prof = w.req.ProfilingInfo()
	}
	return prof, nil
}

// sample is sample i (axis 0) of a batched tensor, as a view.
func sample(t *tensor.Tensor, i int) (*tensor.Tensor, error) {
	s := t.Shape()
	begin, end := make([]int64, len(s)), s.Clone()
	begin[0], end[0] = int64(i), int64(i+1)
	return t.View(begin, end)
}

// acquire returns an idle batched request, making one while fewer than
// the device's optimal number exist, and waiting for one otherwise; Close
// ends the wait with driver.ErrClosed.
func (c *CompiledModel) acquire() (*worker, error) {
	select {
	case w := <-c.idle:
		return w, nil
	default:
	}
	select {
	case w := <-c.idle:
		return w, nil
	case c.slots <- struct{}{}:
		w, err := c.newWorker()
		if err != nil {
			<-c.slots
			return nil, err
		}
		return w, nil
	case <-c.life.Done():
		return nil, c.closedErr()
	}
}

// newWorker makes a batched request with batch-N input tensors bound.
func (c *CompiledModel) newWorker() (_ *worker, err error) {
	r, err := c.batched.CreateInferRequest()
	if err != nil {
		return nil, fmt.Errorf("batch: batched request of %q on %s: %w", c.name, c.device, err)
	}
	w := &worker{req: r}
	for _, in := range c.batched.Inputs() {
		s, _ := in.Shape.ToShape() // static, n on axis 0: batchModels checked
		t, err := tensor.New(in.Type, s)
		if err == nil {
			err = r.SetTensor(in.Name, t)
		}
		if err != nil {
			return nil, errors.Join(driver.Errorf(driver.ErrInvalidArgument, "batch: batched input %q of %q: %w", in.Name, c.name, err), r.Close())
		}
		w.in = append(w.in, t)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.Join(c.closedErr(), r.Close())
	}
	c.workers = append(c.workers, w)
	return w, nil
}

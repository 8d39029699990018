package hetero

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Interface checks.
var (
	_ driver.CompiledModel      = (*CompiledModel)(nil)
	_ driver.AsyncCompiledModel = (*CompiledModel)(nil)
)

// CompiledModel is a model split into subgraphs, each compiled on its
// device. Its requests run the subgraphs' requests one after another. It
// is safe for concurrent use.
type CompiledModel struct {
	model     *graph.Model // the affinity graph: the user's model, every node with its device
	subs      []*subgraph
	compiled  []driver.CompiledModel // per subgraph
	core      driver.ModelCore       // ports, properties, closed
	profiling bool
	producer  []int // per model output: the subgraph computing it

	async driver.AsyncSupport // executors and running asynchronous requests
	// running is read-locked by every synchronous Infer and locked by
	// Close: HETERO runs its subgraphs' stages itself, so the devices'
	// compiled models cannot see those inferences, and closing one under
	// them would release what they use (a GPU subgraph's events).
	running sync.RWMutex

	// dynamic is set when an input has a dynamic shape: fitInputs then
	// checks the inputs, with its verdicts in fits.
	dynamic bool
	fits    driver.Verdicts
}

// fitInputs checks that the whole model takes inputs of these shapes
// before any subgraph runs, so that shapes it cannot take are the user's
// inputs' fault, in the words every device uses (graph.InputShapeError),
// even where a later subgraph is where they stop fitting (a subgraph sees
// only its own inputs).
func (c *CompiledModel) fitInputs(inputs []*tensor.Tensor) error {
	if !c.dynamic {
		return nil
	}
	shapes := make([]tensor.Shape, len(inputs))
	parts := make([]string, len(inputs))
	for i, t := range inputs {
		if t.Kind() != tensor.KindTensor {
			return nil // a sequence's tensors have their own shapes: the devices check them
		}
		shapes[i] = t.Shape()
		parts[i] = shapes[i].String()
	}
	key := strings.Join(parts, ";")
	return c.fits.Check(key, func() error {
		if _, err := c.model.FitInputs(shapes, nil); err != nil {
			return driver.Errorf(driver.ErrInvalidArgument, "hetero: infer %q: %w", c.model.Name, err)
		}
		return nil
	})
}

// init fills in the ports, properties and asynchronous machinery once the
// subgraphs are compiled.
func (c *CompiledModel) init(name string, cfg *driver.Properties) error {
	c.producer = make([]int, len(c.model.Results))
	for k, sg := range c.subs {
		for _, o := range sg.outputs {
			c.producer[o.index] = k
		}
	}
	props := cfg.Extend(
		driver.ReadOnlySpec(driver.KeyNetworkName, name),
		driver.ReadOnlySpec(KeyNumberOfSubmodels, strconv.Itoa(len(c.subs))),
		driver.ReadOnlySpec(driver.KeyExecutionDevices, executionDevices(c.subs)),
		driver.ReadOnlySpec(driver.KeyOptimalNumberOfInferRequests, strconv.Itoa(optimalRequests(c.compiled))),
		driver.ReadOnlySpec(driver.KeyLoadedFromCache, "NO"),
	)
	c.core.Init("hetero", c.model, props)
	for _, in := range c.core.Inputs() {
		if !in.Shape.IsStatic() {
			c.dynamic = true
		}
	}
	conf, err := driver.ParseConfig(props)
	if err != nil {
		return fmt.Errorf("hetero: compile: %w", err)
	}
	c.profiling = conf.EnableProfiling
	procs := runtime.GOMAXPROCS(0)
	plan := driver.PlanStreams(conf, driver.DeviceFacts{Cores: procs, MaxStreams: maxStreams, RequestsPerStream: 1})
	c.core.Resolve(driver.KeyNumStreams, strconv.Itoa(plan.Streams))
	// Executors of its own (nil manager): the compiled model may outlive
	// the plugin, and the GPU subgraphs' wait stages get a wait executor.
	c.async.Init(nil, driver.PipelineConfig{Device: DeviceName, Streams: plan.Streams, WaitStreams: plan.Streams},
		fmt.Sprintf("hetero: compiled model %q", name))
	return nil
}

// Inputs describes the model inputs.
func (c *CompiledModel) Inputs() []driver.PortInfo { return c.core.Inputs() }

// Outputs describes the model outputs.
func (c *CompiledModel) Outputs() []driver.PortInfo { return c.core.Outputs() }

// Property returns the compiled model's configuration or a read-only fact:
// NETWORK_NAME, NUMBER_OF_SUBMODELS, EXECUTION_DEVICES (each device once,
// in subgraph order), OPTIMAL_NUMBER_OF_INFER_REQUESTS.
func (c *CompiledModel) Property(key string) (string, error) { return c.core.Property(key) }

// Submodels returns the subgraphs' devices and compiled models in the
// order requests run them. The compiled models belong to c: do not close
// them.
func (c *CompiledModel) Submodels() (devices []string, models []driver.CompiledModel) {
	if c.check() != nil {
		return nil, nil
	}
	for i, sg := range c.subs {
		devices = append(devices, sg.device)
		models = append(models, c.compiled[i])
	}
	return devices, models
}

// CreateInferRequest returns a new request: one request per subgraph,
// chained. Inputs with static shapes start bound to zero tensors.
func (c *CompiledModel) CreateInferRequest() (driver.InferRequest, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return newInferRequest(c)
}

// CreateAsyncInferRequest implements driver.AsyncCompiledModel: every
// stage of every subgraph's request becomes a stage of the chain, on the
// executor kind the device asked for, so the stages of several requests
// overlap across devices.
func (c *CompiledModel) CreateAsyncInferRequest(opts ...driver.AsyncOption) (*driver.AsyncInferRequest, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	r, err := newInferRequest(c)
	if err != nil {
		return nil, err
	}
	ar, err := c.async.NewRequest(r, opts...)
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	return ar, nil
}

// RuntimeModel returns the affinity graph (the user's nodes, each with
// RT.Affinity) where every node also carries RT.Extra HETERO_SUBGRAPH and
// what its subgraph's runtime model says about it (LAYER_TYPE,
// IMPL_TYPE, EXECUTION_ORDER, PERF_COUNTER, ...), matched through the
// original names the devices record.
func (c *CompiledModel) RuntimeModel() (*graph.Model, error) {
	rm, nodes, err := c.core.RuntimeGraph(c.model)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*graph.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	for k, sub := range c.compiled {
		sm, err := sub.RuntimeModel()
		if errors.Is(err, driver.ErrNotImplemented) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("hetero: runtime model of %s on %s: %w", c.subs[k].name, c.subs[k].device, err)
		}
		snodes, err := sm.Nodes()
		if err != nil {
			return nil, fmt.Errorf("hetero: runtime model of %s: %w", c.subs[k].name, err)
		}
		for _, sn := range snodes {
			for _, orig := range sn.OriginalNames() {
				n, ok := byName[orig]
				if !ok || n.RT.Affinity != c.subs[k].device {
					continue
				}
				if n.RT.Extra == nil {
					n.RT.Extra = map[string]string{}
				}
				for key, v := range sn.RT.Extra {
					n.RT.Extra[key] = v
				}
				n.RT.Extra["HETERO_SUBGRAPH"] = c.subs[k].name
			}
		}
	}
	return rm, nil
}

// Close waits for running inferences, asynchronous and synchronous, and
// closes the subgraphs' compiled models. It is idempotent.
func (c *CompiledModel) Close() error {
	// Running asynchronous requests finish first (their stages check that
	// the model is open); AsyncSupport.Close is idempotent. Then the
	// synchronous ones (running).
	aerr := c.async.Close()
	c.running.Lock()
	defer c.running.Unlock()
	if !c.core.MarkClosed() {
		return nil
	}
	return errors.Join(aerr, c.closeSubs())
}

// closeSubs closes the subgraphs' compiled models.
func (c *CompiledModel) closeSubs() error {
	var errs []error
	for i, s := range c.compiled {
		if err := s.Close(); err != nil {
			errs = append(errs, fmt.Errorf("hetero: closing %s on %s: %w", c.subs[i].name, c.subs[i].device, err))
		}
	}
	return errors.Join(errs...)
}

func (c *CompiledModel) check() error { return c.core.Check() }

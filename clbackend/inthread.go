package clbackend

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// The in-thread companion.
//
// POCL's pthread driver hands every command to its worker threads by a
// condition-variable broadcast with no spin phase: 16-22 us per launch on
// a 2-core box, more than a wake-word head's whole kernel time (heads at
// 1.8x ONNX Runtime, Silero at 2x). POCL's basic driver runs commands in
// the thread that flushes or waits for them, on one core, with no
// hand-off. The cl package lists it for POCL's set-up and keeps it out of
// the devices (cl.EnvPOCLDevices); a pthread device keeps it as its
// in-thread companion: the device's own context holds both OpenCL devices,
// so every buffer (weights, activations, remote tensors) is valid on both,
// and each compiled model runs its plan on the one that suits it
// (settleInThread): small plans in the calling thread, as ONNX Runtime runs
// small work, the rest on the worker threads. The companion shares the
// device's name: it is no clinfer device of its own.

// KeyInThread is GPU_IN_THREAD: which OpenCL device of a POCL pthread
// device runs a compiled model's plan. AUTO (the default) runs it on the
// in-thread companion (POCL's basic device, one core, in the calling
// thread) where the plan's estimated work is small enough for the
// per-launch hand-off it saves to outweigh the cores it gives up
// (inThreadPays), and on the pthread device otherwise; YES runs every
// plan in the thread; NO none. Two defects of POCL 3.1's work-group-
// function cache are worked around: its basic driver aborts the process
// (pocl_release_dlhandle_cache: `found->ref_count > 0') when two threads
// launch one kernel on it at once, so every enqueue on a basic device's
// queue holds one process-wide lock (cl.CommandQueue, serial.go: in-thread
// launches of several threads take turns, one core between them, each
// launch a few microseconds for the small plans AUTO picks); and it keeps
// 128 work-group functions loaded, never the pthread driver's, so in a
// process with many compiled models the basic device reloads its functions
// at every launch: the kernel binaries of an in-thread plan's first run are
// pinned in memory (cl.PinKernelBinaries), which leaves each reload POCL's
// bookkeeping (no file is opened). A device without a companion (any
// other OpenCL device, a user's context, POCL_DEVICES set without basic)
// runs on its own device whatever the value. GPU_OPENCL_DEVICE says which
// one a compiled model runs on.
const KeyInThread = "GPU_IN_THREAD"

// KeyOpenCLDevice is GPU_OPENCL_DEVICE, a compiled model's read-only
// property (and an rt-info entry of each node of its runtime model): the
// CL_DEVICE_NAME of the OpenCL device its plans run on
// ("basic-skylake-avx512-..." for the in-thread companion).
const KeyOpenCLDevice = "GPU_OPENCL_DEVICE"

// GPU_IN_THREAD's values.
const (
	inThreadAuto = "AUTO"
	inThreadYes  = "YES"
	inThreadNo   = "NO"
)

// inThreadSpec is GPU_IN_THREAD.
func inThreadSpec() driver.PropertySpec {
	return driver.EnumSpec(KeyInThread, inThreadAuto, inThreadAuto, inThreadYes, inThreadNo)
}

// inThreadCompanion returns the facts of d's in-thread companion, or nil
// where it has none (or the companion is unusable).
func inThreadCompanion(d *device) *device {
	c := d.cl.InThreadCompanion()
	if c == nil || unusable(c) != "" {
		return nil
	}
	comp, err := newDevice(d.index, c)
	if err != nil {
		return nil
	}
	return comp
}

// createContext creates the device's own OpenCL context: with the
// in-thread companion where it has one, else (or where the driver refuses
// the pair) with the device alone. The device is first in the context's
// device list (OCL_CONTEXT_DEVICE_ID 0).
func (d *device) createContext() (*cl.Context, *device, error) {
	if d.inThread != nil {
		if c, err := cl.CreateContext([]*cl.Device{d.cl, d.inThread.cl}); err == nil {
			return c, d.inThread, nil
		}
	}
	c, err := cl.CreateContext([]*cl.Device{d.cl})
	return c, nil, err
}

// The cost model of inThreadPays, measured on POCL 3.1
// (pthread-skylake-avx512, 2600 MHz, 2 cores, load 2-4): the pthread
// driver's hand-off of one command (16-22 us), and the multiply-adds one
// core does per microsecond in the calling thread on small models'
// kernels, launches included (PP-OCR cls: 17.3 M in 0.81-0.88 ms; a
// wake-word head: 0.23 M in 7.6-7.8 us): 20000, or 0.48 per vector lane
// and clock cycle (16 float lanes at 2600 MHz). smallMACsPerUS scales
// that by the device's clock and preferred vector width (an AVX2 core of
// the same clock does half), which CL_DEVICE_MAX_CLOCK_FREQUENCY and
// CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT give. The hand-off is the
// operating system's wake-up of POCL's worker threads (a condition
// variable broadcast), which no device property describes and which
// grows with the machine's load; timing it when the device is set up
// would make the decision, and so the plan, depend on that moment's load
// (the same model planned differently from one process to the next): it
// stays the figure measured here.
const (
	handOffUS = 16
	// macsPerLaneCycle is 20000 MACs per microsecond over 16 lanes at
	// 2600 MHz.
	macsPerLaneCycle = 20000.0 / (16 * 2600)
	// defaultMACsPerUS is the rate of a device whose clock or vector
	// width is unknown: the one measured.
	defaultMACsPerUS = 20000
)

// smallMACsPerUS is the multiply-adds per microsecond one core of a
// device of clockMHz and vectorWidth float lanes does on small models'
// kernels (macsPerLaneCycle each lane and cycle).
func smallMACsPerUS(clockMHz, vectorWidth int) float64 {
	if clockMHz <= 0 || vectorWidth <= 0 {
		return defaultMACsPerUS
	}
	return macsPerLaneCycle * float64(clockMHz) * float64(vectorWidth)
}

// macsPerUS is smallMACsPerUS of d.
func macsPerUS(d *device) float64 {
	clock, err := d.cl.MaxClockFrequency()
	if err != nil {
		clock = 0
	}
	return smallMACsPerUS(clock, profileOf(d).vectorWidth)
}

// inThreadPays reports whether a plan of launches kernels and macs
// multiply-adds is faster in the calling thread on one core (rate
// multiply-adds per microsecond) than on a device of units compute units
// that costs handOffUS per launch: the time given up, macs on one core
// instead of units, against the hand-offs saved.
func inThreadPays(macs int64, launches, units int, rate float64) bool {
	if units <= 1 {
		return true // no parallelism to give up
	}
	lost := float64(macs) / rate * (1 - 1/float64(units))
	return lost < float64(launches*handOffUS)
}

// work estimates the multiply-adds of the plan's launches: nodeWork of
// each node that launches, once, where its shapes are static; otherwise
// (a node of a body, whose shapes only the plan knows) the launch's work
// items plus, for each weight it binds (a host constant of rank 2 or
// more), the weight's elements per output channel times the elements of
// the largest activation it binds.
func (pl *plan) work() int64 {
	var macs int64
	seen := map[*graph.Node]bool{}
	for _, l := range pl.launches {
		if l.node != nil {
			if seen[l.node] {
				continue
			}
			seen[l.node] = true
			if w, static := nodeWork(l.node); static {
				macs += w
				continue
			}
		}
		macs += l.n
		var weights []*value
		var act *value
		for _, a := range l.args {
			i, ok := a.(slotArg)
			if !ok || int(i) < 0 || int(i) >= len(pl.values) {
				continue
			}
			v := &pl.values[i]
			switch {
			case v.host != nil && len(v.shape) >= 2:
				weights = append(weights, v)
			case v.host == nil && (act == nil || v.shape.NumElements() > act.shape.NumElements()):
				act = v
			}
		}
		if act == nil {
			continue
		}
		out := act.shape.NumElements()
		for _, w := range weights {
			macs += w.shape.NumElements() * out / channelsOf(w.shape, act.shape)
		}
	}
	return macs
}

// graphWork estimates a shape-inferred model's plan before it is planned:
// its launches (one per node that is not a Parameter, Constant or
// Result, each node of an If's branches or a Loop's body counted once)
// and its multiply-adds (each node's output elements plus, for each
// constant weight it reads, the weight's elements per output channel
// times its output elements: channelsOf), or ok false where a shape is
// not static (a body's nodes often are not: settleInThread then decides
// from the plan).
func graphWork(m *graph.Model) (macs int64, launches int, ok bool) {
	nodes, err := m.Nodes()
	if err != nil {
		return 0, 0, false
	}
	ok = true
	add := func(n *graph.Node) bool {
		work, static := nodeWork(n)
		if !static {
			ok = false
			return false
		}
		launches++
		macs += work
		return true
	}
	for _, n := range nodes {
		switch n.OpType {
		case graph.OpParameter, graph.OpConstant, graph.OpResult:
			continue
		}
		if !add(n) {
			return 0, 0, false
		}
		if n.BodiesAll(add); !ok {
			return 0, 0, false
		}
	}
	return macs, launches, true
}

// nodeWork is graphWork's estimate of one node, or static false where an
// output's shape is not static.
func nodeWork(n *graph.Node) (work int64, static bool) {
	var outShape tensor.Shape
	for _, p := range n.Outputs {
		s, ok := p.Shape.ToShape()
		if !ok {
			return 0, false
		}
		work += s.NumElements()
		if outShape == nil {
			outShape = s
		}
	}
	out := outShape.NumElements()
	for i := range n.Inputs {
		if w, isConst := n.ConstInput(i); isConst && len(w.Shape()) >= 2 {
			work += w.Shape().NumElements() * out / channelsOf(w.Shape(), outShape)
		}
	}
	return work, true
}

// decideInThread is GPU_IN_THREAD=AUTO's decision before planning, from
// graphWork: it makes the in-thread companion run the model where that
// pays, and reports whether it could decide (all shapes static).
func (c *CompiledModel) decideInThread(mode string, m *graph.Model) bool {
	if mode != inThreadAuto {
		return true
	}
	macs, launches, ok := graphWork(m)
	if !ok {
		return false
	}
	if inThreadPays(macs, launches, computeUnits(c.dev), macsPerUS(c.dev)) {
		c.runOn(c.ctx.inThread)
	}
	return true
}

// computeUnits is d's CL_DEVICE_MAX_COMPUTE_UNITS (1 when unknown).
func computeUnits(d *device) int {
	if n, err := d.cl.MaxComputeUnits(); err == nil && n > 0 {
		return n
	}
	return 1
}

// channelsOf is the dimension of weight w that indexes the output's
// channels: the largest of w's dims that out also has (a Conv's output
// channels, a MatMul's columns), else w's first.
func channelsOf(w, out []int64) int64 {
	best := int64(0)
	for _, d := range w {
		if d > best && d > 0 && slices.Contains(out, d) {
			best = d
		}
	}
	if best == 0 {
		best = max(w[0], 1)
	}
	return best
}

// plansWork is the work of the compiled model's static plan: its launches
// and multiply-adds, the largest of the plans of its host conditions'
// outcomes where it has them (the plan an inference runs).
func (c *CompiledModel) plansWork() (macs int64, launches int) {
	plans := []*plan{c.static}
	if c.conds != nil {
		plans = c.conds.plans
	}
	for _, pl := range plans {
		if pl == nil {
			continue
		}
		macs = max(macs, pl.work())
		launches = max(launches, len(pl.launches))
	}
	return macs, launches
}

// inThreadMode is GPU_IN_THREAD in cfg where cc holds an in-thread
// companion, "" where it does not.
func inThreadMode(cc *clContext, cfg *driver.Properties) string {
	if cc.inThread == nil {
		return ""
	}
	mode, err := cfg.Get(KeyInThread)
	if err != nil {
		return inThreadAuto // the spec's default
	}
	return mode
}

// settleInThread decides, under GPU_IN_THREAD=AUTO, where the static plan
// of a model graphWork could not estimate (shapes inside bodies) runs,
// once it is built for the device: when inThreadPays for its work it is
// planned again for the in-thread companion (the same plan: planning
// reads the device's facts; its programs built for the companion). Only
// such small plans pay, so only their compiles plan twice. A plan restored
// from a model cache's record keeps the device the record was made for.
func (c *CompiledModel) settleInThread(ctx context.Context, p *Plugin, settled bool, mode, key string, shapes []tensor.Shape) error {
	if settled || mode != inThreadAuto || c.run != c.dev || c.static == nil || planRecordOf(ctx) != nil {
		return nil
	}
	macs, launches := c.plansWork()
	if !inThreadPays(macs, launches, computeUnits(c.dev), macsPerUS(c.dev)) {
		return nil
	}
	var errs []error
	for _, pl := range c.plans {
		errs = append(errs, pl.release(c.ctx))
	}
	errs = append(errs, c.conds.release(c.ctx))
	c.plans, c.static, c.conds = map[string]*plan{}, nil, nil
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.runOn(c.ctx.inThread)
	pl, err := c.buildPlan(ctx, p, key, shapes, nil)
	if err != nil {
		return err
	}
	c.static = pl
	c.plans[key] = pl
	return c.planConds(ctx, p)
}

// runOn makes d run the model's plans: the features its requests use
// (command buffers, shared host memory) are those d has too.
func (c *CompiledModel) runOn(d *device) {
	c.run = d
	c.commandBuffers = c.commandBuffers && d.cmdbufs
	c.sharedIO = c.sharedIO && d.sharedIO
}

// openCLName is the CL_DEVICE_NAME of d ("pthread-skylake-avx512-...").
func openCLName(d *device) string { return strings.TrimSpace(d.fullName) }

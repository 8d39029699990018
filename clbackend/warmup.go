package clbackend

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// warmUp runs the plan compile built (the static input shapes, or the
// probe shapes of a model with dynamic input dims) once on zero inputs and
// throws the results away. Drivers do part of their work at a kernel's
// first launch rather than when the program is built: POCL compiles every
// kernel again for its work-group size, other drivers finish their JIT or
// allocate on first use. Doing that here puts the cost in CompileModel,
// which users expect to be slow, instead of in the user's first inference
// (PP-OCR det 640 on POCL: 7 s of a 7.1 s first inference). Each distinct
// launch (warmedUp) is made once: what the driver prepares depends on the
// kernel and its work-group size, not on how often it runs, and a
// large-image network repeats a few kernels over dozens of layers (IS-Net
// medium: 119 convolutions, a full inference as long as the rest of the
// compile). A launch with a work-group size runs one work group: the
// driver prepares a kernel per work-group size (POCL: per local size, zero
// global offset and a grid under 2^32 items, which one group shares with
// the full grid), not per grid, and the full grid of a 1024x1024 layer
// would cost the warm-up a real inference's time (IS-Net medium on POCL:
// seconds, in every compile and every import from the model cache); a
// launch whose group the driver picks keeps its grid, from which the
// driver picks it. The skipped launches and the groups not run leave
// outputs unwritten; kernels that read indices clamp them (index.clh), so
// whatever the later launches find there is safe to read. A plan that reads sizes back (data-sized
// nodes) or runs a program (control flow) launches everything, since what
// it reads back decides what runs next. A model with
// host-known inputs has no plan before its first inference and is not
// warmed up. The warm-up's timings are kept out of the runtime model's
// PERF_COUNTER. A done ctx stops it with ctx's error.
func (c *CompiledModel) warmUp(ctx context.Context) error {
	var shapes []tensor.Shape
	switch {
	case c.static != nil:
		// The planned shapes themselves (a 0 dimension stays 0).
		for _, in := range c.core.Inputs() {
			s, _ := in.Shape.ToShape()
			shapes = append(shapes, s)
		}
	case len(c.plans) == 1:
		shapes = probeShapes(c.core.Inputs())
	default:
		return nil
	}
	r, err := newInferRequest(c)
	if err != nil {
		return err
	}
	r.warmUp = true
	for i, s := range shapes {
		t, err := tensor.New(c.core.Input(i).Type, s)
		if err != nil {
			_ = r.Close()
			return driver.Errorf(driver.ErrInvalidArgument, "gpu: warm-up input %q: %w", c.core.Input(i).Name, err)
		}
		r.core.IO.In[i] = t
	}
	err = r.Infer(ctx)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("gpu: warm-up run of %q on %s: %w", c.model.Name, c.dev.name(), err)
	}
	return nil
}

// warmUpGlobal is the NDRange the warm-up launches l with: one work group
// where l has a work-group size, l's own grid where the driver picks the
// group. Along a dimension of largeGrid items or more it launches
// largeGrid rounded up to the group: POCL compiles one work-group
// function for grids under that width in every dimension and another for
// wider ones, so one group of a 1024x1024 element-wise launch (1048576
// items in one dimension) prepared the function the inference does not
// use, and the first inference compiled its own.
func warmUpGlobal(l launch) []int {
	if l.local == nil {
		return l.global
	}
	g := make([]int, len(l.global))
	for i := range g {
		g[i] = min(l.global[i], l.local[i])
		if l.global[i] >= largeGrid {
			g[i] = min(l.global[i], (largeGrid+l.local[i]-1)/l.local[i]*l.local[i])
		}
	}
	return g
}

// largeGrid is the grid width from which POCL's CPU devices run a kernel
// through its generic work-group function rather than the one
// specialized for small grids (grid_width_specialization_limit,
// USHRT_MAX, since POCL 1.6; this machine has 3.1).
const largeGrid = 65535

// warmUpWindow is the launch window (see launchWindow) of the warm-up
// run: the driver's first-launch work happens as the queue runs (on POCL
// it is most of the time), so with a cancellable ctx (AUTO compiling in
// the background) the warm-up keeps one kernel queued ahead, and a Close
// stops it after the kernel in progress.
const warmUpWindow = 2

// window is the request's launch window.
func (r *InferRequest) window() int {
	if r.warmUp {
		return warmUpWindow
	}
	return launchWindow
}

// warmedUp reports whether the warm-up made a launch like l already, and
// records l: the same kernel of the same program with the same work group
// and a grid of the same kind, narrower than largeGrid in every dimension
// or not (POCL builds a work-group function for each: a kernel warmed up
// on a 128x128 map alone built its wide grids' function in the first
// inference, at 1024x1024), and, where the driver picks the group, the
// same global size, from which it picks it.
func (r *InferRequest) warmedUp(l launch) bool {
	key := fmt.Sprintf("%p %s %v wide %t", l.prog, l.kernel.Entry, l.local, slices.ContainsFunc(l.global, func(g int) bool { return g >= largeGrid }))
	if l.local == nil {
		key += fmt.Sprint(l.global)
	}
	if r.warmed[key] {
		return true
	}
	if r.warmed == nil {
		r.warmed = map[string]bool{}
	}
	r.warmed[key] = true
	return false
}

// binPinner pins the kernel binaries of a plan's first run in the thread
// (InferRequest.pinning).
type binPinner struct{ pl *plan }

// pinning returns what pins, after each launch of the first run of pl on
// the in-thread companion (warm-up or, for a plan the warm-up does not
// run, the first inference), the kernel binaries POCL has loaded for good
// (cl.PinKernelBinaries); elsewhere it pins nothing. POCL's basic driver
// runs a launch inside its enqueue, so its binary is loaded right after.
// POCL 3.1 keeps at most 128 work-group functions loaded per process and
// evicts only the basic device's (the pthread driver's are never
// released), so in a process whose compiled models hold more it would
// evict and reload from the file an in-thread model's functions at every
// launch; with their binaries pinned a reload finds them in memory.
func (r *InferRequest) pinning(pl *plan) binPinner {
	if r.c.run == r.c.dev || atomic.LoadUint32(&pl.pinned) == 1 {
		return binPinner{}
	}
	return binPinner{pl}
}

// launched pins the binaries loaded so far.
func (b binPinner) launched() {
	if b.pl != nil {
		cl.PinKernelBinaries()
	}
}

// done records that the plan's launches all ran (all: the run reached the
// plan's end), so that later runs pin nothing.
func (b binPinner) done(all bool) {
	if b.pl != nil && all {
		atomic.StoreUint32(&b.pl.pinned, 1)
	}
}

package clbackend

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"time"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/clbackend/tune"
	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
)

// The tuner: for one choice of a plan it emits each candidate variant
// tentatively, runs its launches on the device with the node's real
// shapes (seeded inputs, the real weights), checks the outputs against
// the CPU reference, times the candidates that pass (warm-up runs, then
// the median of timed runs from the events' profiling) and rolls the
// emission back.

// TuneProgress is what a tuning compile reports after each node of a plan.
type TuneProgress struct {
	// Done and Total count the plan's nodes.
	Done, Total int
	// Node is the node just planned; Tuned is set when tuning timed
	// candidates for it.
	Node  string
	Tuned bool
}

type progressKey struct{}

// WithTuneProgress returns a context under which plans call fn after each
// node (cmd/tune draws its progress bar with it). fn runs on the compiling
// goroutine.
func WithTuneProgress(ctx context.Context, fn func(TuneProgress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

func progressOf(ctx context.Context) func(TuneProgress) {
	fn, _ := ctx.Value(progressKey{}).(func(TuneProgress))
	return fn
}

// TunedOp is the kernel variant choice of one node of a plan.
type TunedOp struct {
	// Node and Op name the node.
	Node, Op string
	// Key is the tuning cache key: the family and the shapes and options
	// the choice depends on.
	Key string
	// Variant is the variant that runs; Heuristic is what the heuristics
	// pick.
	Variant, Heuristic string
	// Source says where Variant came from: "heuristic", "recorded" (the
	// tuning cache), "tuned" (timed in this compile) or "forced"
	// (GPU_KERNEL_VARIANTS).
	Source string
	// Ms and HeuristicMs are the median times tuning measured for Variant
	// and Heuristic (0 when not measured).
	Ms, HeuristicMs float64
	// Tried counts the candidates timed, Refused those the device could not
	// build or launch or that differed from the reference.
	Tried, Refused int
}

// KernelChoices returns the kernel variant choices of the plan the last
// inference used (the plan of the declared shapes when they are static),
// in plan order.
func (c *CompiledModel) KernelChoices() []TunedOp {
	pl := c.static
	if pl == nil {
		c.planMu.Lock()
		pl = c.latest
		c.planMu.Unlock()
	}
	if pl == nil {
		return nil
	}
	return append([]TunedOp(nil), pl.choices...)
}

func (ch variantChoice) report() TunedOp {
	return TunedOp{Node: ch.node, Op: ch.op, Key: ch.key, Variant: ch.chosen.String(), Heuristic: ch.heur.String(), Source: ch.source,
		Ms: ch.ms, HeuristicMs: ch.heuristicMs, Tried: ch.tried, Refused: ch.refused}
}

// tuneSession is the tuner's device state for one plan build.
type tuneSession struct {
	q       *cl.CommandQueue
	winners map[string][]kernels.Variant // family -> variants that won keys
}

// closeTuning releases the tuner's queue.
func (b *builder) closeTuning() error {
	if b.ts == nil || b.ts.q == nil {
		return nil
	}
	err := b.ts.q.Close()
	b.ts.q = nil
	return err
}

// tune times the candidates of one choice (ordered and cut by
// tune.Order) and returns the record of the fastest that matches the
// reference. A candidate that fails to build or launch, or whose result
// differs, is refused and counted, never fatal; only when every candidate
// is refused does tuning fail.
func (b *builder) tune(n *graph.Node, key string, cands []kernels.Variant, heuristic kernels.Variant, emit func(kernels.Variant) error) (tune.Record, error) {
	tn := b.c.tuning
	budget := tn.mode.Budget()
	if b.ts == nil {
		b.ts = &tuneSession{winners: map[string][]kernels.Variant{}}
	}
	if b.ts.q == nil {
		q, err := b.c.ctx.val.CreateCommandQueue(b.c.dev.cl, cl.CommandQueueProfilingEnable)
		if err != nil {
			return tune.Record{}, plugin.Errorf(plugin.ErrDevice, "gpu: tuning node %q on %s: command queue: %w", n.Name, b.c.dev.name(), err)
		}
		b.ts.q = q
	}
	order := tune.Order(cands, heuristic, b.ts.winners[heuristic.Family], budget)
	ins, want, err := b.tuneInputs(n, key)
	if err != nil {
		return tune.Record{}, err
	}
	rec := tune.Record{Mode: tn.mode.String(), Heuristic: heuristic.String()}
	best := math.Inf(1)
	var bestV kernels.Variant
	var failures []string
	for _, v := range order {
		if err := b.ctx.Err(); err != nil {
			return tune.Record{}, fmt.Errorf("gpu: tuning node %q: %w", n.Name, err)
		}
		ms, err := b.timeCandidate(n, v, ins, want, budget, best, emit)
		rec.Tried++
		if err != nil {
			rec.Refused++
			failures = append(failures, fmt.Sprintf("%s: %v", v, err))
			continue
		}
		if v.Equal(heuristic) {
			rec.HeuristicMs = ms
		}
		if ms < best {
			best, bestV = ms, v
		}
	}
	if bestV.IsZero() {
		return tune.Record{}, plugin.Errorf(plugin.ErrDevice, "gpu: tuning node %q (%s): every candidate was refused: %s", n.Name, key, errors.Join(stringErrs(failures)...))
	}
	rec.Variant, rec.Ms = bestV.String(), best
	b.ts.winners[bestV.Family] = appendUnique(b.ts.winners[bestV.Family], bestV)
	return rec, nil
}

func stringErrs(ss []string) []error {
	out := make([]error, len(ss))
	for i, s := range ss {
		out[i] = errors.New(s)
	}
	return out
}

func appendUnique(vs []kernels.Variant, v kernels.Variant) []kernels.Variant {
	for _, o := range vs {
		if o.Equal(v) {
			return vs
		}
	}
	if len(vs) >= 2 { // the two latest winners
		vs = vs[1:]
	}
	return append(vs, v)
}

// tuneInputs returns seeded inputs of the node's real shapes (its host
// values where it has them: weights, tables) and the CPU reference's
// outputs for them.
func (b *builder) tuneInputs(n *graph.Node, key string) ([]*tensor.Tensor, []*tensor.Tensor, error) {
	h := fnv.New32a()
	h.Write([]byte(key))
	seed := h.Sum32()
	ins := make([]*tensor.Tensor, len(n.Inputs))
	refIn := make([]*tensor.Tensor, len(n.Inputs))
	for i := range n.Inputs {
		v := b.in(n, i)
		if v < 0 {
			continue
		}
		val := b.val(v)
		t := val.host
		if t == nil {
			f, err := tensor.FromF32(val.shape, seeded.Float32s(seed+uint32(i), int(val.shape.NumElements()), -1, 1))
			if err != nil {
				return nil, nil, err
			}
			if t, err = f.Convert(val.typ); err != nil {
				return nil, nil, plugin.Errorf(plugin.ErrUnsupported, "gpu: tuning node %q: input %d of type %s: %w", n.Name, i, val.typ, err)
			}
		}
		ins[i] = t
		refIn[i] = t
		if t.Type() == tensor.F16 {
			f, err := t.Convert(tensor.F32)
			if err != nil {
				return nil, nil, err
			}
			refIn[i] = f
		}
	}
	want, err := ref.Evaluate(n, refIn)
	if err != nil {
		return nil, nil, plugin.Errorf(plugin.ErrUnsupported, "gpu: tuning node %q: the CPU reference: %w", n.Name, err)
	}
	return ins, want, nil
}

// timeCandidate emits variant v tentatively, runs its launches and
// returns their median time in milliseconds after checking the outputs
// against want; the emission is rolled back. A candidate whose warm-up
// already takes more than four times best is not timed further.
func (b *builder) timeCandidate(n *graph.Node, v kernels.Variant, ins, want []*tensor.Tensor, budget tune.Budget, best float64, emit func(kernels.Variant) error) (float64, error) {
	mark := b.mark()
	defer b.rollback(mark)
	if err := emit(v); err != nil {
		return 0, err
	}
	launches := b.pl.launches[mark.launches:]
	run, err := b.materialize(n, launches, ins)
	if err != nil {
		return 0, err
	}
	defer run.close()
	var times []float64
	for i := 0; i < budget.WarmUp+budget.Runs; i++ {
		ms, err := run.once(b.ts.q)
		if err != nil {
			return 0, err
		}
		if i < budget.WarmUp {
			if i == 0 && ms > 4*best && ms > 0.5 {
				return 0, fmt.Errorf("warm-up %.3g ms, over 4x the best %.3g ms: not timed further", ms, best)
			}
			continue
		}
		times = append(times, ms)
	}
	for i, w := range want {
		got, err := run.read(b.ts.q, b, b.out(n, i))
		if err != nil {
			return 0, err
		}
		if err := closeEnough(w, got); err != nil {
			return 0, fmt.Errorf("output %d differs from the CPU reference: %w", i, err)
		}
	}
	if len(times) == 0 {
		return 0, nil
	}
	return tune.Median(times), nil
}

// closeEnough checks got against want within a tolerance for the
// accumulation order of the variants (f32) or f16 storage.
func closeEnough(want, got *tensor.Tensor) error {
	if !want.Shape().Equal(got.Shape()) {
		return fmt.Errorf("shape %v, want %v", got.Shape(), want.Shape())
	}
	tol := 1e-3
	if got.Type() == tensor.F16 {
		tol = 2e-2
	}
	w, g := want.Float64s(), got.Float64s()
	scale := 0.0
	for _, x := range w {
		scale = math.Max(scale, math.Abs(x))
	}
	for i := range w {
		if d := math.Abs(w[i] - g[i]); !(d <= tol*(1+math.Abs(w[i]))+tol*0.1*scale) {
			return fmt.Errorf("element %d is %g, want %g", i, g[i], w[i])
		}
	}
	return nil
}

// tuneRun is one candidate's launches bound to device buffers.
type tuneRun struct {
	kernels  []*cl.Kernel
	launches []launch
	bufs     map[int]*cl.MemObject // root value -> buffer
}

// materialize binds the launches' arguments to fresh device buffers: host
// values uploaded, the node's inputs filled with ins, the rest (outputs,
// temporaries) allocated.
func (b *builder) materialize(n *graph.Node, launches []launch, ins []*tensor.Tensor) (_ *tuneRun, err error) {
	r := &tuneRun{launches: launches, bufs: map[int]*cl.MemObject{}}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	input := map[int]*tensor.Tensor{}
	for i := range n.Inputs {
		if v := b.in(n, i); v >= 0 && ins[i] != nil {
			input[b.val(v).root] = ins[i]
		}
	}
	ctx := b.c.ctx.val
	buffer := func(v int) (*cl.MemObject, error) {
		root := b.val(v).root
		if m, ok := r.bufs[root]; ok {
			return m, nil
		}
		rv := b.val(root)
		var data []byte
		switch {
		case rv.host != nil:
			data = rv.host.Contiguous().Bytes()
		case input[root] != nil:
			data = input[root].Contiguous().Bytes()
		}
		var m *cl.MemObject
		var err error
		if data != nil && len(data) > 0 {
			m, err = ctx.CreateBuffer(cl.MemReadWrite|cl.MemCopyHostPtr, data)
		} else {
			m, err = ctx.CreateEmptyBuffer(cl.MemReadWrite, max(rv.bytes, 4))
		}
		if err != nil {
			return nil, err
		}
		r.bufs[root] = m
		return m, nil
	}
	for _, l := range launches {
		k, err := l.prog.CreateKernel(l.kernel.Entry)
		if err != nil {
			return nil, err
		}
		r.kernels = append(r.kernels, k)
		for i, a := range l.args {
			if s, ok := a.(slotArg); ok {
				m, err := buffer(int(s))
				if err != nil {
					return nil, err
				}
				a = m
			}
			if err := k.SetArg(i, a); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// once runs the launches and returns their device time in milliseconds.
func (r *tuneRun) once(q *cl.CommandQueue) (float64, error) {
	var evs []*cl.Event
	defer func() {
		for _, e := range evs {
			_ = e.Close()
		}
	}()
	t0 := time.Now()
	for i, l := range r.launches {
		if l.n == 0 {
			continue
		}
		ev, err := q.EnqueueNDRangeKernel(r.kernels[i], nil, l.global, l.local, nil)
		if err != nil {
			return 0, err
		}
		evs = append(evs, ev)
	}
	if err := q.Finish(); err != nil {
		return 0, err
	}
	wall := time.Since(t0)
	var sum time.Duration
	for _, e := range evs {
		p, err := e.Profile()
		if err != nil {
			return float64(wall) / 1e6, nil // no profiling: the wall time
		}
		sum += p.Duration()
	}
	return float64(sum) / 1e6, nil
}

// read returns the device buffer of plan value v as a host tensor.
func (r *tuneRun) read(q *cl.CommandQueue, b *builder, v int) (*tensor.Tensor, error) {
	val := b.val(v)
	m, ok := r.bufs[val.root]
	if !ok {
		return nil, fmt.Errorf("no launch writes the output")
	}
	t, err := tensor.New(val.typ, val.shape)
	if err != nil {
		return nil, err
	}
	if bs := t.Bytes(); len(bs) > 0 {
		ev, err := cl.EnqueueReadSlice(q, m, true, 0, bs, nil)
		if err != nil {
			return nil, err
		}
		_ = ev.Close()
	}
	return t, nil
}

// close releases the run's kernels and buffers.
func (r *tuneRun) close() {
	for _, k := range r.kernels {
		_ = k.Close()
	}
	for _, m := range r.bufs {
		_ = m.Close()
	}
}

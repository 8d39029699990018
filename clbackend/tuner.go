package clbackend

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/clbackend/tune"
	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/plugin/driver"
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
	// tuning cache), "shipped" (the device's shipped database,
	// kernels/tuning), "tuned" (timed in this compile) or "forced"
	// (GPU_KERNEL_VARIANTS).
	Source string
	// Ms and HeuristicMs are the median times tuning measured for Variant
	// and Heuristic (0 when not measured).
	Ms, HeuristicMs float64
	// Tried counts the candidates timed, Refused those the device could not
	// build or launch or that differed from the reference; Refusals says
	// why (this compile's tuning only).
	Tried, Refused int
	Refusals       []string
}

// KernelChoices returns the kernel variant choices of the plan the last
// inference used (the plan of the declared shapes when they are static),
// in plan order.
func (c *CompiledModel) KernelChoices() []TunedOp {
	pl := c.reportedPlan()
	if pl == nil {
		return nil
	}
	return append([]TunedOp(nil), pl.choices...)
}

func (ch variantChoice) report() TunedOp {
	return TunedOp{Node: ch.node, Op: ch.op, Key: ch.key, Variant: ch.chosen.String(), Heuristic: ch.heur.String(), Source: ch.source,
		Ms: ch.ms, HeuristicMs: ch.heuristicMs, Tried: ch.tried, Refused: ch.refused, Refusals: ch.refusals}
}

// errPruned marks a candidate whose warm-up was so slow that it was not
// timed further: tried, not refused.
var errPruned = errors.New("not timed further")

// tuneSession is the tuner's device state for one plan build.
type tuneSession struct {
	q       *cl.CommandQueue
	winners map[string][]kernels.Variant // family -> variants that won keys
	live    int64                        // bytes of the candidates' buffers
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
// reference, and why candidates were refused. A candidate that fails to
// build or launch, or whose result differs, is refused and counted,
// never fatal; only when every candidate is refused does tuning fail.
//
// The candidates are timed in windows of at most tuneWindow, each with the
// best so far, round-robin: one run of each per round, so that the load
// of a shared machine drifting over the seconds of a window falls on all
// of them alike. The first round warms up and checks the outputs; a
// candidate over four times slower than the best there is not timed
// further.
func (b *builder) tune(n *graph.Node, key string, cands []kernels.Variant, heuristic kernels.Variant, emit func(kernels.Variant) error) (tune.Record, []string, error) {
	tn := b.c.tuning
	budget := tn.mode.Budget()
	if b.ts == nil {
		b.ts = &tuneSession{winners: map[string][]kernels.Variant{}}
	}
	if b.ts.q == nil {
		q, err := b.c.ctx.cl.CreateCommandQueue(b.c.run.cl, cl.CommandQueueProfilingEnable)
		if err != nil {
			return tune.Record{}, nil, driver.Errorf(driver.ErrDevice, "gpu: tuning node %q on %s: command queue: %w", n.Name, b.c.dev.name(), err)
		}
		b.ts.q = q
	}
	order := tune.Order(cands, heuristic, b.ts.winners[heuristic.Family], budget)
	ins, want, err := b.tuneInputs(n, key)
	if err != nil {
		return tune.Record{}, nil, err
	}
	inBufs, err := b.inputBuffers(n, ins)
	defer func() {
		for _, m := range inBufs {
			_ = m.Close()
		}
	}()
	if err != nil {
		return tune.Record{}, nil, driver.Errorf(driver.ErrDevice, "gpu: tuning node %q: input buffers: %w", n.Name, err)
	}
	rec := tune.Record{Mode: tn.mode.String(), Heuristic: heuristic.String()}
	var failures []string
	var best *candidate
	for len(order) > 0 {
		if err := b.ctx.Err(); err != nil {
			return tune.Record{}, failures, fmt.Errorf("gpu: tuning node %q: %w", n.Name, err)
		}
		k := min(len(order), tuneWindow)
		window := order[:k]
		order = order[k:]
		var runs []*candidate
		if best != nil {
			runs = append(runs, best)
		}
		for _, v := range window {
			rec.Tried++
			c, err := b.prepare(n, v, inBufs, want, emit)
			if err != nil && tuneTrace != nil {
				tuneTrace(v, 0, err)
			}
			if err != nil {
				rec.Refused++
				failures = append(failures, fmt.Sprintf("%s: %v", v, err))
				continue
			}
			runs = append(runs, c)
		}
		b.timeRounds(runs, budget, &failures, &rec)
		for _, c := range runs {
			if c.err == nil && c.v.Equal(heuristic) {
				rec.HeuristicMs = c.ms
			}
		}
		for _, c := range runs {
			if c.err == nil && c != best && (best == nil || c.ms < best.ms) {
				if best != nil {
					best.close()
				}
				best = c
				continue
			}
			if c != best {
				c.close()
			}
		}
	}
	if best == nil {
		return tune.Record{}, failures, driver.Errorf(driver.ErrDevice, "gpu: tuning node %q (%s): every candidate was refused: %s", n.Name, key, strings.Join(failures, "; "))
	}
	defer best.close()
	// A candidate replaces the heuristic's choice only when it is clearly
	// faster: within 5% the difference is the noise of a shared machine.
	if !best.v.Equal(heuristic) && rec.HeuristicMs > 0 && best.ms > heuristicMargin*rec.HeuristicMs {
		rec.Variant, rec.Ms = heuristic.String(), rec.HeuristicMs
		b.ts.winners[heuristic.Family] = appendUnique(b.ts.winners[heuristic.Family], heuristic)
		return rec, failures, nil
	}
	rec.Variant, rec.Ms = best.v.String(), best.ms
	b.ts.winners[best.v.Family] = appendUnique(b.ts.winners[best.v.Family], best.v)
	return rec, failures, nil
}

// heuristicMargin is how much faster than the heuristic's choice a
// candidate must be to replace it.
const heuristicMargin = 0.95

// tuneWindow is how many candidates the tuner keeps on the device at once.
const tuneWindow = 6

// candidate is one variant bound to device buffers, and its times.
type candidate struct {
	v     kernels.Variant
	run   *tuneRun
	progs []*shared[*cl.Program]
	times []float64
	ms    float64
	err   error
}

func (c *candidate) close() {
	if c.run != nil {
		c.run.close()
		c.run = nil
	}
	for _, p := range c.progs {
		_ = p.release()
	}
	c.progs = nil
}

// prepare emits v tentatively, binds its launches to device buffers (the
// node's inputs shared), runs them once and checks the outputs against
// want; the emission is rolled back, the launches and their programs kept.
func (b *builder) prepare(n *graph.Node, v kernels.Variant, inBufs map[int]*cl.MemObject, want []*tensor.Tensor, emit func(kernels.Variant) error) (_ *candidate, err error) {
	mark := b.mark()
	defer b.rollback(mark)
	if err := emit(v); err != nil {
		return nil, err
	}
	c := &candidate{v: v}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	for _, p := range b.pl.progs[mark.progs:] {
		p.acquire()
		c.progs = append(c.progs, p)
	}
	launches := slices.Clone(b.pl.launches[mark.launches:])
	if c.run, err = b.materialize(launches, inBufs); err != nil {
		return nil, err
	}
	if _, err := c.run.once(b.ts.q); err != nil {
		return nil, err
	}
	for i, w := range want {
		got, err := c.run.read(b.ts.q, b, b.out(n, i))
		if err != nil {
			return nil, err
		}
		if err := closeEnough(w, got); err != nil {
			return nil, fmt.Errorf("output %d differs from the CPU reference: %w", i, err)
		}
	}
	return c, nil
}

// timeRounds runs the candidates round-robin, budget.WarmUp rounds untimed
// then budget.Runs timed, and sets each one's median; one that fails or,
// after the warm-up, is over four times slower than the fastest is
// dropped (err set; only a failure counts as refused).
func (b *builder) timeRounds(cs []*candidate, budget tune.Budget, failures *[]string, rec *tune.Record) {
	warm := make([]float64, len(cs))
	for r := 0; r < budget.WarmUp+budget.Runs; r++ {
		for i := range cs {
			c := cs[(i+r)%len(cs)] // rotate who runs first
			if c.err != nil {
				continue
			}
			ms, err := c.run.once(b.ts.q)
			if err != nil {
				c.err = err
				rec.Refused++
				*failures = append(*failures, fmt.Sprintf("%s: %v", c.v, err))
				continue
			}
			if r < budget.WarmUp {
				warm[(i+r)%len(cs)] = ms
				continue
			}
			c.times = append(c.times, ms)
		}
		if r == budget.WarmUp-1 || (budget.WarmUp == 0 && r == 0) {
			fastest := math.Inf(1)
			for i, c := range cs {
				if c.err == nil && warm[i] > 0 {
					fastest = math.Min(fastest, warm[i])
				}
			}
			for i, c := range cs {
				if c.err == nil && warm[i] > 4*fastest && warm[i] > 0.5 {
					c.err = errPruned
				}
			}
		}
	}
	for _, c := range cs {
		if c.err == nil {
			c.ms = tune.Median(c.times)
		}
		if tuneTrace != nil {
			tuneTrace(c.v, c.ms, c.err)
		}
	}
}

// tuneTrace, when set (tests), sees every timed candidate: its median, or
// why it was dropped.
var tuneTrace func(v kernels.Variant, ms float64, err error)

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
				return nil, nil, driver.Errorf(driver.ErrUnsupported, "gpu: tuning node %q: input %d of type %s: %w", n.Name, i, val.typ, err)
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
		return nil, nil, driver.Errorf(driver.ErrUnsupported, "gpu: tuning node %q: the CPU reference: %w", n.Name, err)
	}
	return ins, want, nil
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
	// bytes is what the run holds on the device, counted in *live (the
	// tuner's total) until close.
	bytes int64
	live  *int64
}

// inputBuffers uploads the node's seeded inputs (those that are not host
// values), one buffer per root value.
func (b *builder) inputBuffers(n *graph.Node, ins []*tensor.Tensor) (map[int]*cl.MemObject, error) {
	out := map[int]*cl.MemObject{}
	for i := range n.Inputs {
		v := b.in(n, i)
		if v < 0 || ins[i] == nil || b.val(v).host != nil {
			continue
		}
		root := b.memKey(v)
		if _, ok := out[root]; ok {
			continue
		}
		data := ins[i].Contiguous().Bytes()
		if len(data) == 0 {
			data = make([]byte, 4)
		}
		m, err := b.c.ctx.cl.CreateBuffer(cl.MemReadWrite|cl.MemCopyHostPtr, data)
		if err != nil {
			return out, err
		}
		out[root] = m
	}
	return out, nil
}

// materialize binds the launches' arguments to device buffers: the
// node's inputs to inBufs (shared, not the run's), host values uploaded,
// the rest (outputs, temporaries) allocated.
func (b *builder) materialize(launches []launch, inBufs map[int]*cl.MemObject) (_ *tuneRun, err error) {
	r := &tuneRun{launches: launches, bufs: map[int]*cl.MemObject{}}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	// The buffers the run allocates, against half the device's memory
	// less what the tuner holds already: a candidate that does not fit is
	// refused before anything is allocated.
	need := int64(0)
	seen := map[int]bool{}
	for _, l := range launches {
		for _, a := range l.args {
			if s, ok := a.(slotArg); ok {
				if root := b.memKey(int(s)); !seen[root] && inBufs[root] == nil {
					seen[root] = true
					need += int64(max(b.memVal(int(s)).bytes, 4))
				}
			}
		}
	}
	if d := b.c.dev; d.memSize > 0 && b.ts.live+need > d.memSize/2 {
		return nil, driver.Errorf(driver.ErrResourceExhausted, "gpu: tuning: a candidate needs %s of device buffers, the tuner holds %s, over half of %s's %s",
			tensor.FormatBytes(need), tensor.FormatBytes(b.ts.live), d.name(), tensor.FormatBytes(d.memSize))
	}
	r.live = &b.ts.live
	r.bytes = need
	b.ts.live += need
	ctx := b.c.ctx.cl
	buffer := func(v int) (*cl.MemObject, error) {
		root := b.memKey(v)
		if m, ok := inBufs[root]; ok {
			return m, nil
		}
		if m, ok := r.bufs[root]; ok {
			return m, nil
		}
		rv := b.memVal(v)
		var m *cl.MemObject
		var err error
		if rv.host != nil && rv.host.NumElements() > 0 {
			m, err = ctx.CreateBuffer(cl.MemReadWrite|cl.MemCopyHostPtr, rv.host.Contiguous().Bytes())
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
	m, ok := r.bufs[b.memKey(v)]
	if !ok {
		return nil, errors.New("no launch writes the output")
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
	if r.live != nil {
		*r.live -= r.bytes
		r.live = nil
	}
	for _, k := range r.kernels {
		_ = k.Close()
	}
	for _, m := range r.bufs {
		_ = m.Close()
	}
}

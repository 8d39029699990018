package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/clbackend/tune"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// The model-level confirmation. The tuner times each kernel choice alone,
// on seeded inputs; in the model the same variant can run slower (other
// kernels' data in the caches, its programs' work-group functions, the
// device's workers shared). So every choice that differs from the
// heuristics is confirmed in the model: the heuristics' compile and the
// tuned one run in interleaved rounds, the device time of each choice's
// nodes is compared (tune.Judge, over all the choices at once), and a
// record that does not win is replaced by one keeping the heuristics.
// Then the whole model, with the records that won, runs against the
// heuristics the same way; unless it wins too, those records keep the
// heuristics as well. A tuned configuration is thus never slower than the
// heuristics it replaces, within the noise the rounds measure.

// nodeMargin is how much faster a choice's nodes must be in the model to
// count a round as won (the device times of kernels of microseconds are
// coarse); modelMargin is the same for the whole model's latency.
const (
	nodeMargin  = 0.03
	modelMargin = 0.005
)

// modelLooks is how many times the whole-model comparison may look at its
// rounds (the second time with twice as many).
const modelLooks = 2

// sampleMs is the least wall time of one sample: a fast model runs several
// inferences per sample, so that one slow wake-up of the device's workers
// does not make the sample.
const sampleMs = 20

// sampler is one compiled model the confirmation times.
type sampler interface {
	// sample runs the model and returns its latency in milliseconds per
	// inference and, when it is profiled, the device time of each node
	// (milliseconds per inference, by node name).
	sample(ctx context.Context) (float64, map[string]float64, error)
}

// confirmer applies the rule to one model's records.
type confirmer struct {
	db     *tune.DB
	label  string // the model and its shapes, for the records' Confirmed
	rounds int
}

// candidates are the choices that differ from the heuristics, by key,
// with their nodes: what the confirmation has to confirm. Forced choices
// (GPU_KERNEL_VARIANTS) are the user's, not the tuner's.
func candidates(choices []clbackend.TunedOp) (map[string][]string, []string) {
	nodes := map[string][]string{}
	var keys []string
	for _, c := range choices {
		if c.Variant == c.Heuristic || c.Source == "forced" || c.Source == "heuristic" {
			continue
		}
		if _, ok := nodes[c.Key]; !ok {
			keys = append(keys, c.Key)
		}
		nodes[c.Key] = append(nodes[c.Key], c.Node)
	}
	sort.Strings(keys)
	return nodes, keys
}

// nodes confirms the choices in the model: heur runs the heuristics, tuned
// the tuned choices, both profiled. It records each choice's verdict in
// the DB (a loser replaced by a record keeping the heuristics) and
// returns the keys that won, and every verdict.
func (c *confirmer) nodes(ctx context.Context, heur, tuned sampler, choices []clbackend.TunedOp) ([]string, map[string]tune.Verdict, error) {
	nodes, keys := candidates(choices)
	if len(keys) == 0 {
		return nil, nil, nil
	}
	var hp, tp []map[string]float64
	_, _, err := tune.Interleave(c.rounds, func() (float64, error) {
		ms, p, err := heur.sample(ctx)
		hp = append(hp, p)
		return ms, err
	}, func() (float64, error) {
		ms, p, err := tuned.sample(ctx)
		tp = append(tp, p)
		return ms, err
	})
	if err != nil {
		return nil, nil, err
	}
	var hs, ts [][]float64
	for _, k := range keys {
		hs, ts = append(hs, keyTimes(hp, nodes[k])), append(ts, keyTimes(tp, nodes[k]))
	}
	verdicts := map[string]tune.Verdict{}
	var won []string
	for i, v := range tune.JudgeAll(hs, ts, nodeMargin) {
		k := keys[i]
		verdicts[k] = v
		if v.Win {
			won = append(won, k)
			c.keep(k, "in the model "+v.String())
			continue
		}
		c.drop(k, "in the model "+v.String())
	}
	return won, verdicts, c.save()
}

// model compares the whole model with the heuristics (heur) and with the
// records that won (tuned): unless it wins, those records keep the
// heuristics too. The comparison looks up to modelLooks times: after
// c.rounds rounds, and, when the tuned side's median is ahead but not yet
// beyond the noise, after twice as many (each look at half of
// tune.Alpha, so that together they keep it).
func (c *confirmer) model(ctx context.Context, heur, tuned sampler, won []string) (tune.Verdict, error) {
	var hs, ts []float64
	var v tune.Verdict
	for look := 0; look < modelLooks; look++ {
		h, t, err := tune.Interleave(c.rounds<<look-len(hs), func() (float64, error) {
			ms, _, err := heur.sample(ctx)
			return ms, err
		}, func() (float64, error) {
			ms, _, err := tuned.sample(ctx)
			return ms, err
		})
		if err != nil {
			return tune.Verdict{}, err
		}
		hs, ts = append(hs, h...), append(ts, t...)
		v = tune.JudgeAt(hs, ts, modelMargin, tune.Alpha/modelLooks)
		if v.Win || len(won) == 0 || v.TunedMs >= v.HeuristicMs {
			break
		}
	}
	if len(won) == 0 {
		return v, nil
	}
	if v.Win {
		for _, k := range won {
			if r, ok := c.db.Lookup(k); ok && !r.KeepsHeuristic() {
				r.Confirmed, r.Updated = r.Confirmed+"; the whole model "+v.String(), ""
				c.db.Put(k, r)
			}
		}
		return v, c.save()
	}
	for _, k := range won {
		c.drop(k, "the whole model "+v.String())
	}
	return v, c.save()
}

// keyTimes sums the device times of a key's nodes per round (0 when one
// of them did not run: such a round is never won).
func keyTimes(rounds []map[string]float64, nodes []string) []float64 {
	out := make([]float64, len(rounds))
	for i, p := range rounds {
		sum := 0.0
		for _, n := range nodes {
			ms, ok := p[n]
			if !ok {
				sum = math.NaN()
				break
			}
			sum += ms
		}
		if !(sum > 0) {
			sum = 0
		}
		out[i] = sum
	}
	return out
}

func (c *confirmer) keep(key, why string) {
	if r, ok := c.db.Lookup(key); ok && !r.KeepsHeuristic() {
		r.Confirmed, r.Updated = c.label+": "+why, ""
		c.db.Put(key, r)
	}
}

func (c *confirmer) drop(key, why string) {
	if r, ok := c.db.Lookup(key); ok && !r.KeepsHeuristic() {
		c.db.Put(key, r.Demote(c.label+": "+why))
	}
}

func (c *confirmer) save() error {
	if c.db.Path() == "" {
		return nil
	}
	return c.db.Save()
}

// modelRun is a compiled model and its request, with the inputs set.
type modelRun struct {
	cm       driver.CompiledModel
	req      driver.InferRequest
	profiled bool
	reps     int // inferences per sample
}

// openModel compiles m with props and runs one inference (where a model
// with dynamic inputs is planned, and, under a tuning mode, tuned; progress
// sees the plan's nodes).
func openModel(ctx context.Context, core *driver.Core, m *graph.Model, device string, props map[string]string,
	ins map[string]*tensor.Tensor, progress func(clbackend.TuneProgress)) (_ *modelRun, err error) {
	pctx := ctx
	if progress != nil {
		pctx = clbackend.WithTuneProgress(ctx, progress)
	}
	cm, err := core.CompileModel(pctx, m, device, props)
	if err != nil {
		return nil, err
	}
	r := &modelRun{cm: cm, reps: 1}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if _, ok := cm.(choicer); !ok {
		return nil, fmt.Errorf("device %s is not a GPU device (its compiled model reports no kernel choices)", device)
	}
	r.profiled = props[driver.KeyEnableProfiling] == "YES"
	if r.req, err = cm.CreateInferRequest(); err != nil {
		return nil, err
	}
	for name, t := range ins {
		if err := r.req.SetTensor(name, t); err != nil {
			return nil, err
		}
	}
	return r, r.req.Infer(pctx)
}

// calibrate sets the inferences per sample from the time of one more
// inference.
func (r *modelRun) calibrate(ctx context.Context) error {
	t0 := time.Now()
	if err := r.req.Infer(ctx); err != nil {
		return err
	}
	ms := float64(time.Since(t0)) / 1e6
	r.reps = max(1, int(math.Ceil(sampleMs/math.Max(ms, 1e-3))))
	return nil
}

func (r *modelRun) sample(ctx context.Context) (float64, map[string]float64, error) {
	var nodes map[string]float64
	if r.profiled {
		nodes = map[string]float64{}
	}
	var wall time.Duration
	for range r.reps {
		t0 := time.Now()
		if err := r.req.Infer(ctx); err != nil {
			return 0, nil, err
		}
		wall += time.Since(t0)
		if r.profiled {
			for _, p := range r.req.ProfilingInfo() {
				if p.NodeType != "Stage" && p.Status == driver.Executed {
					nodes[p.NodeName] += float64(p.RealTime) / 1e6 / float64(r.reps)
				}
			}
		}
	}
	return float64(wall) / 1e6 / float64(r.reps), nodes, nil
}

// median returns the median of n samples of the model's latency.
func (r *modelRun) median(ctx context.Context, n int) (float64, error) {
	xs := make([]float64, 0, n)
	for range n {
		ms, _, err := r.sample(ctx)
		if err != nil {
			return 0, err
		}
		xs = append(xs, ms)
	}
	return tune.Median(xs), nil
}

func (r *modelRun) choices() []clbackend.TunedOp { return r.cm.(choicer).KernelChoices() }

// db is the tuning cache the model's plans read (nil: none).
func (r *modelRun) db() *tune.DB {
	if d, ok := r.cm.(interface{ TuningDB() *tune.DB }); ok {
		return d.TuningDB()
	}
	return nil
}

// close releases the request and the compiled model (once).
func (r *modelRun) close() {
	if r.req != nil {
		_ = r.req.Close()
		r.req = nil
	}
	if r.cm != nil {
		_ = r.cm.Close()
		r.cm = nil
	}
}

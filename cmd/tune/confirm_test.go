package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/clbackend/tune"
	"github.com/clinfer/clinfer/internal/seeded"
)

// fakeModel is a sampler with a fake timer: each node takes its time in
// ms, times seeded noise of up to +-10%, and the model's latency is the
// sum of its nodes plus rest.
type fakeModel struct {
	nodes map[string]float64
	rest  float64
	rng   *seeded.Rand
}

func (f *fakeModel) sample(context.Context) (float64, map[string]float64, error) {
	noise := func() float64 { return 1 + 0.2*(f.rng.Float64()-0.5) }
	out := map[string]float64{}
	wall := f.rest * noise()
	for n, ms := range f.nodes {
		out[n] = ms * noise()
		wall += out[n]
	}
	return wall, out, nil
}

const (
	heurConv = "conv/direct:VW=4,MR=8,NV=1,WG=1"
	tunedA   = "conv/direct:VW=4,MR=16,NV=1,WG=1"
	heurGemm = "gemm/direct:VW=4,MR=4,NV=2,WG=1"
	tunedB   = "gemm/direct:VW=8,MR=8,NV=2,WG=1"
)

// TestConfirmRule is the model-level rule with a fake timer: of three
// tuned choices, the one whose nodes win in the model keeps its record,
// the one that ties and the one that loses are recorded as keeping the
// heuristics; then a whole model that wins keeps the winner, and one that
// only ties drops it too.
func TestConfirmRule(t *testing.T) {
	for _, c := range []struct {
		name      string
		modelRest float64 // the rest of the model: a large one drowns the win
		keep      bool
	}{
		{"the whole model wins", 2, true},
		{"the whole model ties", 200, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dev := tune.Device{Architecture: "Test; Device", Driver: "1"}
			db, err := tune.Open(filepath.Join(t.TempDir(), "tuning.json"), dev)
			require.NoError(t, err)
			rec := func(v, h string) tune.Record {
				return tune.Record{Variant: v, Ms: 1, Heuristic: h, HeuristicMs: 1.2, Mode: "FAST", Tried: 5}
			}
			db.Put("conv win", rec(tunedA, heurConv))
			db.Put("conv tie", rec(tunedA, heurConv))
			db.Put("gemm lose", rec(tunedB, heurGemm))
			db.Put("gemm same", rec(heurGemm, heurGemm))
			require.NoError(t, db.Save())
			choices := []clbackend.TunedOp{
				{Node: "w1", Key: "conv win", Variant: tunedA, Heuristic: heurConv, Source: "tuned"},
				{Node: "w2", Key: "conv win", Variant: tunedA, Heuristic: heurConv, Source: "tuned"},
				{Node: "t", Key: "conv tie", Variant: tunedA, Heuristic: heurConv, Source: "recorded"},
				{Node: "l", Key: "gemm lose", Variant: tunedB, Heuristic: heurGemm, Source: "tuned"},
				{Node: "s", Key: "gemm same", Variant: heurGemm, Heuristic: heurGemm, Source: "tuned"},
			}
			heur := &fakeModel{nodes: map[string]float64{"w1": 1, "w2": 1, "t": 1, "l": 1, "s": 1}, rest: c.modelRest, rng: seeded.New(1)}
			tuned := &fakeModel{nodes: map[string]float64{"w1": 0.6, "w2": 0.6, "t": 1, "l": 1.3, "s": 1}, rest: c.modelRest, rng: seeded.New(2)}
			cf := &confirmer{db: db, label: "m.onnx", rounds: tune.MinRounds}
			won, verdicts, err := cf.nodes(context.Background(), heur, tuned, choices)
			require.NoError(t, err)
			assert.Equal(t, []string{"conv win"}, won)
			assert.Len(t, verdicts, 3, "the choice that is the heuristics' is not confirmed")

			// A later process reads the file.
			read := func(key string) tune.Record {
				db2, err := tune.Open(db.Path(), dev)
				require.NoError(t, err)
				r, ok := db2.Lookup(key)
				require.True(t, ok, key)
				return r
			}
			for _, k := range []string{"conv tie", "gemm lose"} {
				r := read(k)
				assert.True(t, r.KeepsHeuristic(), "%s: %+v", k, r)
				assert.Contains(t, r.Confirmed, "dropped: m.onnx: in the model", k)
			}
			assert.Equal(t, tunedA, read("conv win").Variant)
			assert.Contains(t, read("conv win").Confirmed, "m.onnx: in the model")

			// The whole model: the heuristics against the records that won.
			heur.nodes, tuned.nodes = map[string]float64{"w1": 1, "w2": 1}, map[string]float64{"w1": 0.6, "w2": 0.6}
			v, err := cf.model(context.Background(), heur, tuned, won)
			require.NoError(t, err)
			assert.Equal(t, c.keep, v.Win, v.String())
			r := read("conv win")
			assert.Equal(t, !c.keep, r.KeepsHeuristic(), "%+v", r)
			if c.keep {
				assert.Contains(t, r.Confirmed, "; the whole model ")
			}
			if !c.keep {
				assert.Contains(t, r.Confirmed, "dropped: m.onnx: the whole model")
				assert.Contains(t, []int{tune.MinRounds, 2 * tune.MinRounds}, v.Rounds, "at most two looks")
			}
		})
	}
}

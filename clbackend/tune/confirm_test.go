package tune

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/internal/seeded"
)

// noisy returns n samples of ms with seeded multiplicative noise of up to
// +-spread (a shared machine's rounds), and every seventh sample slowed
// by half (a round the device's workers were descheduled in).
func noisy(seed uint32, n int, ms, spread float64) []float64 {
	r := seeded.New(seed)
	out := make([]float64, n)
	for i := range out {
		out[i] = ms * (1 + spread*(2*r.Float64()-1))
		if r.Uint32()%7 == 0 {
			out[i] *= 1.5
		}
	}
	return out
}

// TestJudge is the rule on paired samples: a candidate that wins by more
// than the noise wins; one that ties (the same time, or the same
// configuration measured twice) or loses never does, whatever the noise.
func TestJudge(t *testing.T) {
	const n = MinRounds
	for _, c := range []struct {
		name        string
		heur, tuned []float64
		win         bool
	}{
		{"wins by 20% in 10% noise", noisy(1, n, 10, 0.1), noisy(2, n, 8, 0.1), true},
		{"wins by 5% in 1% noise", noisy(3, n, 10, 0.01), noisy(4, n, 9.5, 0.01), true},
		{"ties in 10% noise", noisy(5, n, 10, 0.1), noisy(6, n, 10, 0.1), false},
		{"ties exactly", noisy(7, n, 10, 0), noisy(7, n, 10, 0), false},
		{"loses by 10%", noisy(8, n, 10, 0.05), noisy(9, n, 11, 0.05), false},
		{"wins by less than the margin", noisy(10, n, 10, 0), noisy(10, n, 9.95, 0), false},
		{"too few rounds", noisy(11, 3, 10, 0), noisy(11, 3, 5, 0), false},
		{"a side that did not run", noisy(12, n, 10, 0), make([]float64, n), false},
	} {
		v := Judge(c.heur, c.tuned, 0.01)
		assert.Equal(t, c.win, v.Win, "%s: %s", c.name, v)
		assert.Equal(t, Alpha, v.Level, c.name)
	}
}

// TestJudgeTiesNeverWin runs many seeded ties: at most Alpha of them may
// win by noise, and with Holm over a model's choices (JudgeAll) no more
// than Alpha of the models may keep any tie.
func TestJudgeTiesNeverWin(t *testing.T) {
	wins, models := 0, 0
	for s := uint32(0); s < 200; s++ {
		if Judge(noisy(2*s+100, MinRounds, 10, 0.2), noisy(2*s+101, MinRounds, 10, 0.2), 0.01).Win {
			wins++
		}
		var hs, ts [][]float64
		for k := uint32(0); k < 20; k++ {
			hs = append(hs, noisy(1000+40*s+2*k, MinRounds, 1, 0.2))
			ts = append(ts, noisy(1001+40*s+2*k, MinRounds, 1, 0.2))
		}
		for _, v := range JudgeAll(hs, ts, 0.01) {
			if v.Win {
				models++
				break
			}
		}
	}
	assert.LessOrEqual(t, wins, 10, "ties that won: at most Alpha of 200")
	assert.LessOrEqual(t, models, 10, "models that kept a tie: at most Alpha of 200")
}

// TestJudgeAll keeps the real wins among a model's ties and losses, and
// applies Holm's levels: the strongest at Alpha / m.
func TestJudgeAll(t *testing.T) {
	var hs, ts [][]float64
	for k := uint32(0); k < 20; k++ {
		hs = append(hs, noisy(10*k, MinRounds, 1, 0.1))
		switch k {
		case 3: // 2x faster
			ts = append(ts, noisy(10*k+1, MinRounds, 0.5, 0.1))
		case 7: // 25% faster
			ts = append(ts, noisy(10*k+1, MinRounds, 0.75, 0.05))
		case 11: // slower
			ts = append(ts, noisy(10*k+1, MinRounds, 1.3, 0.1))
		default:
			ts = append(ts, noisy(10*k+1, MinRounds, 1, 0.1))
		}
	}
	vs := JudgeAll(hs, ts, 0.03)
	var won []int
	minLevel := 1.0
	for k, v := range vs {
		if v.Win {
			won = append(won, k)
		}
		minLevel = min(minLevel, v.Level)
	}
	assert.Equal(t, []int{3, 7}, won)
	assert.InDelta(t, Alpha/20, minLevel, 1e-12, "the smallest P is tested at Alpha / m")
}

// TestSignP checks the sign test's tail against hand-computed values.
func TestSignP(t *testing.T) {
	assert.InDelta(t, 1.0, signP(10, 0), 1e-12)
	assert.InDelta(t, 11.0/1024, signP(10, 9), 1e-12)
	assert.InDelta(t, 1.0/1024, signP(10, 10), 1e-12)
	assert.InDelta(t, 0.5, signP(1, 1), 1e-12)
}

// TestInterleave alternates which side runs first and pairs each round's
// samples.
func TestInterleave(t *testing.T) {
	var order []string
	i := 0
	step := func(side string) func() (float64, error) {
		return func() (float64, error) {
			i++
			order = append(order, side)
			return float64(i), nil
		}
	}
	hs, ts, err := Interleave(3, step("h"), step("t"))
	require.NoError(t, err)
	assert.Equal(t, []string{"h", "t", "t", "h", "h", "t"}, order)
	assert.Equal(t, []float64{1, 4, 5}, hs)
	assert.Equal(t, []float64{2, 3, 6}, ts)
	_, _, err = Interleave(3, step("h"), func() (float64, error) { return 0, fmt.Errorf("device lost") })
	assert.ErrorContains(t, err, "device lost")
}

// TestDemote replaces a record's variant by the heuristics' and says
// which variant it dropped and why.
func TestDemote(t *testing.T) {
	r := Record{Variant: v2, Ms: 0.5, Heuristic: v1, HeuristicMs: 0.6, Mode: "FAST", Updated: "2026-01-01T00:00:00Z"}
	assert.False(t, r.KeepsHeuristic())
	d := r.Demote("model m: 0.6 -> 0.7 ms")
	assert.True(t, d.KeepsHeuristic())
	assert.Equal(t, v1, d.Variant)
	assert.Equal(t, 0.6, d.Ms)
	assert.Equal(t, v2+" dropped: model m: 0.6 -> 0.7 ms", d.Confirmed)
	assert.Empty(t, d.Updated, "Put stamps it newer than the record it replaces")
}

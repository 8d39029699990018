package tune

import (
	"fmt"
	"math"
	"sort"
)

// The model-level rule: a tuned choice is kept only where it beats the
// heuristics' choice in the model itself, by more than the noise of the
// measurement. The heuristics and the tuned configuration are run in
// interleaved rounds (Interleave), which gives paired samples; Judge
// decides with a sign test on the pairs, so neither a slow round of one
// side nor a drift of the machine's load over the rounds can pick the
// slower configuration.

// Alpha is the chance Judge accepts, over all the comparisons it decides
// together, that a candidate no faster than the heuristics wins by noise
// alone.
const Alpha = 0.05

// MinRounds is the fewest interleaved rounds a confirmation runs: with
// fewer, even a candidate faster in most rounds is seldom told from noise
// over a model's few dozen choices.
const MinRounds = 25

// Verdict is the outcome of one model-level comparison.
type Verdict struct {
	// Rounds is the number of paired samples.
	Rounds int
	// HeuristicMs and TunedMs are the medians of the two sides.
	HeuristicMs, TunedMs float64
	// Faster counts the rounds in which the tuned side beat the
	// heuristics by the margin; P is the chance of at least that many
	// for a tuned side no faster (one-sided sign test).
	Faster int
	P      float64
	// Level is the significance P had to reach (Alpha, or Holm's share
	// of it when several comparisons are decided together).
	Level float64
	// Win is set when the tuned side beat the heuristics by more than
	// the noise: P <= Level and the median of the ratios under 1 -
	// margin.
	Win bool
}

// String describes the verdict: "0.95 -> 0.80 ms, faster in 24/25
// rounds (p 1e-06 <= 0.002)".
func (v Verdict) String() string {
	cmp := ">"
	if v.P <= v.Level {
		cmp = "<="
	}
	return fmt.Sprintf("%.4g -> %.4g ms, faster in %d/%d rounds (p %.2g %s %.2g)", v.HeuristicMs, v.TunedMs, v.Faster, v.Rounds, v.P, cmp, v.Level)
}

// Judge compares paired samples (heur[i] and tuned[i] measured in the
// same round) of the heuristics' configuration and a tuned one: the tuned
// side wins when it is faster than (1 - margin) times the heuristics in so
// many rounds that a configuration no faster would do so with probability
// at most Alpha (a one-sided sign test), and the median ratio is under
// 1 - margin. A tie (equal times, the same configuration on both sides)
// or a loss never wins.
func Judge(heur, tuned []float64, margin float64) Verdict {
	return JudgeAt(heur, tuned, margin, Alpha)
}

// JudgeAt is Judge at significance level alpha instead of Alpha (a
// comparison that looks at its rounds more than once spends a share of
// Alpha at each look).
func JudgeAt(heur, tuned []float64, margin, alpha float64) Verdict {
	v := pairs(heur, tuned, margin)
	v.Level = alpha
	v.Win = v.Win && v.P <= alpha
	return v
}

// JudgeAll is Judge over several comparisons decided together (the
// kernel choices of one model), holding the chance that any choice no
// faster than the heuristics wins to Alpha: Holm's step-down, the
// smallest P tested at Alpha / m, the next at Alpha / (m - 1), and so on
// until one fails.
func JudgeAll(heur, tuned [][]float64, margin float64) []Verdict {
	vs := make([]Verdict, len(heur))
	for i := range heur {
		vs[i] = pairs(heur[i], tuned[i], margin)
	}
	order := make([]int, len(vs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return vs[order[a]].P < vs[order[b]].P })
	failed := false
	for rank, i := range order {
		v := &vs[i]
		v.Level = Alpha / float64(len(vs)-rank)
		failed = failed || v.P > v.Level
		v.Win = !failed && v.Win
	}
	return vs
}

// pairs counts the rounds won and the P of one comparison; Win is set
// from the ratios alone (JudgeAll adds the significance).
func pairs(heur, tuned []float64, margin float64) Verdict {
	n := min(len(heur), len(tuned))
	v := Verdict{Rounds: n, HeuristicMs: Median(heur[:n]), TunedMs: Median(tuned[:n])}
	ratios := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		r := math.Inf(1)
		if heur[i] > 0 && tuned[i] > 0 {
			r = tuned[i] / heur[i]
		}
		ratios = append(ratios, r)
		if r < 1-margin {
			v.Faster++
		}
	}
	v.P = signP(n, v.Faster)
	v.Win = n > 0 && Median(ratios) < 1-margin
	return v
}

// signP is P(Binomial(n, 1/2) >= k).
func signP(n, k int) float64 {
	p := 0.0
	for j := max(k, 0); j <= n; j++ {
		p += binomHalf(n, j)
	}
	return math.Min(p, 1)
}

// binomHalf is P(Binomial(n, 1/2) = k).
func binomHalf(n, k int) float64 {
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
	return math.Exp(lg(n) - lg(k) - lg(n-k) - float64(n)*math.Ln2)
}

// Interleave runs rounds rounds of heur and tuned, one of each per round,
// the one that goes first alternating (a drift of the load falls on both
// alike), and returns the samples each returned.
func Interleave(rounds int, heur, tuned func() (float64, error)) ([]float64, []float64, error) {
	hs := make([]float64, 0, rounds)
	ts := make([]float64, 0, rounds)
	for r := 0; r < rounds; r++ {
		first, second := heur, tuned
		if r%2 == 1 {
			first, second = tuned, heur
		}
		a, err := first()
		if err != nil {
			return hs, ts, err
		}
		b, err := second()
		if err != nil {
			return hs, ts, err
		}
		if r%2 == 1 {
			a, b = b, a
		}
		hs = append(hs, a)
		ts = append(ts, b)
	}
	return hs, ts, nil
}

// KeepsHeuristic reports whether the record keeps the heuristics' choice:
// the tuner, or the model-level confirmation, found nothing faster. The
// GPU device then runs what its heuristics pick today, which may be a
// newer choice than the record names.
func (r Record) KeepsHeuristic() bool { return r.Variant == r.Heuristic }

// Demote returns the record keeping the heuristics' choice instead of r's
// variant, with why (the model-level verdict) in Confirmed.
func (r Record) Demote(why string) Record {
	r.Confirmed = fmt.Sprintf("%s dropped: %s", r.Variant, why)
	r.Variant = r.Heuristic
	if r.HeuristicMs > 0 {
		r.Ms = r.HeuristicMs
	}
	r.Updated = ""
	return r
}

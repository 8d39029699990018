package tune

import (
	"slices"
	"sort"

	"github.com/clinfer/clinfer/kernels"
)

// Budget is how hard a mode searches one key.
type Budget struct {
	// Candidates is the most candidates timed per key (0: every one).
	Candidates int
	// WarmUp runs of a candidate are not timed; the median of Runs timed
	// runs is its time.
	WarmUp, Runs int
}

// Budget returns the mode's search budget: FAST times at most five
// candidates per key, once warmed, three runs each; EXHAUSTIVE every
// candidate, twice warmed, seven runs each. NONE times nothing.
func (m Mode) Budget() Budget {
	switch m {
	case Fast:
		return Budget{Candidates: 5, WarmUp: 1, Runs: 3}
	case Exhaustive:
		return Budget{WarmUp: 2, Runs: 7}
	}
	return Budget{}
}

// Order returns the candidates to time for one key, in this order and cut
// to the budget: the heuristic's choice (the baseline every record
// compares with), then the variants that won other keys of the family
// (their programs are often built already), then the first point of each
// other algorithm, then the heuristic's neighbours (one parameter moved
// one step), then the rest in table order. Only members of cands are
// returned, each once.
func Order(cands []kernels.Variant, heuristic kernels.Variant, winners []kernels.Variant, b Budget) []kernels.Variant {
	var out []kernels.Variant
	add := func(v kernels.Variant) {
		if slices.ContainsFunc(cands, v.Equal) && !slices.ContainsFunc(out, v.Equal) {
			out = append(out, v)
		}
	}
	add(heuristic)
	for _, w := range winners {
		add(w)
	}
	// Each other algorithm's point closest to the heuristic's (most
	// parameters of the same name at the same value; the first on a tie).
	var algs []string
	best := map[string]kernels.Variant{}
	score := map[string]int{}
	hv := heuristic.Point()
	for _, v := range cands {
		if v.Algorithm == heuristic.Algorithm {
			continue
		}
		s := 0
		for name, x := range v.Point() {
			if y, ok := hv[name]; ok && x == y {
				s++
			}
		}
		if _, ok := best[v.Algorithm]; !ok {
			algs = append(algs, v.Algorithm)
			best[v.Algorithm], score[v.Algorithm] = v, s
		} else if s > score[v.Algorithm] {
			best[v.Algorithm], score[v.Algorithm] = v, s
		}
	}
	for _, a := range algs {
		add(best[a])
	}
	type near struct {
		v    kernels.Variant
		dist int
	}
	var ns []near
	for _, v := range cands {
		if v.Algorithm == heuristic.Algorithm && len(v.Values) == len(heuristic.Values) {
			d := 0
			for i := range v.Values {
				if v.Values[i] != heuristic.Values[i] {
					d++
				}
			}
			ns = append(ns, near{v, d})
		}
	}
	sort.SliceStable(ns, func(i, j int) bool { return ns[i].dist < ns[j].dist })
	for _, n := range ns {
		add(n.v)
	}
	for _, v := range cands {
		add(v)
	}
	if b.Candidates > 0 && len(out) > b.Candidates {
		out = out[:b.Candidates]
	}
	return out
}

// Median returns the median of xs (0 for none); xs is not changed.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

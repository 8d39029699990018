// Package suggest finds the name a user probably meant when they misspelt
// one: a property key, a device, an input or output port. Every place that
// rejects an unknown name (driver's properties, device registry and
// bindings, graph's Reshape) asks it, so the hint reads the same
// everywhere.
//
// Where it sits in the data flow of DESIGN.md: beneath the user API, in
// the error messages of the packages that check names.
package suggest

import "strings"

// Closest returns the candidate nearest to name, comparing without case,
// when it is near enough to be a typing mistake (at most max(2, len/4)
// edits away; an exact match but for case always is), and "" otherwise.
// The first of equally near candidates wins.
func Closest(name string, candidates []string) string {
	best, bestDist := "", max(2, len(name)/4)+1
	up := strings.ToUpper(name)
	for _, c := range candidates {
		if d := editDistance(up, strings.ToUpper(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// DidYouMean returns "; did you mean X?" for Closest's answer, or "" when
// there is none or name is itself a candidate.
func DidYouMean(name string, candidates []string) string {
	s := Closest(name, candidates)
	if s == "" || s == name {
		return ""
	}
	return "; did you mean " + s + "?"
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

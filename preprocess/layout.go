package preprocess

import (
	"fmt"
	"strings"
)

// Layout names a tensor's axes, as OpenVINO's ov::Layout does: "NCHW" and
// "NHWC" (one letter an axis), or "[N,C,H,W]" (axis names of any length).
// The names the steps look for are N (batch), C (channels), H and W
// (height and width); "?" is an axis with no name. The zero Layout is
// unknown.
type Layout struct {
	names []string
}

// ParseLayout reads a layout: letters ("NCHW", "N?HW") or a bracketed
// list ("[N,C,H,W]"). A name may appear once.
func ParseLayout(s string) (Layout, error) {
	s = strings.TrimSpace(s)
	var names []string
	switch {
	case s == "":
		return Layout{}, fmt.Errorf("%w: empty layout", ErrInvalid)
	case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
		for _, f := range strings.Split(s[1:len(s)-1], ",") {
			names = append(names, strings.TrimSpace(f))
		}
	default:
		for _, r := range s {
			names = append(names, string(r))
		}
	}
	seen := map[string]bool{}
	for _, n := range names {
		switch {
		case n == "" || n == "...":
			return Layout{}, fmt.Errorf("%w: layout %q: axis names must be non-empty (\"...\" is not supported)", ErrInvalid, s)
		case n == "?":
		case seen[n]:
			return Layout{}, fmt.Errorf("%w: layout %q names axis %s twice", ErrInvalid, s, n)
		}
		seen[n] = true
	}
	return Layout{names: names}, nil
}

// MustLayout is ParseLayout for layouts written in the program; it panics
// on a bad one (a programmer error).
func MustLayout(s string) Layout {
	l, err := ParseLayout(s)
	if err != nil {
		panic(err)
	}
	return l
}

// Known reports whether the layout is set.
func (l Layout) Known() bool { return len(l.names) > 0 }

// Rank is the number of axes.
func (l Layout) Rank() int { return len(l.names) }

// Index returns the axis named name, or -1.
func (l Layout) Index(name string) int {
	for i, n := range l.names {
		if n == name {
			return i
		}
	}
	return -1
}

// Equal reports whether l and o name the same axes in the same order.
func (l Layout) Equal(o Layout) bool {
	if len(l.names) != len(o.names) {
		return false
	}
	for i := range l.names {
		if l.names[i] != o.names[i] {
			return false
		}
	}
	return true
}

// String writes the layout as letters when every name is one, else in
// brackets.
func (l Layout) String() string {
	short := true
	for _, n := range l.names {
		if len(n) != 1 {
			short = false
		}
	}
	if short {
		return strings.Join(l.names, "")
	}
	return "[" + strings.Join(l.names, ",") + "]"
}

// permutation returns perm such that a tensor of layout from transposed
// by perm has layout to (perm[i] is the axis of from that becomes axis i).
func permutation(from, to Layout) ([]int64, error) {
	if from.Rank() != to.Rank() {
		return nil, fmt.Errorf("%w: layouts %v and %v have different ranks", ErrInvalid, from, to)
	}
	perm := make([]int64, to.Rank())
	for i, n := range to.names {
		j := from.Index(n)
		if n == "?" || j < 0 {
			return nil, fmt.Errorf("%w: layout %v has no axis %q of layout %v (name every axis to convert between them)", ErrInvalid, from, n, to)
		}
		perm[i] = int64(j)
	}
	return perm, nil
}

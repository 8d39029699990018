package conformance

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// opTypeRE finds the op an unsupported-op error names, to group the
// summary by op.
var opTypeRE = regexp.MustCompile(`op (?:type )?"?([A-Za-z0-9_.]+)`)

// typeRE finds the data type an unsupported-type error names, to group the
// summary by type.
var typeRE = regexp.MustCompile(`unsupported data type: ([A-Z][A-Z0-9_]*)`)

// typeOf names the unsupported data type of an unsupported-type error.
func typeOf(err error) string {
	msg := fmt.Sprint(err)
	if strings.Contains(msg, "is not a tensor") {
		return "sequence/optional/map value"
	}
	if m := typeRE.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return msg
}

// summary collects outcomes from parallel subtests.
type summary struct {
	mu     sync.Mutex
	cases  map[string]Outcome // by "dir/case"
	counts map[string]*[numOutcomes]int
	failed []string
	unsup  map[string]int
	types  map[string]int
}

func newSummary() *summary {
	return &summary{cases: map[string]Outcome{}, counts: map[string]*[numOutcomes]int{}, unsup: map[string]int{}, types: map[string]int{}}
}

// outcomes returns a copy of the outcome of every case added so far.
func (s *summary) outcomes() map[string]Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Outcome, len(s.cases))
	for k, o := range s.cases {
		out[k] = o
	}
	return out
}

func (s *summary) add(dir, key string, out Outcome, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.counts[dir]
	if c == nil {
		c = new([numOutcomes]int)
		s.counts[dir] = c
	}
	c[out]++
	s.cases[key] = out
	switch out {
	case Failed:
		msg := fmt.Sprint(err)
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		s.failed = append(s.failed, key+": "+msg)
	case UnsupportedOp:
		what := fmt.Sprint(err)
		if m := opTypeRE.FindStringSubmatch(what); m != nil {
			what = m[1]
		}
		s.unsup[what]++
	case UnsupportedType:
		s.types[typeOf(err)]++
	}
}

// table formats the per-directory counts.
func (s *summary) table(device string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	cols := []Outcome{Passed, Failed, UnsupportedOp, UnsupportedType, Excluded}
	var b strings.Builder
	fmt.Fprintf(&b, "ONNX backend suite on %s\n", device)
	row := func(name string, c *[numOutcomes]int) {
		fmt.Fprintf(&b, "%-20s", name)
		total := 0
		for _, o := range cols {
			fmt.Fprintf(&b, " %*d", len(o.String()), c[o])
			total += c[o]
		}
		fmt.Fprintf(&b, " %7d\n", total)
	}
	fmt.Fprintf(&b, "%-20s", "dir")
	for _, o := range cols {
		fmt.Fprintf(&b, " %s", o)
	}
	fmt.Fprintf(&b, " %7s\n", "total")
	var tot [numOutcomes]int
	for _, dir := range Dirs {
		c := s.counts[dir]
		if c == nil {
			c = new([numOutcomes]int)
		}
		for i := range tot {
			tot[i] += c[i]
		}
		row(dir, c)
	}
	row("total", &tot)
	return b.String()
}

// details lists the failed cases and the distinct unsupported-op errors.
func (s *summary) details() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	sort.Strings(s.failed)
	fmt.Fprintf(&b, "\nfailed (%d):\n", len(s.failed))
	for _, f := range s.failed {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	msgs := make([]string, 0, len(s.unsup))
	for m := range s.unsup {
		msgs = append(msgs, m)
	}
	sort.Strings(msgs)
	fmt.Fprintf(&b, "\nunsupported ops (cases per op):\n")
	for _, m := range msgs {
		fmt.Fprintf(&b, "  %4d  %s\n", s.unsup[m], m)
	}
	types := make([]string, 0, len(s.types))
	for k := range s.types {
		types = append(types, k)
	}
	sort.Strings(types)
	fmt.Fprintf(&b, "\nunsupported data types (cases per type):\n")
	for _, k := range types {
		fmt.Fprintf(&b, "  %4d  %s\n", s.types[k], k)
	}
	return b.String()
}

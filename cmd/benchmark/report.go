package main

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// summarize computes the latency percentiles (nearest rank).
func summarize(lat []time.Duration) Latency {
	if len(lat) == 0 {
		return Latency{}
	}
	s := append([]time.Duration(nil), lat...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	pct := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.5) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Latency{Median: ms(med), Avg: ms(sum / time.Duration(len(s))), Min: ms(s[0]), Max: ms(s[len(s)-1]), P90: ms(pct(0.9)), P99: ms(pct(0.99))}
}

// progress reports progress as a bar on a terminal and as a line per
// second otherwise. It is safe for concurrent use.
type progress struct {
	bar   *progressbar.ProgressBar
	out   io.Writer
	total int // inferences (niter) or 0 for a time budget
	mu    sync.Mutex
	last  time.Time
	start time.Time
	count int
}

func newProgress(out io.Writer, terminal bool, niter int, budget time.Duration) *progress {
	p := &progress{out: out, total: niter, start: time.Now(), last: time.Now()}
	if terminal {
		if niter > 0 {
			p.bar = progressbar.NewOptions(niter, progressbar.OptionSetWriter(out), progressbar.OptionSetDescription("inferences"), progressbar.OptionShowCount())
		} else {
			p.bar = progressbar.NewOptions(int(budget.Milliseconds()), progressbar.OptionSetWriter(out), progressbar.OptionSetDescription("ms"))
		}
	}
	return p
}

func (p *progress) add() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count++
	now := time.Now()
	if p.bar != nil {
		if p.total > 0 {
			_ = p.bar.Add(1)
		} else {
			_ = p.bar.Set(int(now.Sub(p.start).Milliseconds()))
		}
		return
	}
	if now.Sub(p.last) >= time.Second {
		p.last = now
		fmt.Fprintf(p.out, "progress   %d inferences in %.1f s\n", p.count, now.Sub(p.start).Seconds())
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.out)
	}
}

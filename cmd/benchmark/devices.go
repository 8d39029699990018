package main

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/clinfer/clinfer/auto"  // registers "AUTO"
	"github.com/clinfer/clinfer/batch" // registers "BATCH"
	"github.com/clinfer/clinfer/plugin/driver"
)

// TimelineEntry is one change of the devices serving an AUTO compiled
// model in the JSON report.
type TimelineEntry struct {
	// AtMS is the time since CompileModel started, in milliseconds.
	AtMS float64 `json:"at_ms"`
	// Devices are the devices serving from then on.
	Devices string `json:"devices"`
}

// deviceLog counts the inferences each device ran, for devices whose
// requests say (AUTO's). It is safe for concurrent use.
type deviceLog struct {
	mu     sync.Mutex
	counts map[string]int
}

// add counts r's last inference.
func (l *deviceLog) add(r *driver.AsyncInferRequest) {
	ar, ok := r.Sync().(*auto.InferRequest)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil {
		l.counts = map[string]int{}
	}
	l.counts[ar.Device()]++
}

// snapshot returns the counts (nil when no device said).
func (l *deviceLog) snapshot() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.counts) == 0 {
		return nil
	}
	out := make(map[string]int, len(l.counts))
	for k, v := range l.counts {
		out[k] = v
	}
	return out
}

// timeline returns an AUTO compiled model's device timeline (nil for other
// devices).
func timeline(cm driver.CompiledModel) []TimelineEntry {
	ac, ok := cm.(*auto.CompiledModel)
	if !ok {
		return nil
	}
	var out []TimelineEntry
	for _, s := range ac.Timeline() {
		out = append(out, TimelineEntry{AtMS: ms(s.At), Devices: s.Devices})
	}
	return out
}

// describeTimeline renders a timeline as "CPU until 1.23 s, then GPU.0".
func describeTimeline(tl []TimelineEntry) string {
	var b strings.Builder
	for i, e := range tl {
		if i > 0 {
			b.WriteString(", then ")
		}
		b.WriteString(e.Devices)
		if i+1 < len(tl) {
			fmt.Fprintf(&b, " until %.2f s", tl[i+1].AtMS/1e3)
		}
	}
	return b.String()
}

// describeCounts renders per-device counts in decreasing order.
func describeCounts(counts map[string]int) string {
	devs := make([]string, 0, len(counts))
	for d := range counts {
		devs = append(devs, d)
	}
	sort.Slice(devs, func(i, j int) bool {
		if counts[devs[i]] != counts[devs[j]] {
			return counts[devs[i]] > counts[devs[j]]
		}
		return devs[i] < devs[j]
	})
	parts := make([]string, len(devs))
	for i, d := range devs {
		parts[i] = fmt.Sprintf("%s %d", d, counts[d])
	}
	return strings.Join(parts, ", ")
}

// batchLine describes a BATCH compiled model's batching ("" for other
// devices).
func batchLine(cm driver.CompiledModel) string {
	bc, ok := cm.(*batch.CompiledModel)
	if !ok {
		return ""
	}
	size, _ := cm.Property(batch.KeyOptimalBatchSize)
	st := bc.Stats()
	return fmt.Sprintf("batch size %s: %d batched inferences, %d requests ran alone", size, st.Batches, st.Alone)
}

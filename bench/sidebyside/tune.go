package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/clinfer/clinfer/bench"
)

// The -tune report of `make bench-tune`: the figures next to the model
// table that say whether the tuned kernels use the device: SGEMM 1024 as a
// share of the FP32 FMA peak, the data-movement kernels' bandwidth as a
// share of the copy bandwidth, and the cmd/tune passes.

// metrics are the benchmarks' figures in units other than time (gflops,
// GB/s, ...), by benchmark name (without the GOMAXPROCS suffix) and unit,
// every run's value.
type metrics map[string]map[string][]float64

// timeUnits are the units the model table reads; a benchmark reporting
// another unit is a figure of the -tune report, not a table row.
var timeUnits = map[string]bool{"ns/op": true, "ms/infer": true, "infer/s": true}

// parseMetrics reads the non-time metrics of `go test -bench` output, and
// the benchmark device's name (a "device: ..." line).
func parseMetrics(r io.Reader) (metrics, string, error) {
	out := metrics{}
	device := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "device: "); ok {
			device = strings.TrimSpace(d)
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		name := trimProcs(strings.TrimPrefix(fields[0], "Benchmark"))
		for i := 3; i < len(fields); i += 2 {
			unit := fields[i]
			if timeUnits[unit] {
				continue
			}
			var v float64
			if _, err := fmt.Sscan(fields[i-1], &v); err != nil {
				continue
			}
			if out[name] == nil {
				out[name] = map[string][]float64{}
			}
			out[name][unit] = append(out[name][unit], v)
		}
	}
	return out, device, sc.Err()
}

// get returns the median of a benchmark's metric and whether it has one.
func (m metrics) get(name, unit string) (float64, bool) {
	v := m[name][unit]
	if len(v) == 0 {
		return 0, false
	}
	return bench.Median(v), true
}

// hasMetrics reports whether benchmark name reports any non-time metric.
func (m metrics) has(name string) bool { return len(m[name]) > 0 }

// tuneRun is what bench-tune reads of a cmd/tune -json report.
type tuneRun struct {
	Model       string  `json:"model"`
	Shapes      string  `json:"shapes"`
	Mode        string  `json:"mode"`
	TuneSeconds float64 `json:"tune_seconds"`
	BeforeMs    float64 `json:"before_ms"`
	AfterMs     float64 `json:"after_ms"`
	Tuned       int     `json:"tuned"`
	Recorded    int     `json:"recorded"`
}

// readTuneRuns reads cmd/tune -json reports.
func readTuneRuns(paths []string) ([]tuneRun, error) {
	var out []tuneRun
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var r tuneRun
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// writeTuneReport prints the figures of the -tune report.
func writeTuneReport(w io.Writer, m metrics, device string, runs []tuneRun) error {
	if device != "" {
		fmt.Fprintf(w, "\ndevice (GPU): %s\n", device)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\treference\tshare\t")
	peak, hasPeak := m.get("PeakFMA", "gflops")
	if hasPeak {
		fmt.Fprintf(tw, "FP32 FMA peak (BenchmarkPeakFMA)\t%.1f GFLOPS\t\t\t\n", peak)
	}
	for _, v := range []string{"GPU-none", "GPU-tuned"} {
		if g, ok := m.get("SGEMMTuned/"+v, "gflops"); ok {
			share := "-"
			if hasPeak {
				share = fmt.Sprintf("%.0f%%", 100*g/peak)
			}
			fmt.Fprintf(tw, "SGEMM 1024 (%s)\t%.1f GFLOPS\tpeak\t%s\t\n", v, g, share)
		}
	}
	cp, hasCopy := m.get("Copy/d2d/64MiB", "GB/s")
	if hasCopy {
		fmt.Fprintf(tw, "copy bandwidth (BenchmarkCopy d2d 64MiB)\t%.1f GB/s\t\t\t\n", cp)
	}
	var kinds []string
	for unit := range m["DataMovement"] {
		kinds = append(kinds, unit)
	}
	sort.Strings(kinds)
	for _, unit := range kinds {
		g, _ := m.get("DataMovement", unit)
		kind := strings.TrimSuffix(unit, "-GB/s")
		if unit == "GB/s" {
			kind = "all"
		}
		share := "-"
		if hasCopy {
			share = fmt.Sprintf("%.0f%%", 100*g/cp)
		}
		fmt.Fprintf(tw, "det 640 data movement: %s\t%.1f GB/s\tcopy\t%s\t\n", kind, g, share)
	}
	for _, r := range runs {
		fmt.Fprintf(tw, "cmd/tune -mode %s %s %s\t%.1f s\t%d timed, %d recorded\tbefore %.2f ms, after %.2f ms: %.2fx\t\n",
			strings.ToLower(r.Mode), r.Model, r.Shapes, r.TuneSeconds, r.Tuned, r.Recorded, r.BeforeMs, r.AfterMs, r.BeforeMs/r.AfterMs)
	}
	return tw.Flush()
}

// trimProcs drops a benchmark name's -GOMAXPROCS suffix.
func trimProcs(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		allDigits := i+1 < len(name)
		for _, c := range name[i+1:] {
			allDigits = allDigits && c >= '0' && c <= '9'
		}
		if allDigits {
			return name[:i]
		}
	}
	return name
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Report is one run of the benchmark (the -json file).
type Report struct {
	// Date is when the run started (UTC).
	Date string `json:"date"`
	// Devices name clinfer's devices: "GPU = <FULL_DEVICE_NAME>" (the
	// POCL target on POCL).
	Devices []string `json:"devices"`
	// ORTVersion and ORTThreads describe ONNX Runtime's side.
	ORTVersion string `json:"ort_version,omitempty"`
	ORTThreads int    `json:"ort_threads,omitempty"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	// LoadStart and LoadEnd are the load averages at the start and end.
	LoadStart string `json:"load_start"`
	LoadEnd   string `json:"load_end"`
	// Rounds and Seconds are the timing flags.
	Rounds     int      `json:"rounds"`
	Seconds    float64  `json:"seconds"`
	MaxSeconds float64  `json:"max_seconds"`
	Configs    []string `json:"configs"`
	Rows       []Row    `json:"rows"`
}

// Row is one model at one input size.
type Row struct {
	Key     string             `json:"key"`
	Label   string             `json:"label"`
	Model   string             `json:"model"`
	Input   string             `json:"input"`
	Results map[string]*Result `json:"results"`
}

// Result is one configuration of a row.
type Result struct {
	// MedianMS is the median latency over Runs timed inferences.
	MedianMS float64 `json:"median_ms,omitempty"`
	Runs     int     `json:"runs,omitempty"`
	// CompileMS is CompileModel's time (ONNX Runtime: the session's
	// creation and warm-up).
	CompileMS float64 `json:"compile_ms,omitempty"`
	// Choices and Shipped count the GPU plan's kernel variant choices and
	// those a shipped tuning record changed from the heuristics' (a
	// record keeping the heuristics is not counted).
	Choices int `json:"choices,omitempty"`
	Shipped int `json:"shipped,omitempty"`
	// Error is why the configuration did not run.
	Error string `json:"error,omitempty"`
}

// shippedNote says how many kernel choices the shipped database made.
func (r *Result) shippedNote() string {
	if r.Choices == 0 {
		return ""
	}
	return fmt.Sprintf(", %d of %d kernel choices shipped", r.Shipped, r.Choices)
}

func readReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	return &r, nil
}

func writeReport(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// The README's table sits between these markers.
const (
	tableBegin = "<!-- bench-models:begin (make bench-models writes this table from its run, docs/bench-models.json) -->"
	tableEnd   = "<!-- bench-models:end -->"
)

// renderTable is the run as the README's Markdown: a line naming the
// devices, ONNX Runtime and the load, then one row per model.
func renderTable(r *Report) string {
	var b strings.Builder
	ort := "ONNX Runtime"
	if r.ORTVersion != "" {
		ort = fmt.Sprintf("ONNX Runtime %s (CPU, %d threads)", r.ORTVersion, r.ORTThreads)
	}
	fmt.Fprintf(&b, "Run of %s: %s; %s; GOMAXPROCS %d; load average %s at the start, %s at the end. "+
		"Medians of synchronous inferences (PERFORMANCE_HINT=LATENCY) over %g s per cell in %d interleaved rounds (at least one inference each; a cell stops after %g s of timed runs); "+
		"GPU heuristics: `GPU_SHIPPED_TUNING=NO`, tuned: the shipped database (its share of the kernel choices in brackets), both `GPU_IN_THREAD=NO` (POCL's worker threads), in-thread: heuristics with `GPU_IN_THREAD=AUTO`, the default (small plans in the calling thread on POCL's basic device); "+
		"ratios are clinfer GPU over ONNX Runtime; GPU compile is the first GPU CompileModel of the model in the process (heuristics), with its warm-up run, no CACHE_DIR, POCL's kernel cache as the environment leaves it.\n\n",
		r.Date, strings.Join(r.Devices, ", "), ort, r.GOMAXPROCS, r.LoadStart, r.LoadEnd, r.Seconds, r.Rounds, r.MaxSeconds)
	b.WriteString("| model | input | clinfer CPU | GPU heuristics | GPU tuned | GPU in-thread | ORT | GPU / ORT heuristics, tuned, in-thread | GPU compile |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		cell := func(c string) string {
			res := row.Results[c]
			switch {
			case res == nil:
				return "-"
			case res.Error != "":
				return "fails"
			}
			s := formatMS(res.MedianMS)
			if c == cfgGPUTuned && res.Choices > 0 {
				s += fmt.Sprintf(" (%d/%d)", res.Shipped, res.Choices)
			}
			return s
		}
		ratio := func(c string) string {
			res, o := row.Results[c], row.Results[cfgORT]
			if res == nil || o == nil || res.Error != "" || o.Error != "" || o.MedianMS == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2fx", res.MedianMS/o.MedianMS)
		}
		compile := "-"
		if res := row.Results[cfgGPU]; res != nil && res.Error == "" {
			compile = formatMS(res.CompileMS)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s, %s, %s | %s |\n", row.Label, row.Input,
			cell(cfgCPU), cell(cfgGPU), cell(cfgGPUTuned), cell(cfgGPUInThread), cell(cfgORT),
			ratio(cfgGPU), ratio(cfgGPUTuned), ratio(cfgGPUInThread), compile)
	}
	for _, row := range r.Rows {
		for _, c := range r.Configs {
			if res := row.Results[c]; res != nil && res.Error != "" {
				fmt.Fprintf(&b, "\n%s on %s fails: %s\n", row.Key, c, res.Error)
			}
		}
	}
	return b.String()
}

// formatMS prints a latency with 3 significant digits, in seconds from 1 s.
func formatMS(ms float64) string {
	switch {
	case ms >= 1000:
		return fmt.Sprintf("%.2f s", ms/1000)
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1f ms", ms)
	case ms >= 1:
		return fmt.Sprintf("%.2f ms", ms)
	}
	return fmt.Sprintf("%.3f ms", ms)
}

// readmeBlock returns the README's text and the bounds of the table
// between the markers.
func readmeBlock(path string) (text string, start, end int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", 0, 0, err
	}
	text = string(b)
	i := strings.Index(text, tableBegin)
	j := strings.Index(text, tableEnd)
	if i < 0 || j < i {
		return "", 0, 0, fmt.Errorf("%s has no %q ... %q block for the table", path, tableBegin, tableEnd)
	}
	return text, i + len(tableBegin) + 1, j, nil
}

// writeReadme puts the table between the README's markers.
func writeReadme(path, table string) error {
	text, start, end, err := readmeBlock(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text[:start]+table+text[end:]), 0o644)
}

// checkReadme fails when the README's table is not table.
func checkReadme(path, table string) error {
	text, start, end, err := readmeBlock(path)
	if err != nil {
		return err
	}
	if text[start:end] != table {
		return fmt.Errorf("%s: the bench-models table is stale: run `go run ./bench/modelbench -from docs/bench-models.json -readme %s` (or `make bench-models`)", path, path)
	}
	return nil
}

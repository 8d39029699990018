package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/clinfer/clinfer/bench"
)

func main() {
	goPath := flag.String("go", "", "output of `go test -bench` (required)")
	ortPath := flag.String("ort", "", "output of scripts/ortref/bench.js (optional)")
	tunePaths := flag.String("tune", "", "comma-separated cmd/tune -json reports: also print the bench-tune figures (peak, SGEMM, bandwidth, tuning passes)")
	flag.Parse()
	if err := run(*goPath, *ortPath, *tunePaths, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sidebyside:", err)
		os.Exit(1)
	}
}

func run(goPath, ortPath, tunePaths string, w io.Writer) error {
	if goPath == "" {
		return fmt.Errorf("-go is required")
	}
	f, err := os.Open(goPath)
	if err != nil {
		return err
	}
	defer f.Close()
	goRes, err := parseGoBench(f)
	if err != nil {
		return fmt.Errorf("%s: %w", goPath, err)
	}
	var ort []ortRecord
	if ortPath != "" {
		g, err := os.Open(ortPath)
		if err != nil {
			return err
		}
		defer g.Close()
		if ort, err = parseORT(g); err != nil {
			return fmt.Errorf("%s: %w", ortPath, err)
		}
	}
	if err := writeTable(w, goRes, ort); err != nil {
		return err
	}
	if tunePaths == "" {
		return nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	m, device, err := parseMetrics(f)
	if err != nil {
		return fmt.Errorf("%s: %w", goPath, err)
	}
	runs, err := readTuneRuns(strings.Split(tunePaths, ","))
	if err != nil {
		return err
	}
	return writeTuneReport(w, m, device, runs)
}

// result is one clinfer benchmark: its model key, device and median time.
type result struct {
	key, device string
	ms          float64
	runs        int
}

// parseGoBench reads `go test -bench` output and returns one result per
// benchmark, with the median over repeated runs.
func parseGoBench(r io.Reader) ([]result, error) {
	samples := map[[2]string][]float64{}
	var order [][2]string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		name := strings.TrimPrefix(fields[0], "Benchmark")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i] // GOMAXPROCS suffix
			}
		}
		if otherMetric(fields) {
			continue // a figure of the -tune report (gflops, GB/s)
		}
		ms, ok := metric(fields, "ms/infer", 1)
		if !ok {
			if ms, ok = metric(fields, "ns/op", 1e-6); !ok {
				continue
			}
		}
		parts := strings.Split(name, "/")
		k := [2]string{parts[0], ""}
		switch {
		case len(parts) >= 3:
			k = [2]string{parts[len(parts)-2], parts[len(parts)-1]}
		case len(parts) == 2:
			k = [2]string{parts[0], parts[1]}
		}
		if _, seen := samples[k]; !seen {
			order = append(order, k)
		}
		samples[k] = append(samples[k], ms)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("no benchmark results (did the benchmarks fail?)")
	}
	res := make([]result, len(order))
	for i, k := range order {
		res[i] = result{key: k[0], device: k[1], ms: bench.Median(samples[k]), runs: len(samples[k])}
	}
	return res, nil
}

// otherMetric reports whether a benchmark line reports a unit that is not
// a time.
func otherMetric(fields []string) bool {
	for i := 3; i < len(fields); i += 2 {
		if !timeUnits[fields[i]] {
			return true
		}
	}
	return false
}

// metric finds "<value> <unit>" in a benchmark line and scales the value.
func metric(fields []string, unit string, scale float64) (float64, bool) {
	for i := 2; i < len(fields); i++ {
		if fields[i] == unit {
			v, err := strconv.ParseFloat(fields[i-1], 64)
			return v * scale, err == nil
		}
	}
	return 0, false
}

// ortRecord is one line of bench.js output.
type ortRecord struct {
	Model    string  `json:"model"`
	Shape    string  `json:"shape"`
	Threads  int     `json:"threads"`
	MedianMS float64 `json:"median_ms"`
}

// parseORT reads bench.js output, skipping lines that are not its records.
func parseORT(r io.Reader) ([]ortRecord, error) {
	var out []ortRecord
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var rec ortRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Model == "" || rec.MedianMS <= 0 {
			continue
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}

// match finds the ORT record for a clinfer benchmark key "<kind>_<dims>".
func match(key string, recs []ortRecord) (ortRecord, bool) {
	i := strings.LastIndexByte(key, '_')
	if i < 0 {
		return ortRecord{}, false
	}
	kind, dims := key[:i], key[i+1:]
	for _, r := range recs {
		_, shape, _ := strings.Cut(r.Shape, "=")
		if shape != dims {
			continue
		}
		words := strings.FieldsFunc(strings.TrimSuffix(r.Model, ".onnx"), func(c rune) bool { return c == '_' || c == '-' || c == '.' })
		for _, w := range words {
			if w == kind {
				return r, true
			}
		}
	}
	return ortRecord{}, false
}

func writeTable(w io.Writer, res []result, ort []ortRecord) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\tdevice\truns\tclinfer ms\tORT ms\tORT threads\tclinfer/ORT\t")
	for _, r := range res {
		o, th, ratio := "-", "-", "-"
		if rec, ok := match(r.key, ort); ok {
			o = fmt.Sprintf("%.2f", rec.MedianMS)
			th = fmt.Sprint(rec.Threads)
			ratio = fmt.Sprintf("%.2fx", r.ms/rec.MedianMS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%s\t%s\t%s\t\n", r.key, r.device, r.runs, r.ms, o, th, ratio)
	}
	return tw.Flush()
}

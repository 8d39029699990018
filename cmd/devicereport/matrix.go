package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Markers delimit the generated matrix in the README.
const (
	matrixBegin = "<!-- device-matrix:begin (make device-matrix writes this table from docs/devices/*.json) -->"
	matrixEnd   = "<!-- device-matrix:end -->"
)

// updateMatrix regenerates the README's "Devices tested" table from the
// reports in dir; with check it fails when the README differs instead.
func updateMatrix(dir, readme string, check bool, out io.Writer) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no device reports (*.json) in %s: run the device bundle and copy its report.json there", dir)
	}
	var reps []namedReport
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r Report
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if len(r.Devices) == 0 {
			return fmt.Errorf("%s: the report has no device", f)
		}
		reps = append(reps, namedReport{strings.TrimSuffix(filepath.Base(f), ".json"), r})
	}
	table := matrixTable(reps)
	old, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	i, j := bytes.Index(old, []byte(matrixBegin)), bytes.Index(old, []byte(matrixEnd))
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q ... %q section to fill", readme, matrixBegin, matrixEnd)
	}
	updated := append(append(append([]byte{}, old[:i+len(matrixBegin)]...), "\n"+table...), old[j:]...)
	if bytes.Equal(updated, old) {
		fmt.Fprintf(out, "devicereport: %s's device matrix is up to date (%d reports)\n", readme, len(reps))
		return nil
	}
	if check {
		return errors.New(readme + "'s device matrix is stale: run `make device-matrix` and commit the result")
	}
	fmt.Fprintf(out, "devicereport: wrote the device matrix of %d reports into %s\n", len(reps), readme)
	return os.WriteFile(readme, updated, 0o644)
}

// namedReport is a committed report and its file stem.
type namedReport struct {
	stem string
	Report
}

// matrixTable is the README table: one row per device of every report.
func matrixTable(reps []namedReport) string {
	var b strings.Builder
	b.WriteString("| device | driver | suites passed | det 640 latency | SGEMM 1024 | f16 | report |\n|---|---|---|---|---|---|---|\n")
	for _, r := range reps {
		for _, d := range r.Devices {
			passed, total := 0, 0
			for _, s := range append(append([]Suite{}, r.Machine...), d.Suites...) {
				if s.Passed+s.Failed+s.Skipped == 0 {
					continue // a benchmark step
				}
				total++
				if s.ok() {
					passed++
				}
			}
			det := "-"
			for _, m := range d.Bench.Models {
				if m.Name == "det_1x3x640x640" && m.LatencyMS > 0 {
					det = fmt.Sprintf("%s ms", num(m.LatencyMS))
				}
			}
			gemm := "-"
			for _, s := range d.Bench.SGEMM {
				if s.N == 1024 && s.Impl == "clinfer" && s.GFLOPS > 0 {
					gemm = fmt.Sprintf("%s GFLOPS", num(s.GFLOPS))
				}
			}
			quick := ""
			if r.Quick {
				quick = " (quick)"
			}
			if !r.Complete {
				quick += " (incomplete run)"
			}
			f16, _, _ := strings.Cut(d.F16, " (")
			fmt.Fprintf(&b, "| %s (%s) | %s | %d/%d%s | %s | %s | %s | [%s](docs/devices/%s.md) |\n",
				d.Name, d.Type, d.Driver, passed, total, quick, det, gemm, orDash(f16), r.stem, r.stem)
		}
	}
	return b.String()
}

package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/clinfer/clinfer/tests/conformance"
)

// devices are the devices whose suite outcomes the matrix counts.
var devices = []string{"CPU", "GPU"}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ops:", err)
		os.Exit(1)
	}
}

// run parses the flags and writes or checks the matrix.
func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ops", flag.ContinueOnError)
	casesDir := fs.String("cases", "clinfer-out", "directory with conformance-cases-{CPU,GPU}.txt from the ONNX backend suite ($CONFORMANCE_CASES)")
	out := fs.String("o", "OPS.md", "file to write")
	check := fs.String("check", "", "compare the matrix with this file instead of writing; fail when it differs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	outcomes := map[string]map[string]conformance.Outcome{}
	for _, d := range devices {
		p := filepath.Join(*casesDir, "conformance-cases-"+d+".txt")
		c, err := conformance.ReadCases(p)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no ONNX backend outcomes for %s in %s: run `make ops` (it runs the suite), or the suite with %s=%s", d, p, conformance.EnvCases, filepath.Join(*casesDir, "conformance-cases-{device}.txt"))
		}
		if err != nil {
			return err
		}
		outcomes[d] = c
	}
	var buf bytes.Buffer
	if err := write(&buf, rows(), passCounts(outcomes, conformance.CaseOps)); err != nil {
		return err
	}
	if *check != "" {
		old, err := os.ReadFile(*check)
		if err != nil {
			return fmt.Errorf("reading %s: %w", *check, err)
		}
		if line, diff := firstDiff(old, buf.Bytes()); diff {
			return fmt.Errorf("%s is stale (line %d differs from what the tables and the suite give): run `make ops` and commit it", *check, line)
		}
		fmt.Fprintf(stdout, "%s is up to date\n", *check)
		return nil
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", *out, err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}

// firstDiff returns the first line (1-based) where a and b differ.
func firstDiff(a, b []byte) (int, bool) {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range max(len(al), len(bl)) {
		if i >= len(al) || i >= len(bl) || al[i] != bl[i] {
			return i + 1, true
		}
	}
	return 0, false
}

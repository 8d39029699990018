package tests

import (
	"context"
	"path/filepath"
	"testing"

	_ "github.com/clinfer/clinfer/cpu_fallback" // registers the "CPU" device
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tests/conformance"
)

// TestRecurrentCasesCPU runs LSTM, GRU and RNN cases with the attributes
// the ONNX backend suite leaves out (bidirectional, reverse,
// sequence_lens, clip, input_forget, linear_before_reset, activations
// with alpha and beta) against ONNX Runtime's outputs
// (tests/testdata/recurrent, scripts/ortref/recurrent_cases.js).
func TestRecurrentCasesCPU(t *testing.T) { recurrentCases(t, "CPU") }

func recurrentCases(t *testing.T, device string) {
	ortCases(t, device, "recurrent", "scripts/ortref/recurrent_cases.js")
}

// TestNewerOpsCasesCPU runs Col2Im, CenterCropPad and AffineGrid cases,
// ops newer than the installed ONNX backend suite, against ONNX
// Runtime's outputs (tests/testdata/newerops,
// scripts/ortref/newer_ops_cases.js).
func TestNewerOpsCasesCPU(t *testing.T) {
	ortCases(t, "CPU", "newerops", "scripts/ortref/newer_ops_cases.js")
}

// ortCases runs every backend-style case under tests/testdata/<sub> (made
// by script with ONNX Runtime's outputs) on device.
func ortCases(t *testing.T, device, sub, script string) {
	root, err := conformance.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := filepath.Glob(filepath.Join(root, "tests", "testdata", sub, "*", "model.onnx"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases under tests/testdata/%s (%s): %v", sub, script, err)
	}
	core := driver.NewCore()
	defer core.Close()
	for _, m := range dirs {
		dir := filepath.Dir(m)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			out, err := conformance.RunCase(context.Background(), core, device, dir)
			if out != conformance.Passed {
				t.Errorf("%s on %s: %v: %v", filepath.Base(dir), device, out, err)
			}
		})
	}
}

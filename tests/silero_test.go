package tests

import (
	"context"
	"testing"

	_ "github.com/clinfer/clinfer/cpu_fallback" // registers the "CPU" device

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tests/conformance"
)

// TestSileroCPU streams Silero VAD v4, v5 and v6 (make models) over 200
// chunks of the synthetic signal at 16 kHz and 8 kHz on the CPU, feeding
// the state back, with explicit states and stateful (MAKE_STATEFUL), and
// checks every chunk's speech probability and the final state against
// ONNX Runtime 1.30 within 1e-4 (tests/testdata/silero, make refs).
func TestSileroCPU(t *testing.T) { conformance.Silero(t, "CPU", 0, true, nil) }

// TestSileroNestedIfsFoldCPU: with fixed input shapes, Silero's nested Ifs
// (8 in v4, 24 in v5 and v6, deciding on shapes) are gone from the
// network the sample rate picks: the CPU's runtime model has the one
// top-level If on the sample rate, and none in the branch it takes.
func TestSileroNestedIfsFoldCPU(t *testing.T) { sileroNestedIfs(t, "CPU") }

func sileroNestedIfs(t *testing.T, device string) {
	cases, err := conformance.SileroCases()
	if err != nil {
		t.Fatal(err)
	}
	core := driver.NewCore()
	defer core.Close()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			top, nested, err := conformance.SileroNestedIfs(context.Background(), core, device, c)
			if err != nil {
				t.Fatal(err)
			}
			if top != 1 || nested != 0 {
				t.Errorf("%s on %s: %d top-level Ifs (want 1, on the sample rate) and %d Ifs in the %d Hz branch (want 0)", c.Model, device, top, nested, c.SR)
			}
		})
	}
}

// TestSileroExportImportCPU: an exported Silero (If bodies, nested) imports
// and streams as compiled (the model cache's path).
func TestSileroExportImportCPU(t *testing.T) { sileroExportImport(t, "CPU") }

func sileroExportImport(t *testing.T, device string) {
	cases, err := conformance.SileroCases()
	if err != nil {
		t.Fatal(err)
	}
	core := driver.NewCore()
	defer core.Close()
	for _, c := range cases {
		if c.Name != "v5_16k" && c.Name != "v4_8k" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			s, err := conformance.SileroExportImport(context.Background(), core, device, c, 20)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := conformance.CheckSilero(c, s); err != nil {
				t.Error(err)
			}
		})
	}
}

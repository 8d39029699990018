package tests

import (
	"testing"

	_ "github.com/clinfer/clinfer/cpu_fallback" // registers the "CPU" device

	"github.com/clinfer/clinfer/tests/conformance"
)

func TestRealModelsCPU(t *testing.T) { conformance.RealModels(t, "CPU") }

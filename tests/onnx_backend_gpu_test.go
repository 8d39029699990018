// The GPU device exists only in builds with OpenCL; built without it
// (CGO_ENABLED=0 or -tags noopencl) the GPU plugin's constructor error is
// tested in clbackend instead.

//go:build cgo && !noopencl

package tests

import (
	"testing"

	_ "github.com/clinfer/clinfer/clbackend" // registers the "GPU" device

	"github.com/clinfer/clinfer/tests/conformance"
)

// TestONNXBackendGPU runs the ONNX backend suite on the GPU device through
// the same code as the CPU run; ops or op forms without a GPU kernel are
// reported as unsupported-op (driver.ErrUnsupported at compile).
func TestONNXBackendGPU(t *testing.T) { conformance.ONNXBackend(t, "GPU") }

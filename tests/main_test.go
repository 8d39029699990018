package tests

import (
	"fmt"
	"os"
	"testing"

	"github.com/clinfer/clinfer/tests/conformance"
)

// TestMain runs the package's tests, then compares the ONNX backend pass
// lists of the CPU and GPU devices from the suites that just ran (nothing
// runs twice): a case that passes on one device and not on the other fails
// the run, so a GPU regression shows even when the GPU merely reports it
// unsupported.
func TestMain(m *testing.M) {
	code := m.Run()
	compared, err := conformance.CheckParity("CPU", "GPU")
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "--- FAIL: CPU/GPU parity of the ONNX backend suite\n%v\n", err)
		code = max(code, 1)
	case compared:
		fmt.Println("ONNX backend suite: CPU and GPU pass the same cases")
	default:
		fmt.Println("ONNX backend suite: CPU/GPU parity not checked: the suite did not run in full on both devices in this process " +
			"(`go test ./tests/` runs both; a build without OpenCL has no GPU suite)")
	}
	os.Exit(code)
}

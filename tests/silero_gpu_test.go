//go:build cgo && !noopencl

package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/clinfer/clinfer/clbackend" // registers the "GPU" device
	_ "github.com/clinfer/clinfer/hetero"    // registers "HETERO"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tests/conformance"
)

// TestSileroGPU streams Silero VAD v4, v5 and v6 on the GPU against ONNX
// Runtime: every 16 kHz case over 200 chunks with explicit and with
// device-resident states (MAKE_STATEFUL), the 8 kHz branch over 50.
func TestSileroGPU(t *testing.T) {
	conformance.Silero(t, "GPU", 0, true, func(name string) bool { return strings.HasSuffix(name, "_16k") })
	conformance.Silero(t, "GPU", 50, false, func(name string) bool { return strings.HasSuffix(name, "_8k") })
}

// TestSileroHetero streams v5 at 16 kHz on HETERO:GPU,CPU (50 chunks).
func TestSileroHetero(t *testing.T) {
	conformance.Silero(t, "HETERO:GPU,CPU", 50, false, func(name string) bool { return name == "v5_16k" })
}

// TestSileroStatefulTransfers: with MAKE_STATEFUL the GPU keeps Silero's
// state on the device: after the first chunk each inference moves only the
// chunk and the sample rate to the device and the probability to the host
// (the sample rate picks the network on the host: nothing is read back),
// where explicit states also move the state both ways; both give the same
// probabilities.
func TestSileroStatefulTransfers(t *testing.T) {
	cases, err := conformance.SileroCases()
	require.NoError(t, err)
	var c *conformance.SileroCase
	for _, x := range cases {
		if x.Name == "v5_16k" {
			c = x
		}
	}
	require.NotNil(t, c)
	core := driver.NewCore()
	defer core.Close()
	const chunks = 20
	explicit, err := conformance.StreamSilero(context.Background(), core, "GPU", c, chunks, false, nil)
	require.NoError(t, err)
	stateful, err := conformance.StreamSilero(context.Background(), core, "GPU", c, chunks, true, nil)
	require.NoError(t, err)
	assert.Equal(t, explicit.Probs, stateful.Probs, "the same probabilities, chunk for chunk")
	in := int64(c.Chunk * 4) // the chunk (f32); sr (i64) only picks the plan of its branch on the host
	out := int64(4)          // the probability (f32)
	state := int64(2 * 128 * 4)
	n := int64(chunks - 1)
	assert.Equal(t, n*in, stateful.Transfers.HostToDevice, "stateful: no state bytes to the device")
	assert.Equal(t, n*out, stateful.Transfers.DeviceToHost, "stateful: no state bytes to the host")
	assert.Equal(t, n*(in+state), explicit.Transfers.HostToDevice)
	assert.Equal(t, n*(out+state), explicit.Transfers.DeviceToHost)
	t.Logf("per chunk: explicit %v, stateful %v", explicit.Transfers, stateful.Transfers)
}

func TestStatefulGPU(t *testing.T) { statefulSuite(t, "GPU") }

// TestSileroNestedIfsFoldGPU: the GPU's runtime model has no If left in
// the branch the sample rate picks either.
func TestSileroNestedIfsFoldGPU(t *testing.T) { sileroNestedIfs(t, "GPU") }

func TestStatefulHetero(t *testing.T) { statefulSuite(t, "HETERO:GPU,CPU") }

// TestRecurrentCasesGPU runs the recurrent cases of ONNX Runtime on the
// GPU.
func TestRecurrentCasesGPU(t *testing.T) { recurrentCases(t, "GPU") }

// TestNewerOpsCasesGPU is TestNewerOpsCasesCPU on the GPU.
func TestNewerOpsCasesGPU(t *testing.T) {
	ortCases(t, "GPU", "newerops", "scripts/ortref/newer_ops_cases.js")
}

// TestSileroExportImportGPU: the GPU's export of Silero imports and
// streams as compiled.
func TestSileroExportImportGPU(t *testing.T) { sileroExportImport(t, "GPU") }

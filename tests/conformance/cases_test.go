package conformance

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCasesRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cases-CPU.txt")
	want := map[string]Outcome{"node/test_relu": Passed, "node/test_x": Failed, "simple/test_y": UnsupportedOp}
	require.NoError(t, WriteCases(path, want))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "node/test_relu\tpassed\nnode/test_x\tfailed\nsimple/test_y\tunsupported-op\n", string(b))
	got, err := ReadCases(path)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	require.NoError(t, os.WriteFile(path, []byte("node/test_relu\tpassed\nnode/test_x maybe\n"), 0o644))
	_, err = ReadCases(path)
	assert.ErrorContains(t, err, "cases-CPU.txt:2")
}

func TestCaseOps(t *testing.T) {
	if _, err := os.Stat(filepath.Join(dataDir(), "node", "test_relu", "model.onnx")); err != nil {
		t.Skipf("libonnx-testdata not installed (%v): `apt-get install libonnx-testdata` (make deps installs it)", err)
	}
	ops, err := CaseOps("node/test_relu")
	require.NoError(t, err)
	assert.Equal(t, []string{"Parameter", "Relu", "Result"}, ops)
	_, err = CaseOps("node/no_such_case")
	assert.Error(t, err)
}

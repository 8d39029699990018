package defaultmodel_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/defaultmodel"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/tensor"
)

// TestEmbeddedModelReads checks that the embedded bytes are a valid model
// with the documented input and output.
func TestEmbeddedModelReads(t *testing.T) {
	m, err := onnx.Read(defaultmodel.ONNX)
	require.NoError(t, err)
	require.NoError(t, m.Validate())
	require.Len(t, m.Parameters, 1)
	require.Len(t, m.Results, 1)
	in := m.Parameters[0]
	assert.Equal(t, defaultmodel.InputName, in.Name)
	assert.Equal(t, tensor.F32, in.Outputs[0].Type)
	assert.Equal(t, "[batch,3,64,64]", in.Outputs[0].Shape.String())
	out := m.Results[0]
	assert.Equal(t, defaultmodel.OutputName, out.Name)
	assert.Equal(t, graph.PartialShape{Dims: []graph.Dim{{Size: -1, Name: "batch"}, {Size: 10}}, RankKnown: true}.String(), out.Outputs[0].Shape.String())
}

// TestGeneratedFileIsUpToDate regenerates the model and compares bytes, so
// a change to gen/main.go without `go generate` fails CI.
func TestGeneratedFileIsUpToDate(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "smallcnn.onnx")
	cmd := exec.Command("go", "run", "./gen", "-o", dst)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Run(), "go run ./gen")
	got, err := os.ReadFile(dst)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(got, defaultmodel.ONNX), "smallcnn.onnx is stale: run `go generate ./internal/defaultmodel`")
}

// The GPU device exists only in builds with OpenCL; built without it
// (CGO_ENABLED=0 or -tags noopencl) the GPU plugin's constructor error is
// tested in clbackend instead.

//go:build cgo && !noopencl

package tests

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// TestIRRoundTripDetGPU serializes PP-OCR det as OpenVINO IR
// (Model.SerializeIRFile), reads the .xml back with Core.ReadModel and
// runs both on the GPU: the outputs agree to the bit, as the graphs do
// (ir's TestRoundTripBackendModels compares every backend model on the
// CPU).
func TestIRRoundTripDetGPU(t *testing.T) {
	path, err := conformance.ModelPath("ch_PP-OCRv4_det_infer.onnx")
	require.NoError(t, err)
	core := plugin.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	m, err := core.ReadModel(path)
	require.NoError(t, err)
	xml := filepath.Join(t.TempDir(), "det.xml")
	require.NoError(t, m.SerializeIRFile(xml))
	back, err := core.ReadModel(xml)
	require.NoError(t, err)
	x, err := tensor.FromF32(tensor.Shape{1, 3, 96, 128}, seeded.Float32s(29, 3*96*128, 0, 1))
	require.NoError(t, err)
	var outs []*tensor.Tensor
	for _, model := range []*graph.Model{m, back} {
		cm, err := core.CompileModel(context.Background(), model, "GPU", nil)
		require.NoError(t, err)
		out, err := cm.Infer(context.Background(), map[string]*tensor.Tensor{"x": x})
		require.NoError(t, err)
		require.NoError(t, cm.Close())
		outs = append(outs, out["sigmoid_0.tmp_0"])
	}
	require.NoError(t, conformance.Compare(outs[1], outs[0], conformance.Tolerance{}))
}

package fusion_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/defaultmodel"
	"github.com/clinfer/clinfer/onnx"
)

// modelDir is where `make models` (scripts/fetch-models.sh) puts the real
// models; CLINFER_MODEL_DIR overrides it.
func modelDir() string {
	if d := os.Getenv("CLINFER_MODEL_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", ".cache", "models")
}

// pipelineCase runs the whole default pipeline on m and checks the outputs
// against the untransformed model on the CPU device.
func pipelineCase(t *testing.T, m *graph.Model, dyn func(string, int) int64, wantFused map[string]int) {
	in := randomInputs(t, m, 11, dyn)
	tm := m.Clone()
	rep, err := fusion.Default().Run(context.Background(), tm, fusion.Options{Eval: ref.Evaluate})
	require.NoError(t, err)
	require.NoError(t, tm.Validate())
	t.Logf("%s: %d nodes (%d ops) -> %d nodes (%d ops)", m.Name, rep.NodesBefore, rep.OpsBefore, rep.NodesAfter, rep.OpsAfter)
	t.Log(rep.String())
	assert.Less(t, rep.OpsAfter, rep.OpsBefore, "the pipeline removed no op")
	for op, n := range wantFused {
		assert.GreaterOrEqual(t, opCount(t, tm, op), n, "%s nodes after the pipeline", op)
	}
	requireClose(t, runCPU(t, m, in), runCPU(t, tm, in), 1e-4, 1e-3)
}

func TestPipelineRealModels(t *testing.T) {
	dir := modelDir()
	cases := []struct {
		file  string
		dyn   func(string, int) int64
		fused map[string]int
	}{
		{"ch_ppocr_mobile_v2.0_cls_infer.onnx", func(_ string, axis int) int64 { return map[int]int64{0: 1, 2: 48, 3: 192}[axis] }, map[string]int{graph.OpFusedConv: 20}},
		{"ch_PP-OCRv4_det_infer.onnx", func(_ string, axis int) int64 { return map[int]int64{0: 1, 2: 96, 3: 128}[axis] }, map[string]int{graph.OpFusedConv: 30, "HardSwish": 0, graph.OpKernelFusion: 8}},
		{"ch_PP-OCRv4_rec_infer.onnx", func(_ string, axis int) int64 { return map[int]int64{0: 1, 3: 160}[axis] }, map[string]int{graph.OpFusedConv: 10, "LayerNormalization": 4, graph.OpFullyConnected: 4}},
		{"hello_deepa.onnx", nil, map[string]int{graph.OpKernelFusion: 2, graph.OpFullyConnected: 1}}, // two dense layers whole (FuseFCLayerNormRelu)
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("model %s is missing (%v); fetch the real models with: make models", path, err)
			}
			m, err := onnx.ReadFile(path)
			require.NoError(t, err)
			pipelineCase(t, m, tc.dyn, tc.fused)
		})
	}
}

func TestPipelineDefaultModel(t *testing.T) {
	m, err := onnx.Read(defaultmodel.ONNX)
	require.NoError(t, err)
	pipelineCase(t, m, func(string, int) int64 { return 2 }, map[string]int{graph.OpFusedConv: 3, graph.OpFullyConnected: 1})
	tm := m.Clone()
	_, err = fusion.Default().Run(context.Background(), tm, fusion.Options{Eval: ref.Evaluate})
	require.NoError(t, err)
	assert.Zero(t, opCount(t, tm, "BatchNormalization"))
	assert.Zero(t, opCount(t, tm, "Conv"), "every Conv of the default model is followed by something fusable")
}

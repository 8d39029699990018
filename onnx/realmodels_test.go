package onnx

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// realModelDir is where scripts/fetch-models.sh puts the real models;
// CLINFER_MODEL_DIR overrides it.
func realModelDir() string {
	if d := os.Getenv("CLINFER_MODEL_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", ".cache", "models")
}

// TestRealModels imports the real models (PP-OCR det/rec/cls, openWakeWord)
// and logs the op types and opsets each uses. Every one must import.
func TestRealModels(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(realModelDir(), "*.onnx"))
	require.NoError(t, err)
	if len(paths) == 0 {
		t.Skipf("no real models in %s; fetch them with: scripts/fetch-models.sh (or set CLINFER_MODEL_DIR)", realModelDir())
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			ops, domains, opset, err := modelOps(path)
			require.NoError(t, err)
			counts := map[string]int{}
			for i, op := range ops {
				if domains[i] != "" {
					op = domains[i] + "." + op
				}
				counts[op]++
			}
			var list []string
			for op, n := range counts {
				list = append(list, fmt.Sprintf("%s×%d", op, n))
			}
			sort.Strings(list)
			t.Logf("opset %d, %d nodes: %s", opset, len(ops), strings.Join(list, " "))

			m, err := ReadFile(path)
			require.NoError(t, err)
			assert.NotEmpty(t, m.Parameters)
			assert.NotEmpty(t, m.Results)
			for _, p := range m.Parameters {
				t.Logf("input %s %v%v", p.Name, p.Outputs[0].Type, p.Outputs[0].Shape)
			}
			for _, r := range m.Results {
				assert.True(t, r.Outputs[0].Type.Valid(), "result %s has an inferred type", r.Name)
				t.Logf("output %s %v%v", r.Name, r.Outputs[0].Type, r.Outputs[0].Shape)
			}
		})
	}
}

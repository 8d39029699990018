package npy

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

// realModelsDir holds the committed ONNX Runtime reference outputs made by
// scripts/ortref/make_refs.js (`make refs`).
const realModelsDir = "../../tests/testdata/realmodels"

type realCase struct {
	Model  string `json:"model"`
	Inputs []struct {
		Name  string  `json:"name"`
		Type  string  `json:"type"`
		Shape []int64 `json:"shape"`
		Seed  uint32  `json:"seed"`
		Lo    float32 `json:"lo"`
		Hi    float32 `json:"hi"`
	} `json:"inputs"`
	Outputs []struct {
		Name  string  `json:"name"`
		File  string  `json:"file"`
		Type  string  `json:"type"`
		Shape []int64 `json:"shape"`
	} `json:"outputs"`
	ORTVersion string `json:"ort_version"`
}

// TestRealModelReferences loads every committed reference output and checks
// it against its case.json. The files are committed, so a missing directory
// is a failure, not a skip.
func TestRealModelReferences(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join(realModelsDir, "*", "case.json"))
	require.NoError(t, err)
	require.NotEmpty(t, cases, "no %s/*/case.json: the reference data is committed; regenerate with `make refs`", realModelsDir)
	names := map[string]bool{}
	for _, cj := range cases {
		dir := filepath.Dir(cj)
		names[filepath.Base(dir)] = true
		t.Run(filepath.Base(dir), func(t *testing.T) {
			raw, err := os.ReadFile(cj)
			require.NoError(t, err)
			var c realCase
			require.NoError(t, json.Unmarshal(raw, &c), cj)
			assert.NotEmpty(t, c.Model)
			assert.Equal(t, "1.30.0", c.ORTVersion)
			require.NotEmpty(t, c.Inputs)
			for _, in := range c.Inputs {
				assert.NotEmpty(t, in.Name)
				assert.Equal(t, "f32", in.Type)
				assert.NotEmpty(t, in.Shape)
				assert.Less(t, in.Lo, in.Hi, "input %s range", in.Name)
			}
			require.NotEmpty(t, c.Outputs)
			for _, out := range c.Outputs {
				x, err := ReadFile(filepath.Join(dir, out.File))
				require.NoError(t, err)
				assert.Equal(t, tensor.F32, x.Type(), out.File)
				assert.Equal(t, tensor.Shape(out.Shape), x.Shape(), out.File)
				for i, v := range x.F32() {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("%s: element %d is %v", out.File, i, v)
					}
				}
			}
		})
	}
	for _, want := range []string{"cls", "det", "det_wide", "det_640", "rec", "hello_deepa"} {
		assert.True(t, names[want], "reference case %s is missing from %s (regenerate with `make refs`)", want, realModelsDir)
	}
}

package onnx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
)

// libonnxTestdata is where Debian's libonnx-testdata package installs the
// ONNX backend test models.
const libonnxTestdata = "/usr/share/libonnx-testdata/data"

func requireTestdata(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(libonnxTestdata); err != nil {
		t.Skipf("ONNX test models missing (%v); install them with: apt-get install libonnx-testdata", err)
	}
}

// corpusModels lists model.onnx files under the given libonnx-testdata
// subdirectories.
func corpusModels(t testing.TB, dirs ...string) []string {
	t.Helper()
	var out []string
	for _, d := range dirs {
		m, err := filepath.Glob(filepath.Join(libonnxTestdata, d, "*", "model.onnx"))
		require.NoError(t, err)
		out = append(out, m...)
	}
	sort.Strings(out)
	return out
}

// modelOps decodes a model's op types and the default opset without
// importing it.
func modelOps(path string) (ops []string, domains []string, opset int64, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, 0, err
	}
	mp, err := decodeModel(data)
	if err != nil || mp.graph == nil {
		return nil, nil, 0, fmt.Errorf("decode: %v", err)
	}
	for _, o := range mp.opsets {
		if normDomain(o.domain) == "" {
			opset = o.version
		}
	}
	for _, n := range mp.graph.nodes {
		ops = append(ops, n.opType)
		domains = append(domains, normDomain(n.domain))
	}
	return ops, domains, opset, nil
}

// TestCorpus imports every ONNX backend test model and reports how many
// import, how many use ops outside the table, and how many fail otherwise.
// A model whose ops are all in the table must import, or fail only with an
// unsupported-attribute error; anything else is a bug in the frontend or in
// graph's shape inference.
func TestCorpus(t *testing.T) {
	requireTestdata(t)
	models := corpusModels(t, "node", "pytorch-converted", "pytorch-operator", "simple")
	require.NotEmpty(t, models)
	var ok, unsupportedOp, unsupportedAttr, other int
	missing := map[string]int{}
	var failures []string
	for _, path := range models {
		name := filepath.Base(filepath.Dir(path))
		_, err := ReadFile(path)
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrUnsupportedOp):
			unsupportedOp++
			ops, domains, opset, derr := modelOps(path)
			if derr == nil {
				for i, op := range ops {
					if _, found := lookupOp(op, domains[i], opset); !found {
						missing[op]++
					}
				}
			}
		case errors.Is(err, ErrUnsupportedAttribute):
			unsupportedAttr++
			t.Logf("%s: %v", name, err)
		default:
			other++
			ops, domains, opset, derr := modelOps(path)
			inTable := derr == nil
			for i, op := range ops {
				if _, found := lookupOp(op, domains[i], opset); !found {
					inTable = false
				}
			}
			if inTable && !errors.Is(err, ErrUnsupportedType) {
				failures = append(failures, fmt.Sprintf("%s: %v", name, err))
			} else {
				t.Logf("%s (not all ops in table or unsupported type): %v", name, err)
			}
		}
	}
	var miss []string
	for op, n := range missing {
		miss = append(miss, fmt.Sprintf("%s(%d)", op, n))
	}
	sort.Strings(miss)
	t.Logf("libonnx-testdata: %d models: %d imported, %d unsupported op, %d unsupported attribute, %d other errors",
		len(models), ok, unsupportedOp, unsupportedAttr, other)
	t.Logf("ops outside the table: %s", strings.Join(miss, " "))
	assert.Empty(t, failures, "models whose ops are all in the table failed:\n%s", strings.Join(failures, "\n"))
	assert.Greater(t, ok, len(models)/3, "far fewer models import than expected")
}

// TestOpTableMatchesOpSet checks that every op the table emits is in graph's
// op set, so no importer produces nodes devices cannot run.
func TestOpTableMatchesOpSet(t *testing.T) {
	emitted := map[string]bool{"Flatten": true, "Shape": true, "Reshape": true, "Resize": true,
		"Unsqueeze": true, "ReduceSum": true, "Log": true, "ScatterElements": true}
	for _, e := range opTable {
		switch e.OpType {
		case "Constant", "Upsample", "Scatter", "ReduceLogSum":
			continue // emitted as other ops (listed above)
		}
		emitted[e.OpType] = true
	}
	for op := range emitted {
		_, ok := graph.Lookup(op)
		assert.True(t, ok, "op table imports %s, which graph's op set lacks", op)
	}
}

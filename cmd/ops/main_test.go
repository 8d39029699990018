package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tests/conformance"
)

func TestPassCounts(t *testing.T) {
	outcomes := map[string]map[string]conformance.Outcome{
		"CPU": {"node/a": conformance.Passed, "node/b": conformance.Passed, "node/c": conformance.Failed},
		"GPU": {"node/a": conformance.Passed, "node/b": conformance.UnsupportedOp},
	}
	ops := map[string][]string{"node/a": {"Relu", "Add"}, "node/b": {"Relu"}, "node/c": {"Conv"}}
	calls := 0
	counts := passCounts(outcomes, func(key string) ([]string, error) {
		calls++
		return ops[key], nil
	})
	assert.Equal(t, map[string]int{"Relu": 2, "Add": 1}, counts["CPU"])
	assert.Equal(t, map[string]int{"Relu": 1, "Add": 1}, counts["GPU"])
	assert.Equal(t, 2, calls, "each passing case's model is read once")
}

func TestWriteMatrix(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, write(&buf, []row{
		{op: "Add", family: "eltwise", opsets: "7+", cpu: "✓", gpu: "✓", half: "✓", fusions: "FuseConv"},
		{op: "Conv", family: "conv", opsets: "1+", cpu: "✓", gpu: "✓", half: "—"},
	}, map[string]map[string]int{"CPU": {"Add": 3}, "GPU": {"Add": 2}}))
	s := buf.String()
	assert.Contains(t, s, "\n## eltwise\n\n| op | ONNX opsets |")
	assert.Contains(t, s, "| Add | 7+ | ✓ | ✓ | ✓ | FuseConv | 3 / 2 |\n")
	assert.Contains(t, s, "\n## conv\n")
	assert.Contains(t, s, "| Conv | 1+ | ✓ | ✓ | — |  | 0 / 0 |\n")
	assert.Contains(t, s, "| Upsample | 7–9 |", "ONNX ops imported as other ops are listed")
}

// TestRunCheck writes a matrix from case files, checks it, and fails the
// check once the file differs.
func TestRunCheck(t *testing.T) {
	dir := t.TempDir()
	for _, d := range devices {
		require.NoError(t, conformance.WriteCases(filepath.Join(dir, "conformance-cases-"+d+".txt"), map[string]conformance.Outcome{"node/no_such_case": conformance.Passed}))
	}
	out := filepath.Join(dir, "OPS.md")
	var log bytes.Buffer
	require.NoError(t, run([]string{"-cases", dir, "-o", out}, &log))
	require.NoError(t, run([]string{"-cases", dir, "-check", out}, &log))
	assert.Contains(t, log.String(), "is up to date")
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(out, bytes.Replace(b, []byte("| Relu |"), []byte("| Relu6 |"), 1), 0o644))
	err = run([]string{"-cases", dir, "-check", out}, &log)
	require.ErrorContains(t, err, "is stale")
	assert.ErrorContains(t, err, "make ops")
	err = run([]string{"-cases", t.TempDir(), "-check", out}, &log)
	assert.ErrorContains(t, err, "run `make ops`")
}

// TestCommittedMatrix checks the committed OPS.md against the tables
// without the suite: every op of the op set has its row, and every cell
// but the suite counts is what the tables say now. `make test` also
// checks the counts (make ops-check).
func TestCommittedMatrix(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "OPS.md"))
	require.NoError(t, err, "OPS.md is missing: run `make ops`")
	committed := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) == 7 && strings.HasPrefix(line, "| ") {
			committed[strings.TrimPrefix(cells[0], "| ")] = cells[1:6]
		}
	}
	n := 0
	for _, r := range rows() {
		n++
		got, ok := committed[r.op]
		if assert.True(t, ok, "OPS.md has no row for %s: run `make ops`", r.op) {
			assert.Equal(t, []string{r.opsets, r.cpu, r.gpu, r.half, r.fusions}, got, "OPS.md's row for %s is stale: run `make ops`", r.op)
		}
	}
	ops := 0
	for _, op := range graph.OpTypes() {
		if s, _ := graph.Lookup(op); s.Family != graph.FamilyModel {
			ops++
		}
	}
	assert.Equal(t, ops, n)
}

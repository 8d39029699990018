package ir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// comparable returns the encoding of m (cloned) in the form a round trip
// keeps: nodes the writer expresses in standard ops have canonical
// attributes (canon.go), and constants are named by their place, since
// the ones standard ops take as attributes come back with the reader's
// names.
func comparable(t testing.TB, m *graph.Model) []byte {
	t.Helper()
	b, err := normalized(t, m).MarshalBinary()
	require.NoError(t, err)
	return b
}

// normalized is comparable's model.
func normalized(t testing.TB, m *graph.Model) *graph.Model {
	t.Helper()
	c := m.Clone()
	require.NoError(t, c.Walk(func(body *graph.Model, owner *graph.Node) error {
		nodes, err := body.Nodes()
		if err != nil {
			return err
		}
		k := 0
		uses := usesOf(nodes)
		for _, n := range nodes {
			if exported(n, uses) {
				canonAttrs(n)
			}
			if n.OpType == graph.OpConstant {
				n.Name = fmt.Sprintf("const#%d", k)
				n.Outputs[0].Name = n.Name
				k++
			}
		}
		if owner != nil {
			// A body's ports are what its owner's inference binds: the
			// ONNX frontend leaves a nested body's unset until then, the
			// reader infers what it can as it reads.
			for _, n := range nodes {
				for i := range n.Outputs {
					n.Outputs[i].Type, n.Outputs[i].Shape = tensor.Undefined, graph.DynamicRank
				}
			}
		}
		return nil
	}))
	return c
}

// diff lists the lines of the two models' dumps that differ.
func diff(t testing.TB, a, b *graph.Model) string {
	var wa, wb bytes.Buffer
	_ = normalized(t, a).WriteText(&wa)
	_ = normalized(t, b).WriteText(&wb)
	la, lb := strings.Split(wa.String(), "\n"), strings.Split(wb.String(), "\n")
	var out []string
	for i := 0; i < max(len(la), len(lb)); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			out = append(out, "- "+x, "+ "+y)
		}
	}
	if len(out) == 0 {
		return "(the dumps agree: a difference in ports, runtime info or constant values)"
	}
	return strings.Join(out, "\n")
}

// text dumps m for a failure message.
func text(m *graph.Model) string {
	var b strings.Builder
	_ = m.WriteText(&b)
	return b.String()
}

// roundTrip writes m and reads it back.
func roundTrip(t testing.TB, m *graph.Model) (*graph.Model, []byte) {
	t.Helper()
	var doc, bin bytes.Buffer
	require.NoError(t, Write(m, &doc, &bin))
	back, err := Read(doc.Bytes(), WithWeights(bin.Bytes()))
	require.NoError(t, err, "reading back:\n%s", doc.String())
	return back, doc.Bytes()
}

// TestRoundTripBackendModels writes every ONNX backend-suite model clinfer
// imports as IR, reads it back, checks that it is the same graph, and runs
// the read-back model on the CPU against the case's expected outputs
// (every case whose own model passes there must pass).
func TestRoundTripBackendModels(t *testing.T) {
	keys, dirs, err := conformance.CaseDirs()
	require.NoError(t, err)
	core := driver.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	var stats struct{ cases, graphs, origPassed, passed, standard, own int }
	ownOps := map[string]int{}
	for i, key := range keys {
		m, err := onnx.ReadFile(dirs[i] + "/model.onnx")
		if err != nil {
			continue // not imported: not a model clinfer runs
		}
		stats.cases++
		t.Run(key, func(t *testing.T) {
			back, _ := roundTrip(t, m)
			want, got := comparable(t, m), comparable(t, back)
			if !bytes.Equal(want, got) {
				t.Fatalf("read back a different graph:\n%s", diff(t, m, back))
			}
			stats.graphs++
			_ = m.Walk(func(body *graph.Model, _ *graph.Node) error {
				nodes, _ := body.Nodes()
				uses := usesOf(nodes)
				for _, n := range nodes {
					switch {
					case n.OpType == graph.OpParameter || n.OpType == graph.OpConstant || n.OpType == graph.OpResult:
					case exported(n, uses):
						stats.standard++
					default:
						stats.own++
						ownOps[n.OpType]++
					}
				}
				return nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			orig, origErr := conformance.RunModel(ctx, core, "CPU", m, dirs[i])
			if orig != conformance.Passed {
				return // the model itself does not run on the CPU: nothing to compare
			}
			stats.origPassed++
			out, err := conformance.RunModel(ctx, core, "CPU", back, dirs[i])
			require.Equal(t, conformance.Passed, out, "the original passes (%v), the read-back model: %v", origErr, err)
			stats.passed++
		})
	}
	var ops []string
	for op, n := range ownOps {
		ops = append(ops, fmt.Sprintf("%s:%d", op, n))
	}
	sort.Strings(ops)
	t.Logf("%d models imported, %d read back to the same graph, %d of the %d that pass on the CPU passed read back; nodes in OpenVINO opsets %d, in the clinfer opset %d (%s)",
		stats.cases, stats.graphs, stats.passed, stats.origPassed, stats.standard, stats.own, strings.Join(ops, " "))
	if stats.cases == 0 {
		t.Fatal(errors.New("no backend model was imported"))
	}
}

// TestRoundTripRealModels writes the real models `make models` caches as
// IR and reads them back to the same graph (the outputs of PP-OCR det
// read back are compared on the GPU in tests/).
func TestRoundTripRealModels(t *testing.T) {
	for _, name := range []string{"ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx", "ch_ppocr_mobile_v2.0_cls_infer.onnx",
		"hello_deepa.onnx", "silero_vad_v5.onnx", "isnet_small_u8.onnx"} {
		t.Run(name, func(t *testing.T) {
			path, err := conformance.ModelPath(name)
			require.NoError(t, err)
			m, err := onnx.ReadFile(path)
			require.NoError(t, err)
			back, _ := roundTrip(t, m)
			if !bytes.Equal(comparable(t, m), comparable(t, back)) {
				t.Fatalf("read back a different graph:\n%s", diff(t, m, back))
			}
		})
	}
}

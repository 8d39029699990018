package clbackend

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// sizedModels are models whose data-sized nodes feed further ops: the
// continuation plans them once the sizes are read back.
func sizedModels() map[string]func() *graph.Model {
	return map[string]func() *graph.Model{
		// The values of x's non-zero elements, and a static output
		// planned before the read-back.
		"nonzero_gathernd": func() *graph.Model {
			x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(4, 6))
			nz := graph.NewNode("NonZero", "nz", []graph.Output{x.Out(0)}, nil, 1)
			tr := graph.NewNode("Transpose", "tr", []graph.Output{nz.Out(0)}, graph.Attrs{"perm": []int64{1, 0}}, 1)
			g := graph.NewNode("GatherND", "g", []graph.Output{x.Out(0), tr.Out(0)}, nil, 1)
			two := graph.NewNode("Add", "twice", []graph.Output{x.Out(0), x.Out(0)}, nil, 1)
			return graph.NewModel("nonzero_gathernd", []*graph.Node{x}, []*graph.Node{graph.NewResult("vals", g.Out(0)), graph.NewResult("twice_out", two.Out(0))})
		},
		// A continuation that ends in a read-back of its own: the rows
		// kept by cond, then the coordinates of their positive elements.
		"compress_then_nonzero": func() *graph.Model {
			x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(7, 3))
			c := graph.NewParameter("c", tensor.Bool, graph.ShapeOf(7))
			cp := graph.NewNode("Compress", "cp", []graph.Output{x.Out(0), c.Out(0)}, graph.Attrs{"axis": int64(0)}, 1)
			zero, _ := tensor.FromF32(tensor.Shape{}, []float32{0})
			pos := graph.NewNode("Greater", "pos", []graph.Output{cp.Out(0), graph.NewConstant("zero", zero).Out(0)}, nil, 1)
			nz := graph.NewNode("NonZero", "nz", []graph.Output{pos.Out(0)}, nil, 1)
			return graph.NewModel("compress_then_nonzero", []*graph.Node{x, c}, []*graph.Node{graph.NewResult("rows", cp.Out(0)), graph.NewResult("coords", nz.Out(0))})
		},
		// Two independent data-sized nodes read back in one wait.
		"two_counts": func() *graph.Model {
			a := graph.NewParameter("a", tensor.I32, graph.ShapeOf(11))
			b := graph.NewParameter("b", tensor.Bool, graph.ShapeOf(2, 5))
			n1 := graph.NewNode("NonZero", "n1", []graph.Output{a.Out(0)}, nil, 1)
			n2 := graph.NewNode("NonZero", "n2", []graph.Output{b.Out(0)}, nil, 1)
			i64 := func(name string, v int64) graph.Output {
				t, _ := tensor.FromI64(tensor.Shape{1}, []int64{v})
				return graph.NewConstant(name, t).Out(0)
			}
			row := graph.NewNode("Slice", "row", []graph.Output{n2.Out(0), i64("s", 1), i64("e", 2), i64("ax", 0)}, nil, 1)
			cat := graph.NewNode("Concat", "cat", []graph.Output{n1.Out(0), row.Out(0)}, graph.Attrs{"axis": int64(1)}, 1)
			return graph.NewModel("two_counts", []*graph.Node{a, b}, []*graph.Node{graph.NewResult("cat_out", cat.Out(0))})
		},
	}
}

// TestDataSizedContinuations runs models whose data-sized outputs feed
// further ops on the GPU and the CPU with seeded inputs of many different
// counts (more than a request caches continuations for), and checks the
// runtime model names the continuation's kernels.
func TestDataSizedContinuations(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	for name, build := range sizedModels() {
		t.Run(name, func(t *testing.T) {
			m := build()
			require.NoError(t, m.Validate())
			gm, err := gpu.CompileModel(context.Background(), m, map[string]string{driver.KeyDisableTransformations: "YES", driver.KeyEnableProfiling: "YES"})
			require.NoError(t, err)
			defer gm.Close()
			cm, err := cpu.CompileModel(context.Background(), m, nil)
			require.NoError(t, err)
			defer cm.Close()
			gr, err := gm.CreateInferRequest()
			require.NoError(t, err)
			defer gr.Close()
			cr, err := cm.CreateInferRequest()
			require.NoError(t, err)
			defer cr.Close()
			r := rand.New(rand.NewPCG(uint64(len(name)), 3))
			for i := range contCacheSize + 4 {
				for _, p := range m.Parameters {
					x := randomFill(t, r, p)
					if p.Outputs[0].Type != tensor.Bool && i%5 == 4 { // some runs with nothing to keep
						x, err = tensor.New(p.Outputs[0].Type, x.Shape())
						require.NoError(t, err)
					}
					require.NoError(t, gr.SetTensor(p.Name, x))
					require.NoError(t, cr.SetTensor(p.Name, x))
				}
				require.NoError(t, gr.Infer(context.Background()), "run %d", i)
				require.NoError(t, cr.Infer(context.Background()), "run %d", i)
				var want, got []*tensor.Tensor
				for _, o := range gm.Outputs() {
					g, err := gr.Tensor(o.Name)
					require.NoError(t, err)
					c, err := cr.Tensor(o.Name)
					require.NoError(t, err)
					got, want = append(got, g), append(want, c)
				}
				assertOutputsClose(t, want, got, 1e-5, 1e-5)
			}
			rm, err := gm.(*CompiledModel).RuntimeModel()
			require.NoError(t, err)
			nodes, err := rm.Nodes()
			require.NoError(t, err)
			for _, n := range nodes {
				if graph.IsDataSized(n) {
					impl := n.RT.Extra["IMPL_TYPE"]
					assert.True(t, strings.Contains(impl, "scan_blocks") && strings.Contains(impl, "_scatter"),
						"%s: IMPL_TYPE %q names its count and its scatter", n.Name, impl)
				}
			}
			assert.LessOrEqual(t, len(gr.(*InferRequest).conts), contCacheSize, fmt.Sprint("continuations cached"))
			// The profile lists the continuation's launches too.
			scatters := 0
			for _, p := range gr.ProfilingInfo() {
				if strings.HasSuffix(p.ExecType, "_scatter") {
					scatters++
				}
			}
			assert.Positive(t, scatters, "profiled scatter launches")
		})
	}
}

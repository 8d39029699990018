package clbackend

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// inPlaceCase is a model around Concats and, per Concat (by name), how
// many of its inputs the plan must still copy.
type inPlaceCase struct {
	name   string
	n, hw  int64 // batch and spatial size of x [n,4,hw,hw]
	build  func(x graph.Output, conv func(string, graph.Output, int64) graph.Output) (y graph.Output, extra []graph.Output)
	copies map[string]int
	// f16 replaces copies under INFERENCE_PRECISION_HINT=f16 where it
	// differs: the model's f32 inputs and results are then Casts of
	// their own, which the Concats may place.
	f16 map[string]int
}

// TestConcatInPlace checks that a Concat's inputs are written in place
// into its output where they are consecutive blocks of it (N = 1 along
// channels, origins on the device's sub-buffer alignment), and copied
// where not (a model input, a result, the same value twice, batch 2, an
// unaligned origin; in f16 the model's inputs and results are Casts the
// Concats may place), with results equal to the CPU's in f32 and f16,
// nested Concats and views (Reshape) of placed values included; and that
// the runtime model names the fully placed Concats in_place; an exported
// plan record is planned again on a device with a coarser alignment.
func TestConcatInPlace(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	concat := func(name string, ins ...graph.Output) graph.Output {
		return graph.NewNode("Concat", name, ins, graph.Attrs{"axis": int64(1)}, 1).Out(0)
	}
	cases := []inPlaceCase{
		{"unet", 1, 16, func(x graph.Output, conv func(string, graph.Output, int64) graph.Output) (graph.Output, []graph.Output) {
			a := conv("a", x, 4)
			b := conv("b", a, 4)
			c := concat("c", b, a) // both placed, the later producer first
			r := graph.NewNode("Reshape", "r", []graph.Output{conv("d", c, 8), shapeConst("rs", 1, 4, 256)}, nil, 1).Out(0)
			r2 := graph.NewNode("Reshape", "r2", []graph.Output{r, shapeConst("rs2", 1, 4, 16, 16)}, nil, 1).Out(0)
			e := concat("e", c, r2) // nested: c's inputs move with it; r2 a view of d
			// a read again after the Concats, at its offset in e.
			sum := graph.NewNode("Add", "sum", []graph.Output{a, conv("f", e, 12)}, nil, 1).Out(0)
			return conv("h", sum, 4), nil
		}, map[string]int{"c": 0, "e": 0}, nil},
		{"copies", 1, 16, func(x graph.Output, conv func(string, graph.Output, int64) graph.Output) (graph.Output, []graph.Output) {
			a := conv("a", x, 4)
			b := conv("b", a, 4)
			c := concat("c", x, a, a, b) // x is a model input, a twice
			res := conv("res", c, 16)
			e := concat("e", res, conv("g", b, 4)) // res is a result
			return conv("f", e, 8), []graph.Output{res}
		}, map[string]int{"c": 2, "e": 1}, map[string]int{"c": 1, "e": 0}},
		{"batch2", 2, 16, func(x graph.Output, conv func(string, graph.Output, int64) graph.Output) (graph.Output, []graph.Output) {
			a := conv("a", x, 4)
			return conv("f", concat("c", a, conv("b", a, 4)), 8), nil
		}, map[string]int{"c": 2}, nil},
		{"unaligned", 1, 3, func(x graph.Output, conv func(string, graph.Output, int64) graph.Output) (graph.Output, []graph.Output) {
			a := conv("a", x, 4)
			// 4 channels of 3x3: b's block starts at 144 bytes (72 in f16).
			return conv("f", concat("c", a, conv("b", a, 4)), 8), nil
		}, map[string]int{"c": -1}, nil},
	}
	for _, prec := range []string{"f32", "f16"} {
		for _, c := range cases {
			t.Run(prec+"/"+c.name, func(t *testing.T) {
				if d, _, err := DefaultCLDevice(); prec == "f16" && err == nil {
					if ok, _ := d.HasFP16(); !ok {
						t.Setenv(EnvEmulateFP16, "1") // as TestHalfLoweringsMatchCPU
					}
				}
				x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(c.n, 4, c.hw, c.hw))
				convs := 0
				conv := func(name string, in graph.Output, ch int64) graph.Output {
					convs++
					w, err := tensor.FromF32(tensor.Shape{4, ch, 3, 3}, seeded.Float32s(uint32(convs), int(4*ch*9), -0.3, 0.3))
					require.NoError(t, err)
					bias, err := tensor.FromF32(tensor.Shape{4}, seeded.Float32s(uint32(100+convs), 4, -0.2, 0.2))
					require.NoError(t, err)
					cv := graph.NewNode("Conv", name, []graph.Output{in, graph.NewConstant(name+".w", w).Out(0), graph.NewConstant(name+".b", bias).Out(0)},
						graph.Attrs{"pads": []int64{1, 1, 1, 1}}, 1)
					return graph.NewNode("Relu", name+".relu", []graph.Output{cv.Out(0)}, nil, 1).Out(0)
				}
				y, extra := c.build(x.Out(0), conv)
				results := []*graph.Node{graph.NewResult("y", y)}
				for i, e := range extra {
					results = append(results, graph.NewResult(fmt.Sprintf("extra%d", i), e))
				}
				m := graph.NewModel("concat_in_place", []*graph.Node{x}, results)
				require.NoError(t, m.Validate())
				ins := map[string]*tensor.Tensor{"x": randInput(t, tensor.Shape{c.n, 4, c.hw, c.hw}, 3)}
				got, cm := inferAllWith(t, gpu, m, ins, map[string]string{driver.KeyInferencePrecisionHint: prec})
				want, _ := inferAll(t, cpu, m, ins)
				tol := 1e-4
				if prec == "f16" {
					tol = 2e-2
				}
				assertOutputsClose(t, want, got, tol, tol)
				if prec == "f32" && c.name == "unet" {
					// Tuning runs each node alone: a value at an offset
					// gets a buffer of its own (builder.memKey).
					tuned, _ := inferAllWith(t, gpu, m, ins, map[string]string{KeyTuningMode: "FAST", KeyTuningFile: filepath.Join(t.TempDir(), "tuning.json")})
					assertOutputsClose(t, want, tuned, tol, tol)
					// A record placing values for a finer sub-buffer
					// alignment than the importing device's is refused
					// as stale and the model planned again there.
					dst := newGPU(t)
					dst.devices[dst.def].subAlign = 1 << 30
					im, err := dst.ImportModel(context.Background(), bytes.NewReader(gpuExport(t, cm)), nil)
					require.NoError(t, err)
					defer im.Close()
					assert.Equal(t, int64(1), dst.ProgramCacheStats().PlanRecordsRefused, "the record placed for %d-byte alignment", gpu.devices[gpu.def].subAlign)
					imported, err := runCompiled(context.Background(), im, ins)
					require.NoError(t, err)
					assertOutputsClose(t, want, imported, tol, tol)
				}
				pl := cm.(*CompiledModel).static
				require.NotNil(t, pl)
				expect := c.copies
				if prec == "f16" && c.f16 != nil {
					expect = c.f16
				}
				for name, wantCopies := range expect {
					n := pl.nodeByName(name)
					require.NotNil(t, n, name)
					copies := 0
					for _, l := range pl.launches {
						if l.node == n {
							copies++
						}
					}
					if wantCopies < 0 { // the first input is placed, the unaligned one copied
						assert.Equal(t, 1, copies, "Concat %s: copies", name)
						continue
					}
					assert.Equal(t, wantCopies, copies, "Concat %s: copies", name)
					if wantCopies == 0 {
						assert.Equal(t, implInPlace, pl.impl[n], "Concat %s", name)
					}
				}
			})
		}
	}
}

// shapeConst is an i64 shape constant for Reshape.
func shapeConst(name string, dims ...int64) graph.Output {
	t, _ := tensor.FromI64(tensor.Shape{int64(len(dims))}, dims)
	return graph.NewConstant(name, t).Out(0)
}

// TestGatherViews: a Gather of one index known at plan time whose block
// is contiguous and aligned is a view of its input, not a launch — of a
// model input, and of a state the request holds (MAKE_STATEFUL, as Silero
// VAD gathers its LSTM's two states) — inference after inference with the
// state evolving, equal to the same model with the Gathers launched (an
// index that is a model input, read on the device) and to the arithmetic
// done here; an index whose block is not aligned stays a launch.
func TestGatherViews(t *testing.T) {
	gpu := newGPU(t)
	align := gpu.devices[gpu.def].subAlign
	if align <= 0 {
		t.Skipf("%s reports no CL_DEVICE_MEM_BASE_ADDR_ALIGN: no sub-buffers to view", gpu.devices[gpu.def].fullName)
	}
	const n = 1024 // 4 KiB blocks: a multiple of any device's sub-buffer alignment
	idx := func(name string, k int64) graph.Output {
		t, _ := tensor.FromI64(tensor.Shape{}, []int64{k})
		return graph.NewConstant(name, t).Out(0)
	}
	build := func(index func(string, int64) graph.Output, params ...*graph.Node) *graph.Model {
		x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(3, n))
		s := graph.NewParameter("s", tensor.F32, graph.ShapeOf(2, 1, n))
		h := nn("Gather", nil, s.Out(0), index("i0", 0))  // [1, n]
		c := nn("Gather", nil, s.Out(0), index("i1", -1)) // [1, n]
		xb := nn("Gather", nil, x.Out(0), index("i2", 2)) // [n]
		hN := nn("Add", nil, h, xb)
		cN := nn("Add", nil, c, hN)
		sN := nn("Concat", graph.Attrs{"axis": int64(0)}, nn("Unsqueeze", nil, hN, shapeConst("ax0", 0)), nn("Unsqueeze", nil, cN, shapeConst("ax1", 0)))
		y := nn("Mul", nil, h, c)
		return graph.NewModel("gathers", append([]*graph.Node{x, s}, params...), []*graph.Node{graph.NewResult("y", y), graph.NewResult("s_next", sN)})
	}
	viewed := build(idx)
	var kp []*graph.Node
	launched := build(func(name string, k int64) graph.Output {
		p := graph.NewParameter(name, tensor.I64, graph.StaticShape(tensor.Shape{}))
		kp = append(kp, p)
		return p.Out(0)
	})
	launched.Parameters = append(launched.Parameters, kp...)
	require.NoError(t, viewed.InferShapes())
	require.NoError(t, launched.InferShapes())

	xs, err := tensor.FromF32(tensor.Shape{3, n}, seeded.Float32s(11, 3*n, -1, 1))
	require.NoError(t, err)
	run := func(m *graph.Model, ins map[string]*tensor.Tensor) ([][]float32, *plan) {
		cm, err := gpu.CompileModel(context.Background(), m, map[string]string{driver.KeyMakeStateful: "s:s_next"})
		require.NoError(t, err)
		t.Cleanup(func() { _ = cm.Close() })
		r, err := cm.CreateInferRequest()
		require.NoError(t, err)
		t.Cleanup(func() { _ = r.Close() })
		for name, v := range ins {
			require.NoError(t, r.SetTensor(name, v))
		}
		var out [][]float32
		for range 3 {
			require.NoError(t, r.Infer(context.Background()))
			y, err := r.Tensor("y")
			require.NoError(t, err)
			out = append(out, append([]float32(nil), y.F32()...))
		}
		return out, r.(*InferRequest).c.lastRun
	}
	got, pl := run(viewed, map[string]*tensor.Tensor{"x": xs})
	ks := map[string]*tensor.Tensor{"x": xs}
	for i, k := range []int64{0, -1, 2} {
		kt, err := tensor.FromI64(tensor.Shape{}, []int64{k})
		require.NoError(t, err)
		ks[fmt.Sprintf("i%d", i)] = kt
	}
	want, lpl := run(launched, ks)
	assert.Equal(t, want, got, "views and launches agree to the bit")
	gathers := func(pl *plan) (n int) {
		for _, l := range pl.launches {
			if l.node.OpType == "Gather" {
				n++
			}
		}
		return n
	}
	assert.Zero(t, gathers(pl), "every Gather a view")
	assert.Equal(t, 3, gathers(lpl), "indices read on the device: launches")
	// The arithmetic: h, c start at 0; each step h += x[2], c += h.
	h, c := make([]float32, n), make([]float32, n)
	xb := xs.F32()[2*n:]
	for step := range 3 {
		for j := range n {
			assert.InDelta(t, h[j]*c[j], got[step][j], 1e-5, "step %d element %d", step, j)
			h[j] += xb[j]
			c[j] += h[j]
		}
	}
	if align > 4 {
		// An index whose block starts off the alignment stays a launch.
		odd := graph.NewParameter("x", tensor.F32, graph.ShapeOf(3, 1))
		g := nn("Gather", nil, odd.Out(0), idx("k", 1))
		m := graph.NewModel("odd", []*graph.Node{odd}, []*graph.Node{graph.NewResult("y", g)})
		require.NoError(t, m.InferShapes())
		cm, err := gpu.CompileModel(context.Background(), m, nil)
		require.NoError(t, err)
		defer cm.Close()
		assert.Equal(t, 1, gathers(cm.(*CompiledModel).static), "a 4-byte origin: a launch")
	}
}

// TestSliceViews: a Slice with steps of 1 that cuts one axis, every axis
// before it of size 1, is a contiguous block of its input; at an origin on
// the device's sub-buffer alignment it is a view (no launch), elsewhere,
// or cutting an axis after one of size 2, or reversed, a copy. The
// outputs equal the CPU device's to the bit, over three inferences.
func TestSliceViews(t *testing.T) {
	gpu := newGPU(t)
	align := gpu.devices[gpu.def].subAlign
	if align <= 0 {
		t.Skipf("%s reports no CL_DEVICE_MEM_BASE_ADDR_ALIGN: no sub-buffers to view", gpu.devices[gpu.def].fullName)
	}
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	const n = 1024 // 4 KiB rows: a multiple of any device's sub-buffer alignment
	at := int64(align / 4)
	slice := func(name string, x graph.Output, starts, ends, axes, steps []int64) graph.Output {
		in := []graph.Output{x, shapeConst(name+"_s", starts...), shapeConst(name+"_e", ends...), shapeConst(name+"_a", axes...)}
		if steps != nil {
			in = append(in, shapeConst(name+"_t", steps...))
		}
		return nn("Slice", nil, in...)
	}
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(2, n))
	a := nn("Relu", nil, x.Out(0))
	r0 := slice("r0", a, []int64{0}, []int64{1}, []int64{0}, nil) // [1, n] at 0: a view
	r1 := slice("r1", a, []int64{1}, []int64{2}, []int64{0}, nil) // [1, n] at 4 KiB: a view
	rows := nn("Mul", nil, r0, r1)
	tail := slice("tail", r1, []int64{at}, []int64{n}, []int64{1}, nil)      // a view of a view, at the alignment
	odd := slice("odd", r1, []int64{1}, []int64{n}, []int64{1}, nil)         // 4 bytes on: a copy
	cols := slice("cols", a, []int64{0}, []int64{n / 2}, []int64{1}, nil)    // after an axis of 2: a copy
	rev := slice("rev", a, []int64{1}, []int64{-3}, []int64{0}, []int64{-1}) // reversed: a copy
	m := graph.NewModel("slices", []*graph.Node{x}, []*graph.Node{graph.NewResult("rows", rows), graph.NewResult("tail", nn("Neg", nil, tail)),
		graph.NewResult("odd", nn("Neg", nil, odd)), graph.NewResult("cols", cols), graph.NewResult("rev", rev)})
	require.NoError(t, m.InferShapes())
	cm, err := gpu.CompileModel(context.Background(), m, nil)
	require.NoError(t, err)
	defer cm.Close()
	copies := 0
	for _, l := range cm.(*CompiledModel).static.launches {
		if l.node.OpType == "Slice" {
			copies++
		}
	}
	want := 3 // odd, cols, rev
	if align <= 4 {
		want = 2
	}
	assert.Equal(t, want, copies, "the aligned blocks launch nothing")
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	for i := range 3 {
		xs, err := tensor.FromF32(tensor.Shape{2, n}, seeded.Float32s(uint32(20+i), 2*n, -1, 1))
		require.NoError(t, err)
		require.NoError(t, r.SetTensor("x", xs))
		require.NoError(t, r.Infer(context.Background()))
		exp, _ := inferAll(t, cpu, m, map[string]*tensor.Tensor{"x": xs})
		for j, name := range []string{"rows", "tail", "odd", "cols", "rev"} {
			got, err := r.Tensor(name)
			require.NoError(t, err)
			assert.Equal(t, exp[j].F32(), got.F32(), "inference %d, %s", i, name)
		}
	}
}

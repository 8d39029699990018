package kernels_test

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/tensor"
)

// kernelFusionSpec is the launch spec of a kernel a fusion declares
// (fusion.KernelFusions), so such a kernel needs no hand-written spec: it
// fuses the declaration's seeded instance, launches the kernel under the
// declared convention (inputs, output, n, shape table, params) with
// exactly-sized buffers and an unmerged shape table (the GPU lowering
// merges axes, so both forms run), and compares the output with the CPU
// reference, which runs the node's body (graph.LaunchGEMMRows: the table
// {C, K} and groups of 4); then once more built with -DHALF
// (f16 activations) on the inputs and output as f16 bits, within f16
// tolerance: every fusion kernel is written with half.clh.
func kernelFusionSpec(f fusion.KernelFusion) func(t *testing.T, e *clEnv, k kernels.Kernel) {
	return func(t *testing.T, e *clEnv, k kernels.Kernel) {
		m, err := f.Instance(rand.New(rand.NewPCG(11, 3)))
		require.NoError(t, err)
		n, err := fusion.ApplyKernelFusion(context.Background(), m, f)
		require.NoError(t, err)
		require.Equal(t, 1, n, "pass %s does not fuse its own instance", f.Name)
		kf := m.Results[0].Inputs[0].Node
		require.Equal(t, graph.OpKernelFusion, kf.OpType)
		ys, ok := kf.Outputs[0].Shape.ToShape()
		require.True(t, ok)
		r := len(ys)
		table := append([]int32{int32(r)}, i32s(ys)...)
		ins := make([]*tensor.Tensor, len(kf.Inputs))
		var args []any
		for i, in := range kf.Inputs {
			x, isConst := kf.ConstInput(i)
			if !isConst {
				s, ok := in.Shape().ToShape()
				require.True(t, ok)
				x, err = tensor.FromF32(s, seeded.Float32s(uint32(20+i), int(s.NumElements()), -2, 2))
				require.NoError(t, err)
			}
			ins[i] = x
			args = append(args, append([]float32(nil), x.Contiguous().F32()...))
			// Strides of x broadcast to y, right-aligned, 0 on broadcast axes.
			st := make([]int32, r)
			cs := tensor.ContiguousStrides(x.Shape())
			for d := range r {
				if j := d - (r - x.Rank()); j >= 0 && x.Shape()[j] != 1 {
					st[d] = int32(cs[j])
				}
			}
			table = append(table, st...)
		}
		args = append(args, make([]float32, ys.NumElements()))
		cnt := ys.NumElements()
		if f.Launch == graph.LaunchRows {
			row := ys[r-1]
			cnt /= row
			table = append([]int32{int32(row)}, table...)
		}
		if f.Launch == graph.LaunchGEMMRows {
			// Rows of C from rows of K: the table is {C, K}.
			c, k := ys[r-1], ins[0].Shape()[ins[0].Rank()-1]
			cnt /= c
			table = []int32{int32(c), int32(k)}
		}
		params := kf.Attrs.Floats(graph.AttrParams, nil)
		if len(params) == 0 {
			params = []float32{0}
		}
		args = append(args, uint64(cnt), table, params)
		want, err := ref.Evaluate(kf, ins)
		require.NoError(t, err)
		w := want[0].F32()
		// f16 storage: every float buffer but the params as f16 bits.
		half := slices.Clone(args)
		for i := range len(ins) + 1 {
			half[i] = f16Bits(args[i].([]float32))
		}
		run := func(t *testing.T, extra string, global, local []int, half16 bool) {
			out := e.launch(t, k, extra, global, local, args...)
			got := f32s(out[len(ins)])
			require.Len(t, got, len(w))
			for i := range w {
				assert.InDelta(t, w[i], got[i], 1e-4+1e-3*float64(abs(w[i])), "%s element %d", k.Name, i)
			}
			if !half16 {
				return
			}
			out = e.launch(t, k, extra+" -DHALF", global, local, half...)
			hb := out[len(ins)]
			for i := range w {
				g := tensor.F16ToFloat32(binary.LittleEndian.Uint16(hb[2*i:]))
				assert.InDelta(t, w[i], g, 1e-2+1e-2*float64(abs(w[i])), "%s -DHALF element %d", k.Name, i)
			}
		}
		if f.Launch == graph.LaunchGEMMRows {
			// Groups of 4 items (fewer than C's columns in some instances,
			// so items loop) and one group past n, for the bounds check.
			run(t, "", []int{4 * (int(cnt) + 1)}, []int{4}, true)
			return
		}
		fam, ok := kernels.FamilyOfEntry(k.Entry)
		if !ok || f.Launch != graph.LaunchElementwise {
			// At least one item past n, to exercise the bounds check.
			run(t, "", global1D(int(cnt)+1), nil, true)
			return
		}
		// A kernel of a variant family (se_residual): EPT elements per
		// item, every declared point.
		for _, alg := range []string{"flat", "rows"} {
			e.forVariants(t, fam.Name, alg, func(t *testing.T, v kernels.Variant, full bool) {
				global, local := runsGeometry(v)(int(cnt), int(ys[r-1]))
				run(t, v.Defines(), global, local, full)
			})
		}
	}
}

// declaredVariants returns every variant the tables declare.
func declaredVariants() []kernels.Variant {
	var out []kernels.Variant
	for _, f := range kernels.Families() {
		out = append(out, f.Variants(kernels.Limits{})...)
	}
	return out
}

// f16Pattern is n f16 bit patterns cycling through 1, -2, 0.5, -0.5 and 2
// (positive only: 1, 0.5 and 2), for -DHALF launches.
func f16Pattern(n int, positive bool) []uint16 {
	vals := []uint16{0x3c00, 0xc000, 0x3800, 0xb800, 0x4000}
	if positive {
		vals = []uint16{0x3c00, 0x3800, 0x4000}
	}
	out := make([]uint16, n)
	for i := range out {
		out[i] = vals[i%len(vals)]
	}
	return out
}

// f16Bits is x as f16 bit patterns (round to nearest even), for -DHALF
// launches.
func f16Bits(x []float32) []uint16 {
	h := make([]uint16, len(x))
	tensor.F32ToF16Slice(h, x)
	return h
}

// f16Rounded is x rounded to f16 and back: a -DHALF launch's inputs as
// its reference reads them.
func f16Rounded(x []float32) []float32 {
	out := make([]float32, len(x))
	for i, h := range f16Bits(x) {
		out[i] = tensor.F16ToFloat32(h)
	}
	return out
}

func i32s(s tensor.Shape) []int32 {
	out := make([]int32, len(s))
	for i, d := range s {
		out[i] = int32(d)
	}
	return out
}

func abs(f float32) float32 {
	if f < 0 {
		return -f
	}
	return f
}

// TestKernelFusionsInCatalogue joins the fusion declarations to the
// catalogue, which lists every __kernel of the .cl files: each declared
// kernel is an entry of its declared file.
func TestKernelFusionsInCatalogue(t *testing.T) {
	for _, f := range fusion.KernelFusions() {
		k, err := kernels.Lookup(f.Kernel)
		if assert.NoError(t, err, "fusion %s declares kernel %s, which no .cl file defines", f.Name, f.Kernel) {
			assert.Equal(t, f.File, k.File, "fusion %s: kernel %s is in %s, the declaration says %s", f.Name, f.Kernel, k.File, f.File)
			assert.Equal(t, f.Kernel, k.Entry, "fusion %s", f.Name)
		}
	}
}

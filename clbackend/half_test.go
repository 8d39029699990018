package clbackend

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// TestHalfLoweringsMatchCPU runs every lowering case (lowerCases) of every
// op whose lowering runs on f16 (lowering.half) with
// INFERENCE_PRECISION_HINT=f16 (emulated where the device lacks
// cl_khr_fp16: the f16 path needs no half arithmetic) and
// compares with the CPU device in f32 within f16 tolerance; each op must
// have run on f16 values in at least one case, so an op cannot join
// the table without its lowering taking f16.
func TestHalfLoweringsMatchCPU(t *testing.T) {
	if d, id, err := DefaultCLDevice(); err == nil {
		if ok, _ := d.HasFP16(); ok {
			t.Logf("f16 mode: native (%s has cl_khr_fp16)", id)
		} else {
			t.Setenv(EnvEmulateFP16, "1")
			t.Logf("f16 mode: emulated (%s lacks cl_khr_fp16; %s=1)", id, EnvEmulateFP16)
		}
	}
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	all := lowerCases()
	var ops []string
	for op, l := range lowerings() {
		if l.half && l.lower != nil {
			ops = append(ops, op)
		}
	}
	sort.Strings(ops)
	for _, op := range ops {
		ranHalf := false
		for ci, c := range all[op] {
			t.Run(op+"/"+c.name, func(t *testing.T) {
				m, ins := c.instance(t, op, ci)
				got, cm := inferAllWith(t, gpu, m, ins, map[string]string{driver.KeyInferencePrecisionHint: "f16"})
				want, _ := inferAll(t, cpu, m, ins)
				assertOutputsClose(t, want, got, 1e-2, 1e-2) // the model's outputs keep their types
				rm, err := cm.RuntimeModel()
				require.NoError(t, err)
				nodes, err := rm.Nodes()
				require.NoError(t, err)
				for _, n := range nodes {
					if n.OpType == op && readsHalf(n) {
						ranHalf = true
					}
				}
			})
		}
		assert.True(t, ranHalf, "%s runs on f16 (half in its lowering) but no case of lowerCases ran it on f16 values: give it a case with f32 inputs", op)
	}
}

// readsHalf reports whether some input or output of n is f16.
func readsHalf(n *graph.Node) bool {
	for _, in := range n.Inputs {
		if in.Valid() && in.Type() == tensor.F16 {
			return true
		}
	}
	for _, o := range n.Outputs {
		if o.Type == tensor.F16 {
			return true
		}
	}
	return false
}

// halfModel is an f16 model as onnxconverter-common writes one: f32 ports,
// a Cast to f16 after the input, f16 weights, a dilated 3x3 Conv and a
// strided one, Casts around an f32-only op (Sigmoid standing for Resize)
// and a Cast to f32 before the output.
var halfModel = lowerCase{"f16_model", func(g *caseGen) *graph.Model {
	c16 := func(lo, hi float64, shape ...int64) graph.Output {
		c := g.c(lo, hi, shape...).Node
		v, err := c.Value.Convert(tensor.F16)
		require.NoError(g.t, err)
		return graph.NewConstant(c.Name, v).Out(0)
	}
	k := 0
	op := func(typ string, attrs graph.Attrs, in ...graph.Output) graph.Output {
		k++
		return graph.NewNode(typ, fmt.Sprintf("%s_%d", typ, k), in, attrs, 1).Out(0)
	}
	toF16, toF32 := graph.Attrs{"to": int64(tensor.F16)}, graph.Attrs{"to": int64(tensor.F32)}
	y := op("Cast", toF16, g.x("x", 1, 4, 13, 11))
	y = op("Relu", nil, op("Conv", graph.Attrs{"pads": []int64{2, 2, 2, 2}, "dilations": []int64{2, 2}}, y, c16(-0.3, 0.3, 6, 4, 3, 3), c16(-0.1, 0.1, 6)))
	y = op("Cast", toF16, op("Sigmoid", nil, op("Cast", toF32, y)))
	y = op("Conv", graph.Attrs{"pads": []int64{1, 1, 1, 1}, "strides": []int64{2, 2}}, y, c16(-0.3, 0.3, 5, 6, 3, 3), c16(-0.1, 0.1, 5))
	return g.model(op("Cast", toF32, y).Node)
}}

// TestHalfModelRunsInF32 compiles an f16 model with the standard passes:
// without the f16 hint every executed node computes in f32
// (RUNTIME_PRECISION), the converter's Casts are gone, the dilated Conv
// runs a fast variant, and the outputs stay within f16 tolerance of the
// model as written (the CPU without transformations: f16 per op); with
// INFERENCE_PRECISION_HINT=f16 (emulated here) the Convs run in f16.
func TestHalfModelRunsInF32(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	m, ins := halfModel.instance(t, "Conv", 0)
	want, _ := inferAll(t, cpu, m, ins)
	precisions := func(cm driver.CompiledModel) (map[string]string, int) {
		rm, err := cm.RuntimeModel()
		require.NoError(t, err)
		nodes, err := rm.Nodes()
		require.NoError(t, err)
		out, casts := map[string]string{}, 0
		for _, n := range nodes {
			switch n.OpType {
			case graph.OpParameter, graph.OpConstant, graph.OpResult:
				continue
			case "Cast":
				casts++
				continue
			}
			out[n.OpType] = n.RT.Extra[driver.RuntimePrecision]
			if n.OpType == graph.OpFusedConv || n.OpType == "Conv" {
				assert.NotEmpty(t, n.RT.Extra[KeyKernelVariant], "%s (dilations %v) runs a variant of the conv family", n.Name, n.Attrs.Ints("dilations", nil))
			}
		}
		return out, casts
	}
	got, cm := inferAllWith(t, gpu, m, ins, map[string]string{driver.KeyDisableTransformations: "NO"})
	assertOutputsClose(t, want, got, 2e-3, 2e-3)
	prec, casts := precisions(cm)
	// The Sigmoid is a post-op of the dilated FusedConv; the last Conv
	// has none to fuse.
	assert.Equal(t, map[string]string{graph.OpFusedConv: "f32", "Conv": "f32"}, prec)
	assert.Zero(t, casts, "the converter's Casts fold away")

	t.Setenv(EnvEmulateFP16, "1")
	got, cm = inferAllWith(t, gpu, m, ins, map[string]string{driver.KeyDisableTransformations: "NO", driver.KeyInferencePrecisionHint: "f16"})
	assertOutputsClose(t, want, got, 1e-2, 1e-2)
	prec, _ = precisions(cm)
	assert.Equal(t, "f16", prec[graph.OpFusedConv], "the f16 hint runs the model as written")
}

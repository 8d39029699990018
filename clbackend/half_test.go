package clbackend

import (
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

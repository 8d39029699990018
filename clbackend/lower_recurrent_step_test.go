package clbackend

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// TestLSTMStep: a one-step LSTM (a streaming model's cell) runs as one
// lstm_step launch (vector widths 16/8 and 4 by the hidden size), forward
// and bidirectional, with and without initial states, peepholes, clip,
// input_forget, other activations and the outputs the node lacks, and
// agrees with the CPU reference on Y, Y_h and Y_c; a longer sequence keeps
// the GEMMs and cells.
func TestLSTMStep(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	for _, c := range []struct {
		name         string
		s, nb, in, h int64
		dirs         int64
		init, peep   bool
		outputs      int
		attrs        graph.Attrs
		kernel       string
	}{
		{"forward_init_h16", 1, 1, 6, 16, 1, true, false, 3, nil, "lstm_step"},
		{"bidirectional_peep_clip_forget_h12", 1, 3, 5, 12, 2, false, true, 3,
			graph.Attrs{"direction": "bidirectional", "clip": float32(0.7), "input_forget": int64(1)}, "lstm_step"},
		{"activations_y_only_h8", 1, 2, 7, 8, 1, true, true, 1,
			graph.Attrs{"activations": []string{"HardSigmoid", "LeakyRelu", "ScaledTanh"},
				"activation_alpha": []float32{0.3, 0.1, 0.8}, "activation_beta": []float32{0.4, 1.2}}, "lstm_step"},
		{"two_steps_keep_cells", 2, 2, 5, 8, 1, true, false, 3, nil, "lstm_cell"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fastBuilder{t: t, values: map[string]*tensor.Tensor{}}
			g := 4 * c.h
			ins := []graph.Output{f.x("x", c.s, c.nb, c.in), f.c(c.dirs, g, c.in), f.c(c.dirs, g, c.h), f.c(c.dirs, 2*g), {}}
			if c.init {
				ins = append(ins, f.x("h0", c.dirs, c.nb, c.h), f.x("c0", c.dirs, c.nb, c.h))
			} else {
				ins = append(ins, graph.Output{}, graph.Output{})
			}
			if c.peep {
				ins = append(ins, f.c(c.dirs, 3*c.h))
			}
			attrs := graph.Attrs{"hidden_size": c.h}
			for k, v := range c.attrs {
				attrs[k] = v
			}
			n := graph.NewNode("LSTM", "node", ins, attrs, c.outputs)
			var res []*graph.Node
			for o := range c.outputs {
				res = append(res, graph.NewResult([]string{"y", "y_h", "y_c"}[o], n.Out(o)))
			}
			m := graph.NewModel("lstm", f.params, res)
			got, cm := inferAll(t, gpu, m, f.values)
			want, _ := inferAll(t, cpu, m, f.values)
			assertOutputsClose(t, want, got, 1e-5, 1e-4)
			rm, err := cm.RuntimeModel()
			require.NoError(t, err)
			impl := rm.Node("node").RT.Extra["IMPL_TYPE"]
			assert.True(t, strings.Contains(impl, c.kernel+":"), "node ran %q, want kernel %s", impl, c.kernel)
			assert.Equal(t, c.kernel == "lstm_step", !strings.Contains(impl, ","), "one launch exactly when stepped: %q", impl)
		})
	}
}

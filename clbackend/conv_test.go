package clbackend

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/tensor"
)

func TestConvBlock(t *testing.T) {
	for _, c := range []struct{ ocg, want int64 }{
		{1, 1}, {2, 2}, {3, 1}, {4, 4}, {6, 2}, {8, 8}, {12, 4}, {16, 8}, {24, 8}, {10, 2},
	} {
		assert.Equal(t, c.want, convBlock(c.ocg), "ocg %d", c.ocg)
	}
}

// TestConvChannelBlocks: the register-blocked conv2d and
// conv_transpose2d kernels agree with the CPU reference for every
// output-channel block (8, 4, 2, 1), with groups, strides, dilations,
// asymmetric pads, batches and with and without bias.
func TestConvChannelBlocks(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	for _, c := range []struct {
		op, name            string
		n, ic, h, w, oc, kh int64
		group               int64
		attrs               graph.Attrs
		bias                bool
	}{
		{"Conv", "ocb8_3x3", 1, 5, 9, 11, 16, 3, 1, graph.Attrs{"pads": []int64{1, 1, 1, 1}}, true},
		{"Conv", "ocb8_1x1_batch2", 2, 7, 6, 5, 8, 1, 1, nil, false},
		{"Conv", "ocb4_stride2_pads", 1, 3, 10, 9, 12, 3, 1, graph.Attrs{"strides": []int64{2, 2}, "pads": []int64{0, 1, 2, 1}}, true},
		{"Conv", "ocb2_groups", 1, 6, 7, 7, 6, 3, 3, graph.Attrs{"dilations": []int64{2, 1}, "pads": []int64{2, 1, 2, 1}}, true},
		{"Conv", "ocb1_depthwise", 2, 4, 8, 8, 4, 5, 4, graph.Attrs{"pads": []int64{2, 2, 2, 2}}, true},
		{"Conv", "ocb1_odd", 1, 2, 5, 6, 3, 2, 1, graph.Attrs{"auto_pad": "SAME_UPPER"}, false},
		{"ConvTranspose", "ocb8_2x2_stride2", 1, 6, 5, 7, 16, 2, 1, graph.Attrs{"strides": []int64{2, 2}}, true},
		{"ConvTranspose", "ocb4_3x3_pads_batch2", 2, 3, 4, 5, 4, 3, 1, graph.Attrs{"strides": []int64{2, 1}, "pads": []int64{1, 0, 0, 1}}, false},
		{"ConvTranspose", "ocb2_groups_dil", 1, 4, 5, 5, 4, 3, 2, graph.Attrs{"dilations": []int64{1, 2}, "strides": []int64{3, 2}}, true},
		{"ConvTranspose", "ocb1_depthwise", 1, 3, 4, 4, 3, 4, 3, graph.Attrs{"strides": []int64{2, 2}, "pads": []int64{1, 1, 1, 1}}, true},
	} {
		t.Run(fmt.Sprintf("%s_%s_block%d", c.op, c.name, convBlock(c.oc/c.group)), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, uint64(c.oc)))
			ws := tensor.Shape{c.oc, c.ic / c.group, c.kh, c.kh}
			if c.op == "ConvTranspose" {
				ws = tensor.Shape{c.ic, c.oc / c.group, c.kh, c.kh}
			}
			wv := make([]float32, ws.NumElements())
			for i := range wv {
				wv[i] = float32(rng.NormFloat64() * 0.5)
			}
			wt, err := tensor.FromF32(ws, wv)
			require.NoError(t, err)
			ins := []graph.Output{{}, graph.NewConstant("w", wt).Out(0)}
			if c.bias {
				bv := make([]float32, c.oc)
				for i := range bv {
					bv[i] = float32(rng.NormFloat64())
				}
				bt, err := tensor.FromF32(tensor.Shape{c.oc}, bv)
				require.NoError(t, err)
				ins = append(ins, graph.NewConstant("b", bt).Out(0))
			}
			x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(c.n, c.ic, c.h, c.w))
			ins[0] = x.Out(0)
			attrs := graph.Attrs{"group": c.group, "kernel_shape": []int64{c.kh, c.kh}}
			for k, v := range c.attrs {
				attrs[k] = v
			}
			conv := graph.NewNode(c.op, "conv", ins, attrs, 1)
			m := graph.NewModel("conv", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", conv.Out(0))})
			xt := randInput(t, tensor.Shape{c.n, c.ic, c.h, c.w}, uint64(c.ic))
			got, _ := runModel(t, gpu, m, xt)
			want, _ := runModel(t, cpu, m, xt)
			assertClose(t, want[0], got[0])
		})
	}
}

// TestWinogradWeights checks the host transform U = G g G^T of the
// Winograd F(2x2,3x3) weights, split across the cores, against the
// product written out in float64, element for element ([16][OC][C]).
func TestWinogradWeights(t *testing.T) {
	G := [4][3]float64{{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}}
	for _, c := range []struct{ oc, c, mr int64 }{{1, 1, 1}, {3, 5, 1}, {17, 4, 1}, {64, 32, 1}, {3, 5, 8}, {17, 4, 8}, {64, 32, 4}} {
		w := seeded.Float32s(uint32(c.oc*100+c.c), int(c.oc*c.c*9), -2, 2)
		got := winogradWeights(w, c.oc, c.c, c.mr)
		rows := (c.oc + c.mr - 1) / c.mr * c.mr
		require.Len(t, got, int(16*rows*c.c))
		for o := int64(0); o < c.oc; o++ {
			for i := int64(0); i < c.c; i++ {
				k := w[(o*c.c+i)*9:]
				for r := 0; r < 4; r++ {
					for col := 0; col < 4; col++ {
						var s float64
						for x := 0; x < 3; x++ {
							for y := 0; y < 3; y++ {
								s += G[r][x] * float64(k[x*3+y]) * G[col][y]
							}
						}
						assert.InDelta(t, s, got[int64(r*4+col)*rows*c.c+((o/c.mr)*c.c+i)*c.mr+o%c.mr], 1e-5, "oc %d c %d: U[%d][%d] of output %d input %d", c.oc, c.c, r, col, o, i)
					}
				}
			}
		}
	}
}

package clbackend

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
)

// TestConvRowEnds runs the register-blocked convolutions (conv's direct
// and grouped, dwconv's direct: one variant per algorithm, vector width
// of 8 or 16 and vectors per row up to 2) against the CPU device on rows
// whose widths put an item's window at the row's end to the column: a
// kernel that loads the taps of an item whose window lies inside the row
// with no bounds check (block.clh's unchecked loads) and the others
// with one must draw that line exactly. With stride 1, pads P, a 3-wide
// window of dilation D and items of NR = NV*VW columns, the item at
// output column k*NR reads input columns k*NR-P to (k+1)*NR-P+2D-1: a
// row of 257 columns (P = D = 1: NR*(k+1) = 256) ends on an item's last
// column, and one of 256 (P = D = 1) or 257 (P = D = 2) ends one column
// before an item's last, which must then load it as padding, not as the
// next row's first value; dwconv's rows of 128 and 129 columns do the
// same for its items of VW columns. Each family's nodes are one model,
// so that a variant is one compile.
func TestConvRowEnds(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	lim := deviceLimits(gpu.devices[gpu.def])
	type conv struct {
		attrs graph.Attrs
		x, w  []int64
	}
	build := func(cs ...conv) lowerCase {
		return lowerCase{"row_ends", func(g *caseGen) *graph.Model {
			var res []*graph.Node
			for i, c := range cs {
				x := g.x(fmt.Sprintf("x%d", i), c.x...)
				n := graph.NewNode("Conv", fmt.Sprintf("conv%d", i), []graph.Output{x, g.c(-0.5, 0.5, c.w...), g.c(-1, 1, c.w[0])}, c.attrs, 1)
				res = append(res, graph.NewResult(fmt.Sprintf("y%d", i), n.Out(0)))
			}
			return graph.NewModel("row_ends", g.params, res)
		}}
	}
	p1, dw := graph.Attrs{"pads": []int64{1, 1, 1, 1}}, graph.Attrs{"group": int64(4), "pads": []int64{1, 1, 1, 1}}
	cases := map[string]lowerCase{
		"conv": build(
			conv{p1, []int64{1, 3, 2, 257}, []int64{10, 3, 3, 3}},
			conv{p1, []int64{1, 3, 2, 256}, []int64{10, 3, 3, 3}},
			conv{graph.Attrs{"pads": []int64{2, 2, 2, 2}, "dilations": []int64{2, 2}}, []int64{1, 3, 5, 257}, []int64{10, 3, 3, 3}}),
		"dwconv": build(
			conv{dw, []int64{1, 4, 3, 129}, []int64{4, 1, 3, 3}},
			conv{dw, []int64{1, 4, 3, 128}, []int64{4, 1, 3, 3}}),
	}
	for fam, c := range cases {
		f, ok := kernels.LookupFamily(fam)
		require.True(t, ok, fam)
		m, ins := c.instance(t, "rowends/"+fam, 0)
		want, _ := inferAll(t, cpu, m, ins)
		seen := map[string]bool{}
		for _, v := range f.Variants(lim) {
			key := fmt.Sprintf("%s VW=%d NV=%d", v.Algorithm, v.Get("VW"), v.Get("NV"))
			if (v.Algorithm != "direct" && v.Algorithm != "grouped") || v.Get("VW") < 8 || v.Get("NV") > 2 || seen[key] {
				continue
			}
			seen[key] = true
			t.Run(v.String(), func(t *testing.T) {
				got, cm := inferAllWith(t, gpu, m, ins, pinned(v.String()))
				require.True(t, ranVariant(t, cm, v), "no node ran %s", v)
				assertOutputsClose(t, want, got, 1e-4, 1e-3)
			})
		}
		require.NotEmpty(t, seen, "no variant of %s fits %s", fam, gpu.devices[gpu.def].fullName)
	}
}

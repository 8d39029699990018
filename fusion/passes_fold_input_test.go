package fusion_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
)

// TestFoldInputScaleShift folds a normalisation ((x - mean) / std per
// channel) into the following convolution: the scale always, the mean only
// when the convolution does not pad; the CPU computes the same before and
// after (transform checks it).
func TestFoldInputScaleShift(t *testing.T) {
	for _, c := range []struct {
		name      string
		attrs     graph.Attrs
		group     int64
		wantLeft  []string // ops left before the Conv
		wantFused int
	}{
		{"unpadded", graph.Attrs{}, 1, nil, 2},
		{"padded keeps the mean", graph.Attrs{"pads": []int64{1, 1, 1, 1}}, 1, []string{"Sub"}, 1},
		{"grouped", graph.Attrs{"group": int64(3), "strides": []int64{2, 2}}, 3, nil, 2},
		{"same_upper keeps the mean", graph.Attrs{"auto_pad": "SAME_UPPER"}, 1, []string{"Sub"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder(t)
			x := b.param("x", 1, 3, 7, 9)
			sub := b.op("Sub", nil, x, b.rand(-1, 1, 1, 3, 1, 1))
			div := b.op("Div", nil, sub, b.rand(0.5, 2, 3, 1, 1))
			w := b.rand(-1, 1, 6, 3/c.group, 3, 3)
			attrs := c.attrs.Clone()
			if c.group != 1 {
				attrs["group"] = c.group
			}
			conv := b.op("Conv", attrs, div, w, b.rand(-1, 1, 6))
			m := b.model(b.op("Relu", nil, conv))
			tm, rep := transform(t, m, randomInputs(t, m, 3, nil), fusion.FoldInputScaleShift())
			assert.Equal(t, c.wantFused, rewrites(rep, fusion.PassFoldInputScaleShift))
			assert.Equal(t, 0, opCount(t, tm, "Div"))
			assert.Equal(t, len(c.wantLeft), opCount(t, tm, "Sub"))
			var cv *graph.Node
			nodes, err := tm.Nodes()
			require.NoError(t, err)
			for _, n := range nodes {
				if n.OpType == "Conv" {
					cv = n
				}
			}
			require.NotNil(t, cv)
			assert.Contains(t, cv.RT.FusedNames, div.Node.Name, "the runtime model names the normalisation in the Conv")
		})
	}
}

// TestFoldInputScaleShiftDeclines leaves a normalisation read elsewhere
// and a non-constant scale alone.
func TestFoldInputScaleShiftDeclines(t *testing.T) {
	b := newBuilder(t)
	x := b.param("x", 1, 3, 5, 5)
	s := b.param("s", 1, 3, 1, 1)
	mul := b.op("Mul", nil, x, s)
	conv := b.op("Conv", nil, mul, b.rand(-1, 1, 2, 3, 1, 1))
	div := b.op("Div", nil, x, b.rand(1, 2, 1, 3, 1, 1))
	conv2 := b.op("Conv", nil, div, b.rand(-1, 1, 2, 3, 1, 1))
	m := b.model(conv, conv2, div)
	tm, rep := transform(t, m, randomInputs(t, m, 4, nil), fusion.FoldInputScaleShift())
	assert.Equal(t, 0, rewrites(rep, fusion.PassFoldInputScaleShift))
	assert.Equal(t, 1, opCount(t, tm, "Mul"))
	assert.Equal(t, 1, opCount(t, tm, "Div"))
}

// rewrites is how many rewrites the report says pass made.
func rewrites(rep *fusion.Report, pass string) int {
	for _, p := range rep.Passes {
		if p.Name == pass {
			return p.Rewrites
		}
	}
	return -1
}

package textpage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dark is the fraction of pixels of img whose mean channel is below 128
// (ink on the light paper).
func dark(img *Image) float64 {
	n := 0
	for i := 0; i < len(img.Pix); i += 3 {
		if int(img.Pix[i])+int(img.Pix[i+1])+int(img.Pix[i+2]) < 3*128 {
			n++
		}
	}
	return float64(n) / float64(img.W*img.H)
}

func TestPageAndLine(t *testing.T) {
	a, b := Page(3, 160, 200), Page(3, 160, 200)
	require.Equal(t, 160*200*3, len(a.Pix))
	assert.Equal(t, a.Pix, b.Pix, "the same seed draws the same page")
	assert.NotEqual(t, a.Pix, Page(4, 160, 200).Pix, "another seed another page")
	assert.Greater(t, dark(a), 0.01, "a page carries ink")
	assert.Less(t, dark(a), 0.5, "on light paper")

	l, f := Line(5, 48, 192, false), Line(5, 48, 192, true)
	for y := 0; y < 48; y++ {
		for x := 0; x < 192; x++ {
			i, j := (y*192+x)*3, ((47-y)*192+191-x)*3
			require.Equal(t, l.Pix[i:i+3], f.Pix[j:j+3], "the flipped line is the line rotated 180 degrees at (%d, %d)", y, x)
		}
	}
	x := a.Normalised(DetMean, DetStd)
	assert.Equal(t, []int64{1, 3, 160, 200}, []int64(x.Shape()))
	assert.InDelta(t, (float32(a.Pix[0])/255-DetMean[0])/DetStd[0], x.F32()[0], 1e-6)
}

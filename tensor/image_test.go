package tensor_test

import (
	"image"
	"image/color"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

// TestFromImage reads every fast path and the generic one, on a sub-image
// (its bounds do not start at 0), against what the image's At says.
func TestFromImage(t *testing.T) {
	full := image.Rect(0, 0, 7, 5)
	sub := image.Rect(1, 2, 6, 5)
	nrgba := image.NewNRGBA(full)
	rgba := image.NewRGBA(full)
	gray := image.NewGray(full)
	ycc := image.NewYCbCr(full, image.YCbCrSubsampleRatio420)
	paletted := image.NewPaletted(full, color.Palette{color.Black, color.RGBA{200, 10, 30, 255}})
	for y := 0; y < 5; y++ {
		for x := 0; x < 7; x++ {
			c := color.NRGBA{uint8(30*x + y), uint8(10 * y), uint8(255 - 20*x), 255}
			nrgba.SetNRGBA(x, y, c)
			rgba.SetRGBA(x, y, color.RGBA{c.R, c.G, c.B, 255})
			gray.SetGray(x, y, color.Gray{uint8(x*y*9 + 3)})
			paletted.SetColorIndex(x, y, uint8((x+y)%2))
		}
	}
	for i := range ycc.Y {
		ycc.Y[i] = uint8(16 + i*3)
	}
	for i := range ycc.Cb {
		ycc.Cb[i], ycc.Cr[i] = uint8(90+i*7), uint8(200-i*5)
	}
	translucent := image.NewRGBA(image.Rect(0, 0, 1, 1))
	translucent.SetRGBA(0, 0, color.RGBA{50, 100, 0, 128}) // premultiplied
	for _, c := range []struct {
		name string
		img  image.Image
	}{
		{"NRGBA", nrgba.SubImage(sub)}, {"RGBA", rgba.SubImage(sub)}, {"Gray", gray.SubImage(sub)},
		{"YCbCr", ycc.SubImage(sub)}, {"Paletted", paletted.SubImage(sub)}, {"translucent RGBA", translucent},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, err := tensor.FromImage(c.img)
			require.NoError(t, err)
			b := c.img.Bounds()
			ch := int64(3)
			if _, ok := c.img.(*image.Gray); ok {
				ch = 1
			}
			require.Equal(t, tensor.Shape{1, int64(b.Dy()), int64(b.Dx()), ch}, x.Shape())
			assert.Equal(t, tensor.U8, x.Type())
			px := x.U8()
			for y := 0; y < b.Dy(); y++ {
				for i := 0; i < b.Dx(); i++ {
					want := color.NRGBAModel.Convert(c.img.At(b.Min.X+i, b.Min.Y+y)).(color.NRGBA)
					o := (y*b.Dx() + i) * int(ch)
					if ch == 1 {
						assert.Equal(t, color.GrayModel.Convert(c.img.At(b.Min.X+i, b.Min.Y+y)).(color.Gray).Y, px[o])
						continue
					}
					assert.InDelta(t, want.R, px[o], 1, "R at (%d,%d)", i, y)
					assert.InDelta(t, want.G, px[o+1], 1, "G at (%d,%d)", i, y)
					assert.InDelta(t, want.B, px[o+2], 1, "B at (%d,%d)", i, y)
				}
			}
		})
	}
}

// BenchmarkFromImage measures the fast paths on a 1280x960 image.
func BenchmarkFromImage(b *testing.B) {
	r := image.Rect(0, 0, 1280, 960)
	for _, img := range []image.Image{image.NewNRGBA(r), image.NewRGBA(r), image.NewYCbCr(r, image.YCbCrSubsampleRatio420), image.NewGray(r)} {
		b.Run(fmtType(img), func(b *testing.B) {
			for b.Loop() {
				if _, err := tensor.FromImage(img); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(r.Dx()*r.Dy())/1e6, "Mpixel/op")
		})
	}
}

func fmtType(img image.Image) string {
	switch img.(type) {
	case *image.NRGBA:
		return "NRGBA"
	case *image.RGBA:
		return "RGBA"
	case *image.YCbCr:
		return "YCbCr"
	case *image.Gray:
		return "Gray"
	}
	return "other"
}

// atOnly hides an image's type: FromImage reads it through At.
type atOnly struct{ image.Image }

// TestFromImageReadsBuffers: the fast paths read the pixel buffers, never
// At, which returns every pixel boxed in a color.Color: converting a
// 64x48 image allocates no more than converting a 2x2 one (the tensor),
// where the same image read through At allocates per pixel.
func TestFromImageReadsBuffers(t *testing.T) {
	fill := func(pix []uint8) {
		for i := range pix {
			pix[i] = uint8(i*7 + 3)
		}
	}
	images := func(w, h int) map[string]image.Image {
		r := image.Rect(0, 0, w, h)
		nrgba, rgba, gray := image.NewNRGBA(r), image.NewRGBA(r), image.NewGray(r)
		ycc := image.NewYCbCr(r, image.YCbCrSubsampleRatio420)
		fill(nrgba.Pix)
		fill(rgba.Pix)
		fill(gray.Pix)
		fill(ycc.Y)
		fill(ycc.Cb)
		return map[string]image.Image{"NRGBA": nrgba, "RGBA": rgba, "Gray": gray, "YCbCr": ycc, "At only": atOnly{nrgba}}
	}
	allocs := func(img image.Image) float64 {
		return testing.AllocsPerRun(3, func() {
			if _, err := tensor.FromImage(img); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, big := images(2, 2), images(64, 48)
	for name := range small {
		s, b := allocs(small[name]), allocs(big[name])
		if name == "At only" {
			assert.Greater(t, b, s+1000, "the At path allocates per pixel (the check can tell)")
			continue
		}
		assert.Equal(t, s, b, "%s: %v allocations for 2x2, %v for 64x48", name, s, b)
	}
}

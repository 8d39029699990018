package tensor

import (
	"image"
	"image/color"
)

// FromImage returns the pixels of img as a u8 tensor [1, H, W, C] in NHWC
// layout, the form a model with preprocessing (package preprocess: a u8
// NHWC tensor of colour format RGB, or GRAY) takes directly: C is 1 for
// *image.Gray and 3 (R, G, B) for every other image, whose alpha is
// dropped (colours not premultiplied: a translucent *image.RGBA pixel is
// divided by its alpha first, as *image.NRGBA stores it).
//
// *image.RGBA, *image.NRGBA, *image.YCbCr and *image.Gray are read from
// their pixel buffers; other images through their At method.
func FromImage(img image.Image) (*Tensor, error) {
	r := img.Bounds()
	h, w := int64(r.Dy()), int64(r.Dx())
	if g, ok := img.(*image.Gray); ok {
		x, err := New(U8, Shape{1, h, w, 1})
		if err != nil {
			return nil, err
		}
		dst := x.Bytes()
		for y := 0; y < int(h); y++ {
			o := g.PixOffset(r.Min.X, r.Min.Y+y)
			copy(dst[y*int(w):(y+1)*int(w)], g.Pix[o:o+int(w)])
		}
		return x, nil
	}
	x, err := New(U8, Shape{1, h, w, 3})
	if err != nil {
		return nil, err
	}
	dst := x.Bytes()
	W := int(w)
	switch im := img.(type) {
	case *image.NRGBA:
		for y := 0; y < int(h); y++ {
			src := im.Pix[im.PixOffset(r.Min.X, r.Min.Y+y):]
			row := dst[y*W*3 : (y+1)*W*3]
			for i := 0; i < W; i++ {
				row[3*i], row[3*i+1], row[3*i+2] = src[4*i], src[4*i+1], src[4*i+2]
			}
		}
	case *image.RGBA:
		for y := 0; y < int(h); y++ {
			src := im.Pix[im.PixOffset(r.Min.X, r.Min.Y+y):]
			row := dst[y*W*3 : (y+1)*W*3]
			for i := 0; i < W; i++ {
				a := src[4*i+3]
				if a == 255 || a == 0 {
					row[3*i], row[3*i+1], row[3*i+2] = src[4*i], src[4*i+1], src[4*i+2]
					continue
				}
				for c := 0; c < 3; c++ {
					row[3*i+c] = uint8((uint32(src[4*i+c])*255 + uint32(a)/2) / uint32(a))
				}
			}
		}
	case *image.YCbCr:
		for y := 0; y < int(h); y++ {
			row := dst[y*W*3 : (y+1)*W*3]
			for i := 0; i < W; i++ {
				yi := im.YOffset(r.Min.X+i, r.Min.Y+y)
				ci := im.COffset(r.Min.X+i, r.Min.Y+y)
				row[3*i], row[3*i+1], row[3*i+2] = color.YCbCrToRGB(im.Y[yi], im.Cb[ci], im.Cr[ci])
			}
		}
	default:
		for y := 0; y < int(h); y++ {
			row := dst[y*W*3 : (y+1)*W*3]
			for i := 0; i < W; i++ {
				c := color.NRGBAModel.Convert(img.At(r.Min.X+i, r.Min.Y+y)).(color.NRGBA)
				row[3*i], row[3*i+1], row[3*i+2] = c.R, c.G, c.B
			}
		}
	}
	return x, nil
}

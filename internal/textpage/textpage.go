package textpage

import (
	"math"

	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/tensor"
)

// Image is an RGB image, row-major, 3 bytes per pixel.
type Image struct {
	W, H int
	Pix  []uint8
}

// glyphs is the made-up script: 48 glyphs of 5x7 cells, fixed (seed 7).
var glyphs = makeGlyphs(48, 7)

// makeGlyphs draws n glyphs from strokes on a 5x7 grid.
func makeGlyphs(n int, seed uint32) [][7][5]bool {
	r := seeded.New(seed)
	out := make([][7][5]bool, n)
	for i := range out {
		g := &out[i]
		strokes := 2 + int(r.Uint32()%3)
		for range strokes {
			switch r.Uint32() % 5 {
			case 0: // bar
				y, x0, x1 := int(r.Uint32()%7), int(r.Uint32()%3), 2+int(r.Uint32()%3)
				for x := x0; x <= x1; x++ {
					g[y][x] = true
				}
			case 1: // post
				x, y0, y1 := int(r.Uint32()%5), int(r.Uint32()%3), 3+int(r.Uint32()%4)
				for y := y0; y <= y1; y++ {
					g[y][x] = true
				}
			case 2: // diagonal
				x, dir := int(r.Uint32()%2), 1
				if r.Uint32()%2 == 0 {
					x, dir = 4-x, -1
				}
				for y := 1; y < 6 && x >= 0 && x < 5; y++ {
					g[y][x] = true
					if y%2 == 0 {
						x += dir
					}
				}
			case 3: // bowl
				for y := 2; y < 6; y++ {
					g[y][1], g[y][3] = true, true
				}
				g[1][2], g[6][2] = true, true
			default: // dot
				g[int(r.Uint32()%7)][int(r.Uint32()%5)] = true
			}
		}
	}
	return out
}

// canvas is an image being drawn, in float luminance per channel.
type canvas struct {
	w, h int
	px   []float32 // RGB, 0..255
}

// paper fills c with off-white paper: a gentle gradient and noise.
func (c *canvas) paper(r *seeded.Rand) {
	base := 225 + 25*float32(r.Float64())
	tint := [3]float32{0, -3 * float32(r.Float64()), -8 * float32(r.Float64())}
	gx, gy := 10*float32(r.Float64()-0.5), 10*float32(r.Float64()-0.5)
	for y := range c.h {
		for x := range c.w {
			v := base + gx*float32(x)/float32(c.w) + gy*float32(y)/float32(c.h) + 6*float32(r.Float64()-0.5)
			for ch := range 3 {
				c.px[(y*c.w+x)*3+ch] = v + tint[ch]
			}
		}
	}
}

// fill covers the rectangle with ink at coverage a (anti-aliased edges
// from the fractional bounds).
func (c *canvas) fill(x0, y0, x1, y1 float64, ink [3]float32, a float32) {
	for y := max(0, int(y0)); y < min(c.h, int(math.Ceil(y1))); y++ {
		cy := math.Min(y1, float64(y+1)) - math.Max(y0, float64(y))
		for x := max(0, int(x0)); x < min(c.w, int(math.Ceil(x1))); x++ {
			cx := math.Min(x1, float64(x+1)) - math.Max(x0, float64(x))
			cov := a * float32(cx*cy)
			for ch := range 3 {
				p := &c.px[(y*c.w+x)*3+ch]
				*p += (ink[ch] - *p) * cov
			}
		}
	}
}

// glyph draws glyph g with its top-left at (x, y), cells of size cw x ch.
func (c *canvas) glyph(g *[7][5]bool, x, y, cw, ch float64, ink [3]float32) {
	for gy := range 7 {
		for gx := range 5 {
			if g[gy][gx] {
				c.fill(x+float64(gx)*cw, y+float64(gy)*ch, x+float64(gx+1)*cw, y+float64(gy+1)*ch, ink, 1)
			}
		}
	}
}

// text writes words of glyphs from x to at most xEnd on the line whose
// glyphs are size px high at y; it returns where it stopped.
func (c *canvas) text(r *seeded.Rand, x, xEnd, y, size float64, ink [3]float32) float64 {
	cw, ch := size/7*0.9, size/7
	for x < xEnd {
		n := 2 + int(r.Uint32()%8)
		if x+float64(n)*cw*6 > xEnd {
			break
		}
		for range n {
			c.glyph(&glyphs[r.Uint32()%uint32(len(glyphs))], x, y, cw, ch, ink)
			x += cw * 6
		}
		x += cw * (4 + float64(r.Uint32()%4))
	}
	return x
}

// image returns c as 8-bit RGB.
func (c *canvas) image() *Image {
	img := &Image{W: c.w, H: c.h, Pix: make([]uint8, len(c.px))}
	for i, v := range c.px {
		img.Pix[i] = uint8(max(0, min(255, math.Round(float64(v)))))
	}
	return img
}

// ink is a dark ink: near black, dark blue or dark grey.
func ink(r *seeded.Rand) [3]float32 {
	switch r.Uint32() % 4 {
	case 0:
		return [3]float32{20, 30, 90}
	case 1:
		return [3]float32{70, 70, 70}
	}
	v := 10 + 30*float32(r.Float64())
	return [3]float32{v, v, v}
}

// Page renders page seed at h x w: margins, a title, paragraphs of lines
// in several sizes, ruled lines and a picture block.
func Page(seed uint32, h, w int) *Image {
	r := seeded.New(seed)
	c := &canvas{w: w, h: h, px: make([]float32, w*h*3)}
	c.paper(r)
	margin := float64(w) * (0.04 + 0.04*r.Float64())
	y := float64(h) * (0.03 + 0.03*r.Float64())
	title := float64(h) * (0.035 + 0.02*r.Float64())
	c.text(r, margin+float64(w)*0.1*r.Float64(), float64(w)*0.7, y, title, ink(r))
	y += title * 2
	// A picture block on one side, text beside and below it.
	pw, ph := float64(w)*(0.25+0.15*r.Float64()), float64(h)*(0.15+0.1*r.Float64())
	px := float64(w) - margin - pw
	if r.Uint32()%2 == 0 {
		px = margin
	}
	py := y + float64(h)*0.1*r.Float64()
	c.picture(r, px, py, pw, ph)
	for y < float64(h)*0.95 {
		size := float64(h) * (0.014 + 0.02*r.Float64())
		lines := 2 + int(r.Uint32()%5)
		col := ink(r)
		for range lines {
			if y+size > float64(h)*0.95 {
				break
			}
			x0, x1 := margin, float64(w)-margin
			if y+size > py && y < py+ph { // beside the picture
				if px == margin {
					x0 = px + pw + margin/2
				} else {
					x1 = px - margin/2
				}
			}
			end := x1 - (x1-x0)*0.3*r.Float64()
			c.text(r, x0, end, y, size, col)
			y += size * (1.5 + 0.5*r.Float64())
		}
		if r.Uint32()%3 == 0 { // a rule under the paragraph
			c.fill(margin, y, float64(w)-margin, y+1.2, [3]float32{90, 90, 90}, 0.8)
		}
		y += size * (1 + 1.5*r.Float64())
	}
	return c.image()
}

// picture draws a block of smooth colour with shapes (not text).
func (c *canvas) picture(r *seeded.Rand, x, y, w, h float64) {
	col := [3]float32{float32(60 + 150*r.Float64()), float32(60 + 150*r.Float64()), float32(60 + 150*r.Float64())}
	for i := range 12 {
		f := float64(i) / 12
		shade := [3]float32{col[0] * float32(0.6+0.4*f), col[1] * float32(0.6+0.4*f), col[2] * float32(1-0.3*f)}
		c.fill(x, y+h*f, x+w, y+h*(f+1.0/12), shade, 1)
	}
	for range 3 {
		cx, cy, rad := x+w*r.Float64(), y+h*r.Float64(), math.Min(w, h)*(0.1+0.2*r.Float64())
		c.fill(max(x, cx-rad), max(y, cy-rad), min(x+w, cx+rad), min(y+h, cy+rad), [3]float32{240, 220, 120}, 0.7)
	}
}

// Line renders text line seed at h x w (PP-OCR cls's crops are 48 x 192):
// one line of glyphs, upside down (rotated 180 degrees) when flipped.
func Line(seed uint32, h, w int, flipped bool) *Image {
	r := seeded.New(seed)
	c := &canvas{w: w, h: h, px: make([]float32, w*h*3)}
	c.paper(r)
	size := float64(h) * (0.45 + 0.3*r.Float64())
	c.text(r, float64(w)*0.03, float64(w)*(0.75+0.25*r.Float64()), (float64(h)-size)/2, size, ink(r))
	img := c.image()
	if flipped {
		for i, j := 0, w*h-1; i < j; i, j = i+1, j-1 {
			for ch := range 3 {
				img.Pix[i*3+ch], img.Pix[j*3+ch] = img.Pix[j*3+ch], img.Pix[i*3+ch]
			}
		}
	}
	return img
}

// Normalised returns img as f32 [1, 3, H, W] with (x/255 - mean[c]) /
// std[c]: PP-OCR det's ImageNet statistics, or cls's 0.5 / 0.5.
func (img *Image) Normalised(mean, std [3]float32) *tensor.Tensor {
	n := img.W * img.H
	v := make([]float32, 3*n)
	for i := range n {
		for ch := range 3 {
			v[ch*n+i] = (float32(img.Pix[i*3+ch])/255 - mean[ch]) / std[ch]
		}
	}
	t, _ := tensor.FromF32(tensor.Shape{1, 3, int64(img.H), int64(img.W)}, v) // the shape holds exactly the values
	return t
}

// DetMean and DetStd are PP-OCR det's normalisation (ImageNet's); ClsMean
// and ClsStd cls's.
var (
	DetMean = [3]float32{0.485, 0.456, 0.406}
	DetStd  = [3]float32{0.229, 0.224, 0.225}
	ClsMean = [3]float32{0.5, 0.5, 0.5}
	ClsStd  = [3]float32{0.5, 0.5, 0.5}
)

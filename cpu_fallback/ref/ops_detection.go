package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// roiBilinear is one bilinear sample of RoiAlign: four element offsets in
// a feature map and their weights (all zero outside the map).
type roiBilinear struct {
	pos [4]int64
	w   [4]float64
}

// roiSample returns the sample at (y, x) of an h x w map, as ONNX Runtime
// computes it: points more than one pixel outside give zero weights, the
// others are clamped into the map.
func roiSample(y, x float64, h, w int64) roiBilinear {
	if y < -1 || y > float64(h) || x < -1 || x > float64(w) {
		return roiBilinear{}
	}
	y, x = max(y, 0), max(x, 0)
	yl, xl := int64(y), int64(x)
	yh, xh := yl+1, xl+1
	if yl >= h-1 {
		yl, yh, y = h-1, h-1, float64(h-1)
	}
	if xl >= w-1 {
		xl, xh, x = w-1, w-1, float64(w-1)
	}
	ly, lx := y-float64(yl), x-float64(xl)
	hy, hx := 1-ly, 1-lx
	return roiBilinear{pos: [4]int64{yl*w + xl, yl*w + xh, yh*w + xl, yh*w + xh}, w: [4]float64{hy * hx, hy * lx, ly * hx, ly * lx}}
}

// roiAlignKernel is RoiAlign: each output bin averages (mode avg) or takes
// the maximum (mode max: of each sample's largest weighted corner, as ONNX
// Runtime does) of a grid of bilinear samples of its roi's feature map.
func roiAlignKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	rois, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	bi, err := need(n, in, 2)
	if err != nil {
		return nil, err
	}
	xs, rs := x.Shape(), rois.Shape()
	if len(xs) != 4 || len(rs) != 2 || rs[1] != 4 || bi.NumElements() != rs[0] {
		return nil, n.Errorf("%w: X %v, rois %v, batch_indices %v: want [N,C,H,W], [R,4], [R]", driver.ErrInvalidArgument, xs, rs, bi.Shape())
	}
	C, H, W := xs[1], xs[2], xs[3]
	oh, ow := n.Attrs.Int("output_height", 1), n.Attrs.Int("output_width", 1)
	ratio := n.Attrs.Int("sampling_ratio", 0)
	scale := float64(n.Attrs.Float("spatial_scale", 1))
	half := n.Attrs.String("coordinate_transformation_mode", "half_pixel") == "half_pixel"
	isMax := n.Attrs.String("mode", "avg") == "max"
	R := rs[0]
	y, err := newOut(n, x.Type(), tensor.Shape{R, C, oh, ow})
	if err != nil {
		return nil, err
	}
	X, rv, batch := x.Float64s(), rois.Float64s(), toI64s(bi)
	out := make([]float64, y.NumElements())
	offset := 0.0
	if half {
		offset = 0.5
	}
	for r := range R {
		b := batch[r]
		if b < 0 || b >= xs[0] {
			return nil, n.Errorf("%w: roi %d has batch index %d, outside [0, %d)", driver.ErrInvalidArgument, r, b, xs[0])
		}
		x1, y1 := rv[r*4]*scale-offset, rv[r*4+1]*scale-offset
		rw, rh := rv[r*4+2]*scale-offset-x1, rv[r*4+3]*scale-offset-y1
		if !half {
			rw, rh = max(rw, 1), max(rh, 1)
		}
		bh, bw := rh/float64(oh), rw/float64(ow)
		gh, gw := ratio, ratio
		if ratio <= 0 {
			gh, gw = int64(math.Ceil(rh/float64(oh))), int64(math.Ceil(rw/float64(ow)))
		}
		count := float64(max(gh*gw, 1))
		samples := make([]roiBilinear, 0, gh*gw)
		for ph := range oh {
			for pw := range ow {
				samples = samples[:0]
				for iy := range gh {
					yy := y1 + float64(ph)*bh + (float64(iy)+0.5)*bh/float64(gh)
					for ix := range gw {
						xx := x1 + float64(pw)*bw + (float64(ix)+0.5)*bw/float64(gw)
						samples = append(samples, roiSample(yy, xx, H, W))
					}
				}
				for c := range C {
					fm := X[(b*C+c)*H*W : (b*C+c+1)*H*W]
					v := 0.0
					for si, s := range samples {
						if isMax {
							m := max(s.w[0]*fm[s.pos[0]], s.w[1]*fm[s.pos[1]], s.w[2]*fm[s.pos[2]], s.w[3]*fm[s.pos[3]])
							if si == 0 || m > v {
								v = m
							}
							continue
						}
						v += s.w[0]*fm[s.pos[0]] + s.w[1]*fm[s.pos[1]] + s.w[2]*fm[s.pos[2]] + s.w[3]*fm[s.pos[3]]
					}
					if !isMax {
						v /= count
					}
					out[((r*C+c)*oh+ph)*ow+pw] = v
				}
			}
		}
	}
	storeF64(y, out)
	return one(y), nil
}

// detectionKernels are the detection-head ops: RoiAlign.
func detectionKernels() map[string]Kernel {
	return map[string]Kernel{
		"RoiAlign": roiAlignKernel,
	}
}

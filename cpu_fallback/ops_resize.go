package cpufallback

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// axisResample is the 1-D resampling of one axis: output j reads inputs
// idx[j*taps+t] with weights w[j*taps+t]; outside[j] marks outputs that
// take the extrapolation value (tf_crop_and_resize).
type axisResample struct {
	taps    int
	idx     []int64
	w       []float32
	outside []bool
}

// resizeKernel is ONNX Resize (opset 18/19) for nearest, linear and cubic
// modes. The n-D interpolation is separable, so it is applied one axis at
// a time; axes whose mapping is the identity are skipped.
func resizeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := nnInput(n, in, 0, 0)
	if err != nil {
		return nil, err
	}
	if n.Attrs.Int("antialias", 0) != 0 {
		return nil, n.Errorf("antialias=1 is not supported")
	}
	xs := x.Shape()
	r := len(xs)
	mode := n.Attrs.String("mode", "nearest")
	ctm := n.Attrs.String("coordinate_transformation_mode", "half_pixel")
	nearest := n.Attrs.String("nearest_mode", "round_prefer_floor")
	cubicA := float64(n.Attrs.Float("cubic_coeff_a", -0.75))
	exclude := n.Attrs.Int("exclude_outside", 0) != 0
	extrap := n.Attrs.Float("extrapolation_value", 0)
	policy := n.Attrs.String("keep_aspect_ratio_policy", "stretch")
	axes := n.Attrs.Ints("axes", nil)
	if axes == nil {
		axes = make([]int64, r)
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	ax := make([]int, len(axes))
	for i, a := range axes {
		if ax[i], err = normAxis(n, a, r); err != nil {
			return nil, err
		}
	}
	scalesIn, hasScales, err := nnFloats(n, in, 2)
	if err != nil {
		return nil, err
	}
	sizesIn, hasSizes, err := nnInts(n, in, 3)
	if err != nil {
		return nil, err
	}
	if hasScales == hasSizes {
		return nil, n.Errorf("exactly one of scales and sizes must be given")
	}
	scale := make([]float64, r)
	out := xs.Clone()
	for i := range scale {
		scale[i] = 1
	}
	if hasScales {
		if len(scalesIn) != len(ax) {
			return nil, n.Errorf("scales has %d values, want %d", len(scalesIn), len(ax))
		}
		for i, a := range ax {
			if scalesIn[i] <= 0 {
				return nil, n.Errorf("scales %v must be positive", scalesIn)
			}
			scale[a] = float64(scalesIn[i])
			out[a] = int64(math.Floor(float64(xs[a]) * scale[a]))
		}
	} else {
		if len(sizesIn) != len(ax) {
			return nil, n.Errorf("sizes has %d values, want %d", len(sizesIn), len(ax))
		}
		switch policy {
		case "stretch":
			for i, a := range ax {
				out[a] = sizesIn[i]
				scale[a] = float64(sizesIn[i]) / float64(xs[a])
			}
		case "not_larger", "not_smaller":
			s := math.Inf(1)
			if policy == "not_smaller" {
				s = math.Inf(-1)
			}
			for i, a := range ax {
				v := float64(sizesIn[i]) / float64(xs[a])
				if policy == "not_larger" {
					s = math.Min(s, v)
				} else {
					s = math.Max(s, v)
				}
			}
			for _, a := range ax {
				scale[a] = s
				out[a] = int64(math.Round(s * float64(xs[a])))
			}
		default:
			return nil, n.Errorf("keep_aspect_ratio_policy %q: want stretch, not_larger or not_smaller", policy)
		}
		for _, a := range ax {
			if out[a] < 0 {
				return nil, n.Errorf("sizes %v must not be negative", sizesIn)
			}
		}
	}
	var roi []float32
	if ctm == "tf_crop_and_resize" {
		v, ok, err := nnFloats(n, in, 1)
		if err != nil {
			return nil, err
		}
		if !ok || (len(v) != 2*len(ax) && len(v) != 2*r) {
			return nil, n.Errorf("tf_crop_and_resize needs roi with %d values", 2*len(ax))
		}
		roi = make([]float32, 2*r)
		for i := 0; i < r; i++ {
			roi[i], roi[i+r] = 0, 1
		}
		if len(v) == 2*r && len(ax) != r {
			copy(roi, v)
		} else {
			for i, a := range ax {
				roi[a], roi[a+r] = v[i], v[i+len(ax)]
			}
		}
	}
	cur := x
	var maskAxes []struct {
		axis int
		rs   *axisResample
	}
	for a := 0; a < r; a++ {
		if out[a] == xs[a] && scale[a] == 1 && ctm != "tf_crop_and_resize" {
			continue
		}
		var roiS, roiE float64
		if roi != nil {
			roiS, roiE = float64(roi[a]), float64(roi[a+r])
		}
		rs, err := resampleAxis(n, xs[a], out[a], scale[a], mode, ctm, nearest, cubicA, exclude, roiS, roiE)
		if err != nil {
			return nil, err
		}
		cur, err = applyAxis(n, cur, a, rs)
		if err != nil {
			return nil, err
		}
		if rs.outside != nil {
			maskAxes = append(maskAxes, struct {
				axis int
				rs   *axisResample
			}{a, rs})
		}
	}
	if cur == x {
		cur = x.Clone()
	}
	if len(maskAxes) > 0 {
		cs := cur.Shape()
		total := cs.NumElements()
		str := tensor.ContiguousStrides(cs)
		Y := cur.F32()
		for i := int64(0); i < total; i++ {
			for _, m := range maskAxes {
				j := (i / str[m.axis]) % cs[m.axis]
				if m.rs.outside[j] {
					Y[i] = extrap
					break
				}
			}
		}
	}
	return []*tensor.Tensor{cur}, nil
}

// resampleAxis builds the 1-D sampling of an axis from in to out elements.
func resampleAxis(n *graph.Node, in, out int64, scale float64, mode, ctm, nearest string, cubicA float64, exclude bool, roiS, roiE float64) (*axisResample, error) {
	rs := &axisResample{}
	switch mode {
	case "nearest":
		rs.taps = 1
	case "linear":
		rs.taps = 2
	case "cubic":
		rs.taps = 4
	default:
		return nil, n.Errorf("mode %q: want nearest, linear or cubic", mode)
	}
	rs.idx = make([]int64, int(out)*rs.taps)
	rs.w = make([]float32, int(out)*rs.taps)
	if ctm == "tf_crop_and_resize" {
		rs.outside = make([]bool, out)
	}
	fin, fout := float64(in), float64(out)
	for j := int64(0); j < out; j++ {
		xr := float64(j)
		var xo float64
		switch ctm {
		case "half_pixel":
			xo = (xr+0.5)/scale - 0.5
		case "half_pixel_symmetric":
			adj := fout / (scale * fin)
			center := fin / 2
			off := center * (1 - adj)
			xo = off + (xr+0.5)/scale - 0.5
		case "pytorch_half_pixel":
			if out > 1 {
				xo = (xr+0.5)/scale - 0.5
			}
		case "align_corners":
			// The resized length is in*scale, unrounded, as in the ONNX
			// reference: with scales it can differ from the output length.
			if flen := fin * scale; flen != 1 && out > 1 {
				xo = xr * (fin - 1) / (flen - 1)
			}
		case "asymmetric":
			xo = xr / scale
		case "tf_half_pixel_for_nn":
			xo = (xr + 0.5) / scale
		case "tf_crop_and_resize":
			if out > 1 {
				xo = roiS*(fin-1) + xr*(roiE-roiS)*(fin-1)/(fout-1)
			} else {
				xo = 0.5 * (roiS + roiE) * (fin - 1)
			}
			if xo < 0 || xo > fin-1 {
				rs.outside[j] = true
			}
		default:
			return nil, n.Errorf("coordinate_transformation_mode %q: want half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn or tf_crop_and_resize", ctm)
		}
		clampI := func(i int64) int64 { return min(max(i, 0), in-1) }
		base := int(j) * rs.taps
		switch mode {
		case "nearest":
			var i float64
			switch nearest {
			case "round_prefer_floor":
				if xo == math.Floor(xo)+0.5 {
					i = math.Floor(xo)
				} else {
					i = math.Round(xo)
				}
			case "round_prefer_ceil":
				if xo == math.Floor(xo)+0.5 {
					i = math.Ceil(xo)
				} else {
					i = math.Round(xo)
				}
			case "floor":
				i = math.Floor(xo)
			case "ceil":
				i = math.Ceil(xo)
			default:
				return nil, n.Errorf("nearest_mode %q: want round_prefer_floor, round_prefer_ceil, floor or ceil", nearest)
			}
			rs.idx[base], rs.w[base] = clampI(int64(i)), 1
		case "linear":
			x0 := math.Floor(xo)
			t := xo - x0
			rs.idx[base], rs.w[base] = clampI(int64(x0)), float32(1-t)
			rs.idx[base+1], rs.w[base+1] = clampI(int64(x0)+1), float32(t)
		case "cubic":
			x0 := math.Floor(xo)
			t := xo - x0
			A := cubicA
			c := [4]float64{
				((A*(t+1)-5*A)*(t+1)+8*A)*(t+1) - 4*A,
				((A+2)*t-(A+3))*t*t + 1,
				((A+2)*(1-t)-(A+3))*(1-t)*(1-t) + 1,
				((A*(2-t)-5*A)*(2-t)+8*A)*(2-t) - 4*A,
			}
			sum := 0.0
			for k := 0; k < 4; k++ {
				i := int64(x0) - 1 + int64(k)
				if exclude && (i < 0 || i >= in) {
					c[k] = 0
				}
				sum += c[k]
			}
			for k := 0; k < 4; k++ {
				if exclude && sum != 0 {
					c[k] /= sum
				}
				rs.idx[base+k], rs.w[base+k] = clampI(int64(x0)-1+int64(k)), float32(c[k])
			}
		}
	}
	return rs, nil
}

// applyAxis resamples x along axis with rs into a new tensor.
func applyAxis(n *graph.Node, x *tensor.Tensor, axis int, rs *axisResample) (*tensor.Tensor, error) {
	xs := x.Shape()
	outLen := int64(len(rs.idx) / rs.taps)
	ys := xs.Clone()
	ys[axis] = outLen
	y, err := nnNewF32(n, ys)
	if err != nil {
		return nil, err
	}
	if xs[axis] == 0 && outLen > 0 {
		return nil, n.Errorf("cannot resize empty axis %d of %v", axis, xs)
	}
	outer := int(nnProd(xs[:axis]))
	inner := int(nnProd(xs[axis+1:]))
	inL := int(xs[axis])
	X, Y := x.F32(), y.F32()
	nnParallel(outer, func(lo, hi int) {
		for o := lo; o < hi; o++ {
			src := X[o*inL*inner : (o+1)*inL*inner]
			dst := Y[o*int(outLen)*inner : (o+1)*int(outLen)*inner]
			for j := 0; j < int(outLen); j++ {
				row := dst[j*inner : (j+1)*inner]
				for t := 0; t < rs.taps; t++ {
					w := rs.w[j*rs.taps+t]
					if w == 0 {
						continue
					}
					s := src[int(rs.idx[j*rs.taps+t])*inner:]
					for i := range row {
						row[i] += w * s[i]
					}
				}
			}
		}
	})
	return y, nil
}

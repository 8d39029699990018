package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// applyAxis resamples x along axis with rs into a new tensor.
func applyAxis(n *graph.Node, x *tensor.Tensor, axis int, rs *graph.ResizeSampling) (*tensor.Tensor, error) {
	xs := x.Shape()
	outLen := int64(len(rs.Index) / rs.Taps)
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
				for t := 0; t < rs.Taps; t++ {
					w := rs.Weight[j*rs.Taps+t]
					if w == 0 {
						continue
					}
					s := src[int(rs.Index[j*rs.Taps+t])*inner:]
					for i := range row {
						row[i] += w * s[i]
					}
				}
			}
		}
	})
	return y, nil
}

// axisTaps are the taps of one resized axis.
type axisTaps struct {
	axis int
	rs   *graph.ResizeSampling
}

// resizeTaps computes every output element of a Resize over the taps of
// the resized axes as resize.cl's resize kernel does, so both devices and
// ONNX Runtime's bilinear kernel agree to the bit: the taps enumerated
// with the innermost axis fastest, each weight the product of its axes'
// weights (innermost first), summed into an f32 from 0 without fused
// multiply-adds; a zero weight is skipped.
func resizeTaps(n *graph.Node, x *tensor.Tensor, out tensor.Shape, taps []axisTaps) (*tensor.Tensor, error) {
	y, err := nnNewF32(n, out)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	r := len(xs)
	str := tensor.ContiguousStrides(xs)
	byAxis := make([]*graph.ResizeSampling, r)
	for _, t := range taps {
		byAxis[t.axis] = t.rs
	}
	X, Y := x.F32(), y.F32()
	inner := out[r-1]
	rows := out.NumElements() / max(inner, 1)
	nnParallel(int(rows), func(lo, hi int) {
		idx := make([]int64, r)
		var offs [8][4]int64
		var wts [8][4]float32
		var cnt [8]int
		var digit [8]int
		for row := int64(lo); row < int64(hi); row++ {
			rem := row
			for d := r - 2; d >= 0; d-- {
				idx[d] = rem % out[d]
				rem /= out[d]
			}
			for c := int64(0); c < inner; c++ {
				idx[r-1] = c
				// The axes with one tap add an offset (their weight, 1);
				// the others are enumerated, innermost first.
				base, na := int64(0), 0
				for d := r - 1; d >= 0; d-- {
					rs := byAxis[d]
					if rs == nil {
						base += idx[d] * str[d]
						continue
					}
					t := rs.Taps
					for k := 0; k < t; k++ {
						offs[na][k] = rs.Index[int(idx[d])*t+k] * str[d]
						wts[na][k] = rs.Weight[int(idx[d])*t+k]
					}
					cnt[na], digit[na] = t, 0
					na++
				}
				var acc float32
				for {
					f, o := float32(1), base
					for j := 0; j < na; j++ {
						f *= wts[j][digit[j]]
						o += offs[j][digit[j]]
					}
					if f != 0 {
						acc += float32(f * X[o]) // the conversion keeps the compiler from fusing
					}
					j := 0
					for ; j < na; j++ {
						if digit[j]++; digit[j] < cnt[j] {
							break
						}
						digit[j] = 0
					}
					if j == na {
						break
					}
				}
				Y[row*inner+c] = acc
			}
		}
	})
	return y, nil
}

// resizeKernels are Resize, separable along the resized axes, and
// GridSample.
func resizeKernels() map[string]Kernel {
	return map[string]Kernel{"Resize": nnFloatKernel(resizeKernel), "GridSample": gridSampleKernel}
}

// resizeImpls names Resize's implementation (see Impl).
var resizeImpls = map[string]string{"Resize": "ref_resize_separable"}

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
	ctm := n.Attrs.String("coordinate_transformation_mode", "half_pixel")
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
		rs   *graph.ResizeSampling
	}
	var taps []axisTaps
	for a := 0; a < r; a++ {
		if out[a] == xs[a] && scale[a] == 1 && ctm != "tf_crop_and_resize" {
			continue
		}
		var roiS, roiE float64
		if roi != nil {
			roiS, roiE = float64(roi[a]), float64(roi[a+r])
		}
		rs, err := graph.ResizeAxis(n, xs[a], out[a], scale[a], roiS, roiE)
		if err != nil {
			return nil, err
		}
		taps = append(taps, axisTaps{a, rs})
		if rs.Outside != nil {
			maskAxes = append(maskAxes, struct {
				axis int
				rs   *graph.ResizeSampling
			}{a, rs})
		}
	}
	if n.Attrs.String("mode", "nearest") == "linear" && len(taps) > 0 && r <= 8 {
		// Linear: every output element at once, as the GPU and ONNX
		// Runtime compute it (resizeTaps).
		if cur, err = resizeTaps(n, x, out, taps); err != nil {
			return nil, err
		}
	} else {
		for _, t := range taps {
			if cur, err = applyAxis(n, cur, t.axis, t.rs); err != nil {
				return nil, err
			}
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
				if m.rs.Outside[j] {
					Y[i] = extrap
					break
				}
			}
		}
	}
	return []*tensor.Tensor{cur}, nil
}

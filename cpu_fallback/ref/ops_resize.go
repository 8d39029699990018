package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// resizeFloat is the data type Resize computes in: f32 (f32, f16, bf16)
// or f64 (f64 and the integers).
type resizeFloat interface{ float32 | float64 }

// resizeData returns x's f32 or f64 elements as []T.
func resizeData[T resizeFloat](x *tensor.Tensor) []T {
	var z T
	if _, ok := any(z).(float32); ok {
		return any(x.F32()).([]T)
	}
	return any(x.F64()).([]T)
}

// resizeNew returns a zero tensor of x's type (f32 or f64) and shape s.
func resizeNew(n *graph.Node, x *tensor.Tensor, s tensor.Shape) (*tensor.Tensor, error) {
	t, err := tensor.New(x.Type(), s)
	if err != nil {
		return nil, n.Errorf("output shape %v: %w", s, err)
	}
	return t, nil
}

// applyAxis resamples x along axis with rs into a new tensor.
func applyAxis[T resizeFloat](n *graph.Node, x *tensor.Tensor, axis int, rs *graph.ResizeSampling) (*tensor.Tensor, error) {
	xs := x.Shape()
	outLen := int64(len(rs.Index) / rs.Taps)
	ys := xs.Clone()
	ys[axis] = outLen
	y, err := resizeNew(n, x, ys)
	if err != nil {
		return nil, err
	}
	if xs[axis] == 0 && outLen > 0 {
		return nil, n.Errorf("cannot resize empty axis %d of %v", axis, xs)
	}
	outer := int(nnProd(xs[:axis]))
	inner := int(nnProd(xs[axis+1:]))
	inL := int(xs[axis])
	X, Y := resizeData[T](x), resizeData[T](y)
	nnParallel(outer, func(lo, hi int) {
		for o := lo; o < hi; o++ {
			src := X[o*inL*inner : (o+1)*inL*inner]
			dst := Y[o*int(outLen)*inner : (o+1)*int(outLen)*inner]
			for j := 0; j < int(outLen); j++ {
				row := dst[j*inner : (j+1)*inner]
				for t := 0; t < rs.Taps; t++ {
					w := T(rs.Weight[j*rs.Taps+t])
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
func resizeTaps[T resizeFloat](n *graph.Node, x *tensor.Tensor, out tensor.Shape, taps []axisTaps) (*tensor.Tensor, error) {
	y, err := resizeNew(n, x, out)
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
	X, Y := resizeData[T](x), resizeData[T](y)
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
				var acc T
				for {
					f, o := T(1), base
					for j := 0; j < na; j++ {
						f *= T(wts[j][digit[j]])
						o += offs[j][digit[j]]
					}
					if f != 0 {
						acc += T(f * X[o]) // the conversion keeps the compiler from fusing
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
	return map[string]Kernel{"Resize": resizeAnyKernel, "GridSample": gridSampleKernel}
}

// resizeAnyKernel is Resize on every numeric type: f64 computed in f64,
// f16, bf16 in f32 (nnFloatKernel), and the integers as ONNX's reference
// implementation does: interpolated in f64 (exact for nearest up to 2^53)
// and converted back truncating toward zero (numpy's astype), saturating.
func resizeAnyKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(in) > 0 && in[0] != nil && in[0].Type() == tensor.F64 {
		return resizeKernel(n, in)
	}
	if len(in) == 0 || in[0] == nil || !in[0].Type().IsInteger() {
		return nnFloatKernel(resizeKernel)(n, in)
	}
	t := in[0].Type()
	x, err := in[0].Convert(tensor.F64)
	if err != nil {
		return nil, n.Errorf("input 0: %w", err)
	}
	outs, err := resizeKernel(n, append([]*tensor.Tensor{x}, in[1:]...))
	if err != nil {
		return nil, err
	}
	y, err := outs[0].Convert(t)
	if err != nil {
		return nil, n.Errorf("output 0: %w", err)
	}
	return []*tensor.Tensor{y}, nil
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
		if x.Type() == tensor.F64 {
			cur, err = resizeTaps[float64](n, x, out, taps)
		} else {
			cur, err = resizeTaps[float32](n, x, out, taps)
		}
		if err != nil {
			return nil, err
		}
	} else {
		for _, t := range taps {
			if x.Type() == tensor.F64 {
				cur, err = applyAxis[float64](n, cur, t.axis, t.rs)
			} else {
				cur, err = applyAxis[float32](n, cur, t.axis, t.rs)
			}
			if err != nil {
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
		var set func(i int64)
		if cur.Type() == tensor.F64 {
			Y := cur.F64()
			set = func(i int64) { Y[i] = float64(extrap) }
		} else {
			Y := cur.F32()
			set = func(i int64) { Y[i] = extrap }
		}
		for i := int64(0); i < total; i++ {
			for _, m := range maskAxes {
				j := (i / str[m.axis]) % cs[m.axis]
				if m.rs.Outside[j] {
					set(i)
					break
				}
			}
		}
	}
	return []*tensor.Tensor{cur}, nil
}

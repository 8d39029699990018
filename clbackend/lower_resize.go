package clbackend

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// resizeStaticCheck rejects the Resize forms resize.cl cannot run, from
// attributes alone.
func resizeStaticCheck(n *graph.Node) string {
	switch m := n.Attrs.String("mode", "nearest"); m {
	case "nearest", "linear", "cubic":
	default:
		return "mode " + m + " (the GPU kernel does nearest, linear and cubic)"
	}
	if n.Attrs.Int("antialias", 0) != 0 || n.Attrs.Has("axes") {
		return "antialias or axes"
	}
	return ""
}

// axisTaps is the resampling of one axis: output coordinate c reads input
// indices idx[c*taps+t] with weights w[c*taps+t]; idx[c*taps] is -1 where
// c lies outside the crop of tf_crop_and_resize.
type axisTaps struct {
	taps int
	idx  []int64
	w    []float32
}

// resizeAxis computes the taps of one axis from in to out elements, as the
// CPU device's Resize does (ONNX reference semantics).
func resizeAxis(in, out int64, scale float64, mode, coord, nearest string, cubicA float64, exclude bool, roiS, roiE float64) axisTaps {
	a := axisTaps{taps: map[string]int{"nearest": 1, "linear": 2, "cubic": 4}[mode]}
	a.idx = make([]int64, int(out)*a.taps)
	a.w = make([]float32, int(out)*a.taps)
	fin, fout := float64(in), float64(out)
	clampI := func(i int64) int64 { return min(max(i, 0), in-1) }
	for c := int64(0); c < out; c++ {
		xr := float64(c)
		var xo float64
		outside := false
		switch coord {
		case "half_pixel_symmetric":
			adj := fout / (scale * fin)
			xo = fin/2*(1-adj) + (xr+0.5)/scale - 0.5
		case "pytorch_half_pixel":
			if out > 1 {
				xo = (xr+0.5)/scale - 0.5
			}
		case "align_corners":
			// The resized length is in*scale, unrounded (ONNX reference).
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
			outside = xo < 0 || xo > fin-1
		default: // half_pixel
			xo = (xr+0.5)/scale - 0.5
		}
		base := int(c) * a.taps
		switch mode {
		case "nearest":
			var i float64
			half := xo == math.Floor(xo)+0.5
			switch {
			case nearest == "floor":
				i = math.Floor(xo)
			case nearest == "ceil":
				i = math.Ceil(xo)
			case half && nearest == "round_prefer_ceil":
				i = math.Ceil(xo)
			case half:
				i = math.Floor(xo)
			default:
				i = math.Round(xo)
			}
			a.idx[base], a.w[base] = clampI(int64(i)), 1
		case "linear":
			x0 := math.Floor(xo)
			t := xo - x0
			a.idx[base], a.w[base] = clampI(int64(x0)), float32(1-t)
			a.idx[base+1], a.w[base+1] = clampI(int64(x0)+1), float32(t)
		case "cubic":
			x0 := math.Floor(xo)
			t := xo - x0
			A := cubicA
			cf := [4]float64{
				((A*(t+1)-5*A)*(t+1)+8*A)*(t+1) - 4*A,
				((A+2)*t-(A+3))*t*t + 1,
				((A+2)*(1-t)-(A+3))*(1-t)*(1-t) + 1,
				((A*(2-t)-5*A)*(2-t)+8*A)*(2-t) - 4*A,
			}
			sum := 0.0
			for k := range cf {
				if i := int64(x0) - 1 + int64(k); exclude && (i < 0 || i >= in) {
					cf[k] = 0
				}
				sum += cf[k]
			}
			for k := range cf {
				if exclude && sum != 0 {
					cf[k] /= sum
				}
				a.idx[base+k], a.w[base+k] = clampI(int64(x0)-1+int64(k)), float32(cf[k])
			}
		}
		if outside {
			a.idx[base] = -1
		}
	}
	return a
}

// lowerResize builds per-axis tap tables at plan time (scales, sizes and
// roi must be known then) for resize.cl.
func lowerResize(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	if b.val(x).typ != tensor.F32 {
		return errUnsupported(n, "element type %s", b.val(x).typ)
	}
	if why := resizeStaticCheck(n); why != "" {
		return errUnsupported(n, "%s", why)
	}
	mode := n.Attrs.String("mode", "nearest")
	coord := n.Attrs.String("coordinate_transformation_mode", "half_pixel")
	nearest := n.Attrs.String("nearest_mode", "round_prefer_floor")
	is, os := b.val(x).shape, b.val(y).shape
	r := len(is)
	if r > 8 {
		return errUnsupported(n, "rank %d (the GPU kernel takes up to 8)", r)
	}
	var scales []float64
	if v := b.in(n, 2); v >= 0 && b.val(v).shape.NumElements() > 0 {
		if b.val(v).host == nil {
			return errUnsupported(n, "scales not known at plan time")
		}
		scales = b.val(v).host.Float64s()
	}
	scale := make([]float64, r)
	for d := range scale {
		scale[d] = float64(os[d]) / float64(is[d])
		if len(scales) == r {
			scale[d] = scales[d]
		}
	}
	if policy := n.Attrs.String("keep_aspect_ratio_policy", "stretch"); len(scales) != r && policy != "stretch" {
		sizes, ok := b.hostInts(b.in(n, 3))
		if !ok || len(sizes) != r {
			return errUnsupported(n, "sizes not known at plan time")
		}
		s := math.Inf(1)
		if policy == "not_smaller" {
			s = math.Inf(-1)
		}
		for d := range sizes {
			if v := float64(sizes[d]) / float64(is[d]); policy == "not_larger" {
				s = math.Min(s, v)
			} else {
				s = math.Max(s, v)
			}
		}
		for d := range scale {
			scale[d] = s
		}
	}
	var roi []float64
	if coord == "tf_crop_and_resize" {
		v := b.in(n, 1)
		if v < 0 || b.val(v).host == nil || b.val(v).shape.NumElements() != int64(2*r) {
			return errUnsupported(n, "tf_crop_and_resize needs roi (%d values) known at plan time", 2*r)
		}
		roi = b.val(v).host.Float64s()
	}
	cnt := os.NumElements()
	if cnt == 0 {
		return nil
	}
	m := []int64{int64(r)}
	m = append(m, os...)
	m = append(m, strides(is)...)
	taps := make([]int64, r)
	ioff := make([]int64, r)
	woff := make([]int64, r)
	var table []int64
	var wts []float32
	base := int64(1 + 5*r) // the table starts after rank, dims, strides, taps and both offsets
	for d := 0; d < r; d++ {
		var a axisTaps
		if os[d] == is[d] && scale[d] == 1 && roi == nil {
			// The CPU device skips identity axes: one tap of weight 1.
			a = axisTaps{taps: 1, idx: make([]int64, os[d]), w: make([]float32, os[d])}
			for c := range a.idx {
				a.idx[c], a.w[c] = int64(c), 1
			}
		} else {
			var roiS, roiE float64
			if roi != nil {
				roiS, roiE = roi[d], roi[d+r]
			}
			a = resizeAxis(is[d], os[d], scale[d], mode, coord, nearest, float64(n.Attrs.Float("cubic_coeff_a", -0.75)),
				n.Attrs.Int("exclude_outside", 0) != 0, roiS, roiE)
		}
		taps[d], ioff[d], woff[d] = int64(a.taps), base+int64(len(table)), int64(len(wts))
		table = append(table, a.idx...)
		wts = append(wts, a.w...)
	}
	m = append(m, taps...)
	m = append(m, ioff...)
	m = append(m, woff...)
	m = append(m, table...)
	if r >= 1 && oneTap(taps, wts) {
		// A gather: no tap loop, no weights, a 3-D range (resize.cl).
		h := int64(1)
		if r >= 2 {
			h = os[r-2]
		}
		global := []int{int(os[r-1]), int(h), int(cnt / (os[r-1] * h))}
		return b.emitND(n, "resize_nearest", "", global, nil, slotArg(x), slotArg(y), uint64(cnt), b.meta(m), b.floats(wts),
			n.Attrs.Float("extrapolation_value", 0))
	}
	return b.emit(n, "resize", "", cnt, slotArg(x), slotArg(y), uint64(cnt), b.meta(m), b.floats(wts),
		n.Attrs.Float("extrapolation_value", 0))
}

// oneTap reports whether every axis has one tap and every weight is 1
// (nearest mode, and identity axes), so resize.cl's resize_nearest gather
// computes the same as its general tap loop.
func oneTap(taps []int64, wts []float32) bool {
	for _, t := range taps {
		if t != 1 {
			return false
		}
	}
	for _, w := range wts {
		if w != 1 {
			return false
		}
	}
	return true
}

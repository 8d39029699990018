package clbackend

import (
	"fmt"
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
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

// lowerResize builds per-axis tap tables at plan time (scales, sizes and
// roi must be known then) for resize.cl.
func lowerResize(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	// def builds resize.cl for the data type: f16 storage (-DHALF), or f64
	// computed in double (-DDOUBLE: f64 data, and the integers lowerWidened
	// widens to f64, as the CPU reference computes them).
	def := b.halfDefine(x)
	switch t := b.val(x).typ; t {
	case tensor.F32, tensor.F16:
	case tensor.F64:
		if _, err := b.numType(n, t); err != nil {
			return err
		}
		def = " -DDOUBLE"
	default:
		return errUnsupported(n, "element type %s", t)
	}
	if why := resizeStaticCheck(n); why != "" {
		return errUnsupported(n, "%s", why)
	}
	coord := n.Attrs.String("coordinate_transformation_mode", "half_pixel")
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
	axes := make([]*graph.ResizeSampling, r)
	for d := 0; d < r; d++ {
		var a *graph.ResizeSampling
		if os[d] == is[d] && scale[d] == 1 && roi == nil {
			// The CPU device skips identity axes: one tap of weight 1.
			a = &graph.ResizeSampling{Taps: 1, Index: make([]int64, os[d]), Weight: make([]float32, os[d])}
			for c := range a.Index {
				a.Index[c], a.Weight[c] = int64(c), 1
			}
		} else {
			var roiS, roiE float64
			if roi != nil {
				roiS, roiE = roi[d], roi[d+r]
			}
			var err error
			if a, err = graph.ResizeAxis(n, is[d], os[d], scale[d], roiS, roiE); err != nil {
				return err
			}
			// resize.cl reads a first index of -1 as outside the crop.
			for c, out := range a.Outside {
				if out {
					a.Index[c*a.Taps] = -1
				}
			}
		}
		axes[d] = a
		taps[d], ioff[d], woff[d] = int64(a.Taps), base+int64(len(table)), int64(len(wts))
		table = append(table, a.Index...)
		wts = append(wts, a.Weight...)
	}
	m = append(m, taps...)
	m = append(m, ioff...)
	m = append(m, woff...)
	m = append(m, table...)
	one := r >= 1 && oneTap(taps, wts)
	sh, sw := upsampleFactors(is, os, taps, table, int(base), ioff, wts, roi != nil)
	u2, w2 := linear2DTables(is, os, axes, roi != nil)
	applies := func(v kernels.Variant) string {
		switch {
		case v.Algorithm == "gather" && !one:
			return "the gather takes nearest tables (one tap of weight 1 per axis)"
		case (v.Algorithm == "upsample" || v.Algorithm == "linear2d") && def == " -DDOUBLE":
			return "the f32 and f16 kernels only"
		case v.Algorithm == "upsample" && sh == 0:
			return "not a nearest upsampling of the last two axes by integer factors"
		case v.Algorithm == "linear2d" && u2 == nil:
			return "not an interpolation of the last two axes with at most two taps each"
		}
		return ""
	}
	kind := "taps"
	switch {
	case sh > 0 && def != " -DDOUBLE":
		kind = "upsample"
	case one:
		kind = "gather"
	case u2 != nil && def != " -DDOUBLE":
		kind = "linear2d"
	}
	heur := b.profile().resize(kind)
	key := fmt.Sprintf("in=%v out=%v taps=%v%s", is, os, taps, def)
	extrap := n.Attrs.Float("extrapolation_value", 0)
	return b.choose(n, "resize", key, true, applies, heur, func(v kernels.Variant) error {
		switch v.Algorithm {
		case "upsample":
			planes := cnt / (os[r-1] * os[r-2])
			vw := int64(v.Get("VW"))
			local := []int{v.Get("WG"), 1, 1}
			if local[0] == 0 {
				local = nil
			}
			global := roundGlobal([]int64{ceilDiv(os[r-1], vw), ceilDiv(os[r-2], int64(v.Get("RY"))), planes}, local)
			return b.emitND(n, "resize_upsample", fmt.Sprintf("%s -DSH=%d -DSW=%d", v.Defines(), sh, sw)+b.halfDefine(x), global, local,
				slotArg(x), slotArg(y), b.meta([]int64{is[r-2], is[r-1], planes}))
		case "linear2d":
			planes := cnt / (os[r-1] * os[r-2])
			var local []int
			if wg := v.Get("WG"); wg > 0 {
				local = []int{wg, 1, 1}
			}
			global := roundGlobal([]int64{ceilDiv(os[r-1], int64(v.Get("VW"))), os[r-2], planes}, local)
			head := []int64{is[r-2], is[r-1], os[r-2], os[r-1], planes, up2Columns(u2[2*os[r-2]:])}
			return b.emitND(n, "resize_linear2d", v.Defines()+b.halfDefine(x), global, local,
				slotArg(x), slotArg(y), b.meta(append(head, u2...)), b.floats(w2))
		case "gather":
			// A gather: no tap loop, no weights, a 3-D range (resize.cl).
			h := int64(1)
			if r >= 2 {
				h = os[r-2]
			}
			var local []int
			if v.Get("WX") > 0 {
				local = []int{v.Get("WX"), v.Get("WY"), 1}
			}
			global := roundGlobal([]int64{os[r-1], h, cnt / (os[r-1] * h)}, local)
			return b.emitND(n, "resize_nearest", def, global, local, slotArg(x), slotArg(y), uint64(cnt), b.meta(m), b.floats(wts), extrap)
		}
		// The weights stay f32 with f16 data (resize.cl).
		global, local := group1D(cnt, v.Get("WG"))
		return b.emitND(n, "resize", def, global, local, slotArg(x), slotArg(y), uint64(cnt), b.meta(m), b.floats(wts), extrap)
	})
}

// upsampleFactors returns the integer factors (SH, SW) by which nearest
// tables upsample the last two axes (index c of an axis reads c / S), the
// other axes being identities, or zeros when the tables are not such an
// upsampling (resize_upsample then does not apply).
func upsampleFactors(is, os tensor.Shape, taps, table []int64, base int, ioff []int64, wts []float32, crop bool) (int64, int64) {
	r := len(is)
	if r < 2 || crop || !oneTap(taps, wts) {
		return 0, 0
	}
	var f [2]int64
	for d := 0; d < r; d++ {
		s := int64(1)
		if d >= r-2 {
			if is[d] == 0 || os[d]%is[d] != 0 {
				return 0, 0
			}
			s = os[d] / is[d]
			f[d-(r-2)] = s
		} else if os[d] != is[d] {
			return 0, 0
		}
		idx := table[int(ioff[d])-base:]
		for c := int64(0); c < os[d]; c++ {
			if idx[c] != c/s {
				return 0, 0
			}
		}
	}
	return f[0], f[1]
}

// linear2DTables returns resize_linear2d's index pairs (the rows', then
// the columns') and weights for the samplings of the axes of a resize from
// is to os, or nil when it does not apply: a crop, an axis but the last two
// that is not an identity, or one of them with more than two taps. A
// one-tap axis becomes two taps of weights w and 0 on the same index.
func linear2DTables(is, os tensor.Shape, axes []*graph.ResizeSampling, crop bool) ([]int64, []float32) {
	r := len(is)
	if r < 2 || crop {
		return nil, nil
	}
	for d := 0; d < r-2; d++ {
		a := axes[d]
		if os[d] != is[d] || a.Taps != 1 {
			return nil, nil
		}
		for c := range a.Index {
			if a.Index[c] != int64(c) || a.Weight[c] != 1 {
				return nil, nil
			}
		}
	}
	var idx []int64
	var wts []float32
	for _, a := range axes[r-2:] {
		if a.Taps > 2 {
			return nil, nil
		}
		for c := 0; c < len(a.Index)/a.Taps; c++ {
			if a.Taps == 1 {
				idx = append(idx, a.Index[c], a.Index[c])
				wts = append(wts, a.Weight[c], 0)
				continue
			}
			idx = append(idx, a.Index[2*c], a.Index[2*c+1])
			wts = append(wts, a.Weight[2*c], a.Weight[2*c+1])
		}
	}
	return idx, wts
}

// up2Columns is resize_linear2d's up2 flag for the column index pairs
// cols (two per output column): 1 where they are a 2x upsampling's inside
// the row (output column x reads input columns (x-1)/2 and (x+1)/2 for
// 0 < x < OW-1: half_pixel and pytorch_half_pixel at scale 2), so the
// kernel may run those columns as vectors with shuffled loads; else 0.
func up2Columns(cols []int64) int64 {
	ow := int64(len(cols) / 2)
	if ow < 3 {
		return 0
	}
	for x := int64(1); x < ow-1; x++ {
		if cols[2*x] != (x-1)/2 || cols[2*x+1] != (x+1)/2 {
			return 0
		}
	}
	return 1
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

// resizeLowerings are the GPU table entries (see lowering) of Resize.
func resizeLowerings() map[string]lowering {
	return map[string]lowering{
		"GridSample": {lower: lowerGridSample, half: true, f32: []int{1}},
		// f16 data, f32 tap weights; roi and scales stay f32.
		"Resize": {lower: lowerResize, half: true, f32: []int{1, 2}, check: resizeStaticCheck},
	}
}

// lowerGridSample samples X at the grid's points (resize_grid_sample.cl),
// CPI channels per work item (the grid_sample family).
func lowerGridSample(b *builder, n *graph.Node) error {
	x, grid, y := b.in(n, 0), b.in(n, 1), b.out(n, 0)
	if !b.sameFloat(y, x) || b.val(grid).typ != tensor.F32 {
		return errUnsupported(n, "X and grid of types %s and %s (the GPU kernel takes f32 or f16 X, an f32 grid)", b.val(x).typ, b.val(grid).typ)
	}
	half := b.halfDefine(x)
	xs := b.val(x).shape
	r := len(xs) - 2
	if r < 1 || r > 3 {
		return errUnsupported(n, "%d spatial axes (the GPU kernel takes 1 to 3)", r)
	}
	mode := map[string]int32{"nearest": 0, "linear": 1, "cubic": 2}[n.Attrs.String("mode", "linear")]
	pad := map[string]int32{"zeros": 0, "border": 1, "reflection": 2}[n.Attrs.String("padding_mode", "zeros")]
	align := int32(n.Attrs.Int("align_corners", 0))
	P := prod(b.val(y).shape[2:])
	m := append([]int64{int64(r), xs[1], P}, xs[2:]...)
	meta := b.meta(m)
	key := fmt.Sprintf("%v mode=%d", m, mode)
	heur := mustVariant("grid_sample", "channels", 4)
	if xs[1] < 4 {
		heur = mustVariant("grid_sample", "channels", 1)
	}
	return b.choose(n, "grid_sample", key, true, func(kernels.Variant) string { return "" }, heur, func(v kernels.Variant) error {
		cpi := int64(v.Get("CPI"))
		cnt := xs[0] * P * ((xs[1] + cpi - 1) / cpi)
		return b.emit(n, "grid_sample", half+" "+v.Defines(), cnt, slotArg(x), slotArg(grid), slotArg(y), uint64(cnt), meta, mode, pad, align)
	})
}

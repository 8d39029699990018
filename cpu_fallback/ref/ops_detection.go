package ref

import (
	"container/heap"
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// nmsCorners returns box b (4 floats) as x1 <= x2, y1 <= y2, from corners
// [y1,x1,y2,x2] in either order or, with center, [xc,yc,w,h].
func nmsCorners(b []float32, center bool) (x1, y1, x2, y2 float32) {
	if center {
		hw, hh := b[2]/2, b[3]/2
		return b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh
	}
	return min(b[1], b[3]), min(b[0], b[2]), max(b[1], b[3]), max(b[0], b[2])
}

// nmsSuppresses reports whether boxes a and b overlap by more than iou
// (intersection over union, in float32 as ONNX Runtime computes it); empty
// boxes and disjoint ones never do.
func nmsSuppresses(a, b []float32, center bool, iou float32) bool {
	ax1, ay1, ax2, ay2 := nmsCorners(a, center)
	bx1, by1, bx2, by2 := nmsCorners(b, center)
	ix1, ix2 := max(ax1, bx1), min(ax2, bx2)
	if ix2 <= ix1 {
		return false
	}
	iy1, iy2 := max(ay1, by1), min(ay2, by2)
	if iy2 <= iy1 {
		return false
	}
	inter := (ix2 - ix1) * (iy2 - iy1)
	areaA, areaB := (ax2-ax1)*(ay2-ay1), (bx2-bx1)*(by2-by1)
	union := areaA + areaB - inter
	if inter <= 0 || areaA <= 0 || areaB <= 0 || union <= 0 {
		return false
	}
	return inter/union > iou
}

// nmsHeap orders box indices by descending score, ties by the lower
// index (container/heap).
type nmsHeap struct {
	idx   []int64
	score []float32
}

func (h nmsHeap) Len() int { return len(h.idx) }
func (h nmsHeap) Less(a, b int) bool {
	i, j := h.idx[a], h.idx[b]
	return h.score[i] > h.score[j] || (h.score[i] == h.score[j] && i < j)
}
func (h nmsHeap) Swap(a, b int) { h.idx[a], h.idx[b] = h.idx[b], h.idx[a] }
func (h *nmsHeap) Push(x any)   { h.idx = append(h.idx, x.(int64)) }
func (h *nmsHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}

// scalarF32 returns the first element of optional input i as float32.
func scalarF32(in []*tensor.Tensor, i int) (float32, bool) {
	x := opt(in, i)
	if x == nil || x.NumElements() == 0 {
		return 0, false
	}
	return float32(x.Float64s()[0]), true
}

// nmsKernel is NonMaxSuppression: per batch and class, the boxes by
// descending score (ties: lower index first) above score_threshold (when
// given), each kept unless it overlaps a kept one by more than
// iou_threshold, at most max_output_boxes_per_class of them.
func nmsKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	boxes, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	scores, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	bs, ss := boxes.Shape(), scores.Shape()
	if len(bs) != 3 || bs[2] != 4 || len(ss) != 3 || ss[0] != bs[0] || ss[2] != bs[1] {
		return nil, n.Errorf("%w: boxes %v and scores %v: want [B,N,4] and [B,C,N]", driver.ErrInvalidArgument, bs, ss)
	}
	maxOut := int64(0)
	if m := opt(in, 2); m != nil && m.NumElements() > 0 {
		maxOut = max(toI64s(m)[0], 0)
	}
	iou, _ := scalarF32(in, 3)
	scoreTh, useScore := scalarF32(in, 4)
	center := n.Attrs.Int("center_point_box", 0) != 0
	B, N, C := bs[0], bs[1], ss[1]
	bv, sv := convSlice[float64, float32](boxes.Float64s()), convSlice[float64, float32](scores.Float64s())
	var sel []int64
	cand := make([]int64, 0, N)
	var kept []int64
	for b := range B {
		for c := range C {
			sc := sv[(b*C+c)*N : (b*C+c+1)*N]
			cand = cand[:0]
			for i := range N {
				if !useScore || sc[i] > scoreTh {
					cand = append(cand, i)
				}
			}
			// Candidates by descending score, ties by the lower index:
			// a heap popped only as far as the selection goes (at most
			// maxOut kept), as ONNX Runtime's priority queue.
			h := nmsHeap{idx: cand, score: sc}
			heap.Init(&h)
			kept = kept[:0]
			for h.Len() > 0 && int64(len(kept)) < maxOut {
				i := heap.Pop(&h).(int64)
				box := bv[(b*N+i)*4 : (b*N+i)*4+4]
				ok := true
				for _, k := range kept {
					if nmsSuppresses(box, bv[(b*N+k)*4:(b*N+k)*4+4], center, iou) {
						ok = false
						break
					}
				}
				if ok {
					kept = append(kept, i)
					sel = append(sel, b, c, i)
				}
			}
		}
	}
	y, err := tensor.FromI64(tensor.Shape{int64(len(sel) / 3), 3}, sel)
	if err != nil {
		return nil, n.Errorf("output: %w", err)
	}
	return one(y), nil
}

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

// detectionKernels are NonMaxSuppression and RoiAlign.
func detectionKernels() map[string]Kernel {
	return map[string]Kernel{
		"NonMaxSuppression": nmsKernel,
		"RoiAlign":          roiAlignKernel,
	}
}

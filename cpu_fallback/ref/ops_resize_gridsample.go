package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// gridReflect folds x into [lo, hi] by reflecting it at the borders as
// often as needed (GridSample's reflection padding).
func gridReflect(x, lo, hi float64) float64 {
	rng := hi - lo
	switch {
	case x < lo:
		dx := lo - x
		k := math.Trunc(dx / rng)
		r := dx - k*rng
		if math.Mod(k, 2) == 0 {
			return lo + r
		}
		return hi - r
	case x > hi:
		dx := x - hi
		k := math.Trunc(dx / rng)
		r := dx - k*rng
		if math.Mod(k, 2) == 0 {
			return hi - r
		}
		return lo + r
	}
	return x
}

// cubicCoeffs are the Keys cubic convolution weights (alpha -0.75) of the
// four taps around a point at fraction t past the second.
func cubicCoeffs(t float64) [4]float64 {
	const a = -0.75
	x := math.Abs(t)
	return [4]float64{
		((a*(x+1)-5*a)*(x+1)+8*a)*(x+1) - 4*a,
		((a+2)*x-(a+3))*x*x + 1,
		((a+2)*(1-x)-(a+3))*(1-x)*(1-x) + 1,
		((a*(2-x)-5*a)*(2-x)+8*a)*(2-x) - 4*a,
	}
}

// gridSampleKernel is GridSample (opset 20, any number of spatial axes):
// the coordinates are denormalised (align_corners or not), rounded for
// nearest (half to even, or half away from zero on 3 spatial axes as
// PyTorch does), moved inside by border or reflection padding, and the
// taps (2 per axis for linear, 4 for cubic) read with the same padding
// (zeros: a tap outside reads 0).
func gridSampleKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	grid, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	xs, gs := x.Shape(), grid.Shape()
	r := len(xs) - 2
	if r < 1 || len(gs) != r+2 || gs[r+1] != int64(r) || gs[0] != xs[0] {
		return nil, n.Errorf("%w: X %v and grid %v: want [N,C,D1..Dr] and [N,O1..Or,r]", driver.ErrInvalidArgument, xs, gs)
	}
	mode := n.Attrs.String("mode", "linear")
	pad := n.Attrs.String("padding_mode", "zeros")
	align := n.Attrs.Int("align_corners", 0) != 0
	ys := append(tensor.Shape{xs[0], xs[1]}, gs[1:r+1]...)
	y, err := newOut(n, x.Type(), ys)
	if err != nil {
		return nil, err
	}
	dims := xs[2:]
	lo, hi := make([]float64, r), make([]float64, r)
	for d, D := range dims {
		lo[d], hi[d] = -0.5, float64(D)-0.5
		if align {
			lo[d], hi[d] = 0, float64(D-1)
		}
	}
	// index maps a tap's index along axis d into X, or -1 (zeros).
	index := func(i int64, d int) int64 {
		D := dims[d]
		switch pad {
		case "border":
			return min(max(i, 0), D-1)
		case "reflection":
			return int64(gridReflect(float64(i), lo[d], hi[d]))
		}
		if i < 0 || i >= D {
			return -1
		}
		return i
	}
	taps := 2
	switch mode {
	case "nearest":
		taps = 1
	case "cubic":
		taps = 4
	}
	ntaps := 1
	for range r {
		ntaps *= taps
	}
	X, G := x.Float64s(), grid.Float64s()
	out := make([]float64, y.NumElements())
	C, npts := xs[1], nnProd(gs[1:r+1])
	plane := nnProd(dims)
	xst := tensor.ContiguousStrides(dims)
	first := make([]int64, r)
	w := make([][4]float64, r)
	for b := range xs[0] {
		for p := range npts {
			g := G[(b*npts+p)*int64(r) : (b*npts+p+1)*int64(r)]
			for d := range r {
				v := g[r-1-d] // the grid lists x (the last axis) first
				D := float64(dims[d])
				c := ((v+1)*D - 1) / 2
				if align {
					c = (v + 1) / 2 * (D - 1)
				}
				if mode == "nearest" {
					if r == 3 {
						c = math.Round(c)
					} else {
						c = math.RoundToEven(c)
					}
				}
				if c < lo[d] || c > hi[d] {
					switch pad {
					case "border":
						c = min(max(c, 0), D-1)
					case "reflection":
						c = gridReflect(c, lo[d], hi[d])
					}
				}
				switch mode {
				case "nearest":
					first[d], w[d] = int64(c), [4]float64{1}
				case "cubic":
					f := math.Floor(c)
					first[d], w[d] = int64(f)-1, cubicCoeffs(c-f)
				default:
					f := math.Floor(c)
					first[d], w[d] = int64(f), [4]float64{1 - (c - f), c - f}
				}
			}
			for ch := range C {
				src := X[(b*C+ch)*plane : (b*C+ch+1)*plane]
				acc := 0.0
				for t := range ntaps {
					wt, off, rem := 1.0, int64(0), t
					for d := r - 1; d >= 0; d-- {
						k := rem % taps
						rem /= taps
						i := index(first[d]+int64(k), d)
						if i < 0 {
							wt = 0
							break
						}
						wt *= w[d][k]
						off += i * xst[d]
					}
					if wt != 0 {
						acc += wt * src[off]
					}
				}
				out[(b*C+ch)*npts+p] = acc
			}
		}
	}
	storeF64(y, out)
	return one(y), nil
}

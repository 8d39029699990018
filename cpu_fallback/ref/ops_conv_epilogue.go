package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
)

// rowOp is a post-op compiled to work on a run of f32 values in place, so
// the conv paths can apply it to an output row while it is still in cache.
type rowOp func(row []float32)

// compileRowOp turns an activation post-op into a rowOp. The cheap ones are
// computed in f32; the transcendental ones go through the f64 math package
// like the standalone unary kernels.
func compileRowOp(n *graph.Node, p graph.PostOp) (rowOp, error) {
	a, b := p.Alpha, p.Beta
	switch p.Kind {
	case graph.PostRelu:
		return func(r []float32) {
			// Branch-free (signs of activations are unpredictable): clear
			// negative values by their sign mask, except NaNs, which pass
			// through as math.Max(NaN, 0) does.
			for j, v := range r {
				b := math.Float32bits(v)
				nan := int32(0x7f800000-(b&0x7fffffff)) >> 31
				r[j] = math.Float32frombits(b &^ uint32((int32(b)>>31)&^nan))
			}
		}, nil
	case graph.PostClip:
		return func(r []float32) {
			for j, v := range r {
				// Written so NaN passes through, as in clipRun.
				if v < a {
					v = a
				}
				if v > b {
					v = b
				}
				r[j] = v
			}
		}, nil
	case graph.PostHardSwish:
		return func(r []float32) {
			for j, v := range r {
				r[j] = v * clamp01(v*(1.0/6)+0.5)
			}
		}, nil
	case graph.PostHardSigmoid:
		return func(r []float32) {
			for j, v := range r {
				g := a*v + b
				if g < 0 {
					g = 0
				}
				if g > 1 {
					g = 1
				}
				r[j] = g
			}
		}, nil
	case graph.PostLeakyRelu:
		return func(r []float32) {
			for j, v := range r {
				if v < 0 {
					r[j] = a * v
				}
			}
		}, nil
	case graph.PostLinear:
		return func(r []float32) {
			for j, v := range r {
				r[j] = a*v + b
			}
		}, nil
	}
	f, err := postOpFunc(n, p)
	if err != nil {
		return nil, err
	}
	return func(r []float32) {
		for j, v := range r {
			r[j] = float32(f(float64(v)))
		}
	}, nil
}

// epilogue is what a conv applies to each finished output row: the bias,
// then the post-ops in order, one of which may add the residual.
type epilogue struct {
	bias []float32 // per output channel, or nil
	ops  []rowOp   // nil entry = the "sum" post-op
}

// newEpilogue compiles ops for the fused output pass. A "sum" post-op is
// fused only when sameShapeResidual (the residual has the output's shape,
// so it is read row by row); otherwise the ops from the sum on are
// returned as rest, for applyPostOps to run after the conv.
func newEpilogue(n *graph.Node, bias []float32, ops []graph.PostOp, sameShapeResidual bool) (*epilogue, []graph.PostOp, error) {
	e := &epilogue{bias: bias}
	for i, p := range ops {
		if p.Kind == graph.PostSum {
			if !sameShapeResidual {
				return e, ops[i:], nil
			}
			e.ops = append(e.ops, nil)
			continue
		}
		f, err := compileRowOp(n, p)
		if err != nil {
			return nil, nil, err
		}
		e.ops = append(e.ops, f)
	}
	return e, nil, nil
}

// empty reports whether the epilogue does nothing.
func (e *epilogue) empty() bool { return e.bias == nil && len(e.ops) == 0 }

// apply runs the epilogue on row, a run of output channel ch; res is the
// matching run of the residual (nil when no sum is fused).
func (e *epilogue) apply(row []float32, ch int, res []float32) {
	if e.bias != nil {
		bv := e.bias[ch]
		for j := range row {
			row[j] += bv
		}
	}
	for _, f := range e.ops {
		if f == nil {
			res = res[:len(row)]
			for j := range row {
				row[j] += res[j]
			}
			continue
		}
		f(row)
	}
}

// applyRowOps runs compiled row ops over all of y in parallel chunks.
func applyRowOps(y []float32, f rowOp) {
	const chunk = 4096
	nnParallel((len(y)+chunk-1)/chunk, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			f(y[i*chunk : min((i+1)*chunk, len(y))])
		}
	})
}

// clamp01 is min(max(g, 0), 1) without branches, which mispredict on
// activations: a set sign bit clears g, and bit patterns above 1.0 (which
// orders like the value for non-negative floats) select 1.0. A NaN g comes
// out as 0 or 1; callers multiply by the NaN input, which restores it.
func clamp01(g float32) float32 {
	const one = 0x3f800000
	b := math.Float32bits(g)
	b &^= uint32(int32(b) >> 31)
	over := uint32(int32(one-b) >> 31)
	return math.Float32frombits(b&^over | one&over)
}

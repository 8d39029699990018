package ir

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// importSDPA reads ScaledDotProductAttention-13 (query [N..., L, E], key
// [N..., S, E], value [N..., S, Ev], attention_mask?, scale?; causal) as
// OpenVINO's specification writes it out: softmax(Q K^T * scale + bias) V,
// scale 1/sqrt(E) when absent, the bias -inf above the diagonal when
// causal (the mask then ignored), else -inf where a boolean mask is false
// or a float mask added.
func importSDPA(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(3, 5); err != nil {
		return nil, err
	}
	causal, err := c.boolean("causal", false)
	if err != nil {
		return nil, err
	}
	q, k, v := c.in[0], c.in[1], c.in[2]
	if !q.Type().IsFloat() {
		return nil, c.errorf(ErrUnsupportedType, "query is %v, want a float type", q.Type())
	}
	r, err := c.rank(1)
	if err != nil {
		return nil, err
	}
	if r < 2 {
		return nil, c.errorf(ErrInvalidModel, "key has rank %d, want at least 2", r)
	}
	perm := make([]int64, r)
	for i := range perm {
		perm[i] = int64(i)
	}
	perm[r-2], perm[r-1] = perm[r-1], perm[r-2]
	kt, err := c.op("Transpose", "key_t", graph.Attrs{"perm": perm}, k)
	if err != nil {
		return nil, err
	}
	w, err := c.op("MatMul", "scores", nil, q, kt)
	if err != nil {
		return nil, err
	}
	scale := c.input(4)
	if scale.Valid() {
		if scale, err = c.castTo(scale, q.Type(), "scale_cast"); err != nil {
			return nil, err
		}
	} else {
		e, err := c.op("Shape", "head_size", graph.Attrs{"start": int64(-1)}, q)
		if err != nil {
			return nil, err
		}
		if e, err = c.castTo(e, q.Type(), "head_size_float"); err != nil {
			return nil, err
		}
		if e, err = c.op("Sqrt", "head_size_sqrt", nil, e); err != nil {
			return nil, err
		}
		if scale, err = c.op("Reciprocal", "scale", nil, e); err != nil {
			return nil, err
		}
	}
	if w, err = c.op("Mul", "scaled", nil, w, scale); err != nil {
		return nil, err
	}
	negInf, err := c.constOf("neg_inf", q.Type(), true, math.Inf(-1))
	if err != nil {
		return nil, err
	}
	mask := c.input(3)
	switch {
	case causal:
		above, err := c.causalMask(q, k)
		if err != nil {
			return nil, err
		}
		if w, err = c.op("Where", "causal", nil, above, negInf, w); err != nil {
			return nil, err
		}
	case mask.Valid() && mask.Type() == tensor.Bool:
		if w, err = c.op("Where", "masked", nil, mask, w, negInf); err != nil {
			return nil, err
		}
	case mask.Valid():
		if mask, err = c.castTo(mask, q.Type(), "mask_cast"); err != nil {
			return nil, err
		}
		if w, err = c.op("Add", "masked", nil, w, mask); err != nil {
			return nil, err
		}
	}
	if w, err = c.op("Softmax", "weights", graph.Attrs{"axis": int64(-1)}, w); err != nil {
		return nil, err
	}
	return one(c.op("MatMul", "", nil, w, v))
}

// causalMask is the [L, S] boolean that is true above the diagonal
// (column j > row i), L and S the second-to-last dims of q and k.
func (c *layerCtx) causalMask(q, k graph.Output) (graph.Output, error) {
	var idx [2]graph.Output
	for i, x := range []graph.Output{q, k} {
		name := []string{"rows", "cols"}[i]
		n, err := c.op("Shape", name+"_count", graph.Attrs{"start": int64(-2), "end": int64(-1)}, x)
		if err != nil {
			return graph.Output{}, err
		}
		if n, err = c.op("Squeeze", name+"_scalar", nil, n, c.constI64(name+"_axis", false, 0)); err != nil {
			return graph.Output{}, err
		}
		if idx[i], err = c.op("Range", name, nil, c.constI64(name+"_start", true, 0), n, c.constI64(name+"_step", true, 1)); err != nil {
			return graph.Output{}, err
		}
		if idx[i], err = c.op("Unsqueeze", name+"_2d", nil, idx[i], c.constI64(name+"_2d_axis", false, int64(1-i))); err != nil {
			return graph.Output{}, err
		}
	}
	return c.op("Greater", "above_diagonal", nil, idx[1], idx[0])
}

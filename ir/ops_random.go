package ir

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// randomImports are RandomUniform-8 and Multinomial-13. clinfer draws
// from its own Philox streams (graph.RandomKey), so the values are not
// OpenVINO's: the distribution, shapes and types are, and a layer with
// global_seed or op_seed set draws the same values on every run and
// device (both 0: a fresh draw per request, as OpenVINO's).
var randomImports = []importRow{
	{"RandomUniform", 8, importRandomUniform},
	{"Multinomial", 13, importMultinomial},
}

// randomSeed sets attrs' seed from global_seed and op_seed unless both
// are 0.
func (c *layerCtx) randomSeed(attrs graph.Attrs) error {
	g, err := c.int("global_seed", 0)
	if err != nil {
		return err
	}
	o, err := c.int("op_seed", 0)
	if err != nil {
		return err
	}
	if g != 0 || o != 0 {
		attrs["seed"] = float32(float64(g)*65536 + float64(o))
	}
	return nil
}

// importRandomUniform reads RandomUniform-8 (shape, minval, maxval, all
// constants; output_type a float type).
func importRandomUniform(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(3, 3); err != nil {
		return nil, err
	}
	t, err := c.elemType("output_type", tensor.F32)
	if err != nil {
		return nil, err
	}
	if !t.IsFloat() {
		return nil, c.attrErrorf("output_type", "%v is not supported (the float types are)", t)
	}
	shape, err := c.ints(0, "shape")
	if err != nil {
		return nil, err
	}
	lo, err := c.scalar(1, "minval")
	if err != nil {
		return nil, err
	}
	hi, err := c.scalar(2, "maxval")
	if err != nil {
		return nil, err
	}
	attrs := graph.Attrs{"shape": shape, "low": float32(lo), "high": float32(hi), "dtype": int64(t)}
	if err := c.randomSeed(attrs); err != nil {
		return nil, err
	}
	return one(c.op("RandomUniform", "", attrs))
}

// importMultinomial reads Multinomial-13 (probs [B, C] or [C],
// num_samples a constant): the op set's Multinomial of the log
// probabilities (log_probs true: the input, else its Log); drawing
// without replacement is refused beyond one sample.
func importMultinomial(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(2, 2); err != nil {
		return nil, err
	}
	t, err := c.elemType("convert_type", tensor.I64)
	if err != nil {
		return nil, err
	}
	if t != tensor.I32 && t != tensor.I64 {
		return nil, c.attrErrorf("convert_type", "%v is not i32 or i64", t)
	}
	logs, err := c.boolean("log_probs", false)
	if err != nil {
		return nil, err
	}
	repl, err := c.boolean("with_replacement", false)
	if err != nil {
		return nil, err
	}
	k, err := c.ints(1, "num_samples")
	if err != nil {
		return nil, err
	}
	if len(k) != 1 || k[0] < 1 {
		return nil, c.errorf(ErrInvalidModel, "num_samples %v: want one positive count", k)
	}
	if !repl && k[0] > 1 {
		return nil, c.attrErrorf("with_replacement", "false with %d samples is not supported (drawing with replacement is)", k[0])
	}
	r, err := c.rank(0)
	if err != nil {
		return nil, err
	}
	x := c.in[0]
	if !logs {
		if x, err = c.op("Log", "log_probs", nil, x); err != nil {
			return nil, err
		}
	}
	if r == 1 {
		if x, err = c.op("Unsqueeze", "batch", nil, x, c.constI64("batch_axis", false, 0)); err != nil {
			return nil, err
		}
	}
	attrs := graph.Attrs{"sample_size": k[0], "dtype": int64(t)}
	if err := c.randomSeed(attrs); err != nil {
		return nil, err
	}
	if r != 1 {
		return one(c.op("Multinomial", "", attrs, x))
	}
	y, err := c.op("Multinomial", "samples", attrs, x)
	if err != nil {
		return nil, err
	}
	return one(c.op("Squeeze", "", nil, y, c.constI64("batch_axis_out", false, 0)))
}

package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/philox"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// The random family draws from Philox (internal/philox) with the key and
// stream graph.RandomKey gives. A device passes the request's seed (for
// nodes without a seed attribute) as one more input after the node's
// own: a u64 scalar (RandomSeedInput). The arithmetic is float32 where the
// GPU's is, so the two agree bit for bit (normals to rounding).

// RandomSeedInput returns the extra input that carries a request's seed to
// a random kernel (see graph.IsRandom): append it to the node's inputs.
func RandomSeedInput(seed uint64) *tensor.Tensor {
	t, _ := tensor.From(tensor.Shape{}, []uint64{seed})
	return t
}

// splitSeed returns the node's own inputs of in and the request seed the
// device appended (RandomSeedInput; 0 when it appended none).
func splitSeed(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, uint64) {
	k := len(n.Inputs)
	if len(in) == k+1 && in[k] != nil && in[k].Type() == tensor.U64 && in[k].NumElements() == 1 {
		return in[:k], in[k].U64()[0]
	}
	return in, 0
}

// randomKey is graph.RandomKey with the request seed of in.
func randomKey(n *graph.Node, in []*tensor.Tensor) (key, stream uint64) {
	_, seed := splitSeed(n, in)
	return graph.RandomKey(n, seed)
}

// randomShapeAndType returns a random op's output shape (the shape
// attribute, or input 0's) and type (dtype, else f32 or input 0's).
func randomShapeAndType(n *graph.Node, in []*tensor.Tensor) (tensor.Shape, tensor.ElementType) {
	var shape tensor.Shape
	t := tensor.F32
	if len(n.Inputs) > 0 && len(in) > 0 && in[0] != nil {
		shape, t = in[0].Shape(), in[0].Type()
	} else {
		shape = tensor.Shape(n.Attrs.Ints("shape", nil))
	}
	if n.Attrs.Has("dtype") {
		t = tensor.ElementType(n.Attrs.Int("dtype", 0))
	}
	return shape, t
}

// storeF32s writes float32 values into a float tensor: exactly for f32
// and f64, rounded to nearest even for f16 and bf16.
func storeF32s(y *tensor.Tensor, v []float32) {
	if y.Type() == tensor.F64 {
		d := y.F64()
		for i, f := range v {
			d[i] = float64(f)
		}
		return
	}
	storeF32(y, v)
}

// randomUniformKernel is RandomUniform(Like): low + u*(high-low), u a
// Philox uniform in [0, 1), in float32.
func randomUniformKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	shape, t := randomShapeAndType(n, in)
	y, err := newOut(n, t, shape)
	if err != nil {
		return nil, err
	}
	key, stream := randomKey(n, in)
	low, high := graph.ParamValue(n, "low"), graph.ParamValue(n, "high")
	v := make([]float32, y.NumElements())
	philox.Uniforms(key, stream, v)
	for i, u := range v {
		v[i] = low + float32(u*(high-low))
	}
	storeF32s(y, v)
	return one(y), nil
}

// randomNormalKernel is RandomNormal(Like): mean + scale*z, z a Philox
// Box-Muller normal.
func randomNormalKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	shape, t := randomShapeAndType(n, in)
	y, err := newOut(n, t, shape)
	if err != nil {
		return nil, err
	}
	key, stream := randomKey(n, in)
	mean, scale := float64(graph.ParamValue(n, "mean")), float64(graph.ParamValue(n, "scale"))
	v := make([]float64, y.NumElements())
	for i := range v {
		v[i] = mean + scale*philox.Normal(key, stream, uint64(i))
	}
	storeF64(y, v)
	return one(y), nil
}

// bernoulliKernel is Bernoulli: 1 where the element's Philox uniform is
// below the probability, else 0.
func bernoulliKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	t := x.Type()
	if n.Attrs.Has("dtype") {
		t = tensor.ElementType(n.Attrs.Int("dtype", 0))
	}
	y, err := newOut(n, t, x.Shape())
	if err != nil {
		return nil, err
	}
	key, stream := randomKey(n, in)
	p := toF64s(x)
	u := make([]float32, len(p))
	philox.Uniforms(key, stream, u)
	v := make([]float64, len(p))
	for i := range v {
		pi := p[i]
		if x.Type() != tensor.F64 {
			pi = float64(float32(pi))
		}
		if float64(u[i]) < pi {
			v[i] = 1
		}
	}
	storeF64(y, v)
	return one(y), nil
}

// multinomialKernel is Multinomial: per batch row, sample_size class
// indices drawn from the softmax of the row (unnormalised log
// probabilities), each the first class whose cumulative probability
// exceeds a Philox uniform; computed in float32.
func multinomialKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	if x.Rank() != 2 {
		return nil, n.Errorf("%w: input %v, want [batch, classes]", tensor.ErrShape, x)
	}
	B, C := x.Shape()[0], x.Shape()[1]
	S := n.Attrs.Int("sample_size", 1)
	t := tensor.ElementType(n.Attrs.Int("dtype", int64(tensor.I32)))
	y, err := newOut(n, t, tensor.Shape{B, S})
	if err != nil {
		return nil, err
	}
	key, stream := randomKey(n, in)
	lp := toF64s(x)
	out := make([]int64, B*S)
	cum := make([]float32, C)
	for b := range B {
		row := lp[b*C : (b+1)*C]
		m := float32(math.Inf(-1))
		for _, v := range row {
			m = max(m, float32(v))
		}
		s := float32(0)
		for c, v := range row {
			s += float32(math.Exp(float64(float32(v) - m)))
			cum[c] = s
		}
		for k := range S {
			i := b*S + k
			u := philox.Uniform(philox.Uint32(key, stream, uint64(i))) * s
			c := int64(0)
			for c < C-1 && !(u < cum[c]) {
				c++
			}
			out[i] = c
		}
	}
	storeI64(y, out)
	return one(y), nil
}

// dropoutTrainKernel is Dropout with training_mode true: each element is
// kept, scaled by 1/(1-ratio), where its Philox uniform is at least ratio,
// and zeroed elsewhere; the mask says which were kept.
func dropoutTrainKernel(n *graph.Node, in []*tensor.Tensor, ratio float32) ([]*tensor.Tensor, error) {
	x := in[0]
	if ratio < 0 || ratio >= 1 {
		return nil, n.Errorf("%w: ratio %v must be in [0, 1)", driver.ErrInvalidArgument, ratio)
	}
	y, err := newOut(n, x.Type(), x.Shape())
	if err != nil {
		return nil, err
	}
	key, stream := randomKey(n, in)
	u := make([]float32, x.NumElements())
	philox.Uniforms(key, stream, u)
	xv := toF64s(x)
	v := make([]float64, len(xv))
	keep := make([]bool, len(xv))
	scale := 1 / (1 - float64(ratio))
	for i := range v {
		if keep[i] = u[i] >= ratio; keep[i] {
			v[i] = xv[i] * scale
		}
	}
	storeF64(y, v)
	out := []*tensor.Tensor{y}
	if len(n.Outputs) > 1 {
		mask, err := tensor.FromBool(x.Shape(), keep)
		if err != nil {
			return nil, n.Errorf("%w", err)
		}
		out = append(out, mask)
	}
	return out, nil
}

// randomKernels are the random family's kernels.
func randomKernels() map[string]Kernel {
	return map[string]Kernel{
		"RandomUniform":     randomUniformKernel,
		"RandomUniformLike": randomUniformKernel,
		"RandomNormal":      randomNormalKernel,
		"RandomNormalLike":  randomNormalKernel,
		"Bernoulli":         bernoulliKernel,
		"Multinomial":       multinomialKernel,
	}
}

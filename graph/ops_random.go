package graph

import (
	"hash/fnv"
	"math"

	"github.com/clinfer/clinfer/tensor"
)

// Random ops draw from Philox4x32-10 (internal/philox) on every device:
// element i of a node's random tensor is a function of the node's key and
// stream (RandomKey) and i alone, so CPU and GPU make the same tensors
// from one seed.

// RandomKey returns the Philox key and stream of random node n. A node
// with a seed attribute (a float, or Dropout's integer) draws from that
// seed on stream 0, so nodes of one seed agree; any other draws from
// requestSeed (the device's RANDOM_SEED, or the request's) on a stream
// hashed from its name, so its nodes differ.
func RandomKey(n *Node, requestSeed uint64) (key, stream uint64) {
	switch v := n.Attrs["seed"].(type) {
	case float32:
		return math.Float64bits(float64(v)), 0
	case float64:
		return math.Float64bits(v), 0
	case int64:
		return uint64(v), 0
	case int:
		return uint64(v), 0
	}
	h := fnv.New64a()
	h.Write([]byte(n.Name))
	return requestSeed, h.Sum64()
}

// IsRandom reports whether n draws random numbers: the random family, and
// Dropout (which draws its mask in training mode).
func IsRandom(n *Node) bool {
	s, ok := opTable[n.OpType]
	return ok && n.Domain == "" && (s.Family == FamilyRandom || n.OpType == "Dropout")
}

// randomType is the element type a random op makes: its dtype attribute,
// else def.
func randomType(n *Node, def tensor.ElementType) (tensor.ElementType, error) {
	if !n.Attrs.Has("dtype") {
		return def, nil
	}
	t := tensor.ElementType(n.Attrs.Int("dtype", 0))
	if !t.Valid() {
		return 0, n.Errorf("dtype %d is not an element type", int64(t))
	}
	return t, nil
}

// inferRandom is RandomUniform and RandomNormal (no input; the shape
// attribute) and their *Like forms (input's shape; its type unless dtype
// says), floats of dtype (default f32).
func inferRandom(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	if len(n.Inputs) == 0 {
		t, err := randomType(n, tensor.F32)
		if err != nil {
			return err
		}
		shape := n.Attrs.Ints("shape", nil)
		if shape == nil {
			return n.Errorf("attribute shape is required")
		}
		for _, d := range shape {
			if d < 0 {
				return n.Errorf("shape %v has a negative dimension", shape)
			}
		}
		if !t.IsFloat() {
			return n.Errorf("dtype %v is not a floating-point type", t)
		}
		setOutput(n, 0, t, ShapeOf(shape...))
		return nil
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	t, err := randomType(n, x.Type())
	if err != nil {
		return err
	}
	if !t.IsFloat() {
		return n.Errorf("output type %v is not a floating-point type (set dtype)", t)
	}
	setOutput(n, 0, t, x.Shape().Clone())
	return nil
}

// inferBernoulli is Bernoulli(probabilities) -> 0 or 1 of dtype (default
// the input's type) in the input's shape.
func inferBernoulli(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if !isFloat(x.Type()) {
		return n.Errorf("input has element type %v, want a floating-point type", x.Type())
	}
	t, err := randomType(n, x.Type())
	if err != nil {
		return err
	}
	setOutput(n, 0, t, x.Shape().Clone())
	return nil
}

// inferMultinomial is Multinomial(input [batch, classes] of unnormalised
// log-probabilities) -> [batch, sample_size] class indices of dtype (i32
// or i64, default i32).
func inferMultinomial(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	if !isFloat(x.Type()) {
		return n.Errorf("input has element type %v, want a floating-point type", x.Type())
	}
	t, err := randomType(n, tensor.I32)
	if err != nil {
		return err
	}
	if t != tensor.I32 && t != tensor.I64 {
		return n.Errorf("dtype %v is not i32 or i64", t)
	}
	s := x.Shape()
	if s.RankKnown && len(s.Dims) != 2 {
		return n.Errorf("input has shape %v, want [batch, classes]", s)
	}
	k := n.Attrs.Int("sample_size", 1)
	if k < 1 {
		return n.Errorf("sample_size %d must be positive", k)
	}
	out := PartialShape{RankKnown: true, Dims: []Dim{DynamicDim(""), StaticDim(k)}}
	if s.RankKnown {
		out.Dims[0] = s.Dims[0]
	}
	setOutput(n, 0, t, out)
	return nil
}

// randomOps are the rows of the random family. None folds: each
// inference draws (with the same seed, the same values).
var randomOps = []OpSpec{
	{Name: "RandomUniform", MinInputs: 0, MaxInputs: 0, Fold: FoldNever, Params: []Param{{"low", 0}, {"high", 1}}, Infer: inferRandom,
		Examples: []Example{{Name: "seeded", Attrs: Attrs{"shape": []int64{3, 70}, "low": float32(-2), "high": float32(5), "seed": float32(3)}},
			{Name: "request_seed", Attrs: Attrs{"shape": []int64{2, 9}}}}},
	{Name: "RandomNormal", MinInputs: 0, MaxInputs: 0, Fold: FoldNever, Params: []Param{{"mean", 0}, {"scale", 1}}, Infer: inferRandom,
		Examples: []Example{{Name: "seeded", Attrs: Attrs{"shape": []int64{5, 33}, "mean": float32(1), "scale": float32(0.5), "seed": float32(-7.5)}},
			{Name: "request_seed_f16", Attrs: Attrs{"shape": []int64{17}, "dtype": int64(tensor.F16)}}}},
	{Name: "RandomUniformLike", MinInputs: 1, MaxInputs: 1, Fold: FoldNever, Params: []Param{{"low", 0}, {"high", 1}}, Infer: inferRandom,
		Examples: []Example{{Attrs: Attrs{"seed": float32(1)}, Inputs: []ExampleInput{{Shape: []int64{4, 25}}}},
			{Name: "int_like_f64", Attrs: Attrs{"dtype": int64(tensor.F64)}, Inputs: []ExampleInput{{Type: tensor.I64, Shape: []int64{11}}}}}},
	{Name: "RandomNormalLike", MinInputs: 1, MaxInputs: 1, Fold: FoldNever, Params: []Param{{"mean", 0}, {"scale", 1}}, Infer: inferRandom,
		Examples: []Example{{Attrs: Attrs{"seed": float32(2), "scale": float32(3)}, Inputs: []ExampleInput{{Shape: []int64{6, 7}}}}}},
	{Name: "Bernoulli", MinInputs: 1, MaxInputs: 1, Fold: FoldNever, Infer: inferBernoulli,
		Examples: []Example{{Attrs: Attrs{"seed": float32(0)}, Inputs: []ExampleInput{{Shape: []int64{5, 20}, Positive: true}}},
			{Name: "bool", Attrs: Attrs{"dtype": int64(tensor.Bool)}, Inputs: []ExampleInput{{Shape: []int64{33}, Positive: true}}}}},
	{Name: "Multinomial", MinInputs: 1, MaxInputs: 1, Fold: FoldNever, Infer: inferMultinomial,
		Examples: []Example{{Attrs: Attrs{"seed": float32(4), "sample_size": int64(50)}, Inputs: []ExampleInput{{Shape: []int64{3, 6}}}},
			{Name: "i64", Attrs: Attrs{"dtype": int64(tensor.I64), "sample_size": int64(7)}, Inputs: []ExampleInput{{Shape: []int64{2, 40}}}}}},
}

package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// seedArg returns the plan value the random kernels read the request's
// seed from (random.cl's seed buffer), made on first use: the request
// writes it with the inputs (plan.seed).
func (b *builder) seedArg() slotArg {
	if b.pl.seed == 0 {
		b.pl.seed = b.temp(tensor.U64, tensor.Shape{1}) + 1
	}
	return slotArg(b.pl.seed - 1)
}

// randomArgs are the arguments every random.cl kernel ends with: the seed
// buffer, the node's key and stream (graph.RandomKey) and whether the key
// is the node's own.
func (b *builder) randomArgs(n *graph.Node) []any {
	key, stream := graph.RandomKey(n, 0)
	own := int32(0)
	if n.Attrs.Has("seed") {
		own = 1
	}
	return []any{b.seedArg(), key, stream, own}
}

// randomFloat returns the defines of a random.cl float buffer of type t:
// f32, f16 (-DHALF) or f64 (-DDOUBLE, where the device has doubles).
func (b *builder) randomFloat(n *graph.Node, t tensor.ElementType) (string, error) {
	return b.floatDefinesAs(n, t, "-DDOUBLE")
}

// expDefine makes multinomial's exponentials those of the CPU (in double,
// rounded to float) on a device with doubles.
func (b *builder) expDefine() string {
	if b.c.dev.fp64 {
		return " -DEXP_DOUBLE"
	}
	return ""
}

// lowerRandom runs RandomUniform, RandomNormal and their *Like forms as
// one launch over the output.
func lowerRandom(b *builder, n *graph.Node) error {
	y := b.out(n, 0)
	defs, err := b.randomFloat(n, b.val(y).typ)
	if err != nil {
		return err
	}
	cnt := b.val(y).shape.NumElements()
	args := []any{slotArg(y), uint64(cnt)}
	args = append(args, b.randomArgs(n)...)
	switch n.OpType {
	case "RandomUniform", "RandomUniformLike":
		low, high := graph.ParamValue(n, "low"), graph.ParamValue(n, "high")
		return b.emit(n, "random_uniform", defs, cnt, append(args, low, high-low)...)
	}
	return b.emit(n, "random_normal", defs, cnt, append(args, graph.ParamValue(n, "mean"), graph.ParamValue(n, "scale"))...)
}

// outDefines returns the defines of bernoulli's or multinomial's output
// of type t.
func (b *builder) outDefines(n *graph.Node, t tensor.ElementType) (string, error) {
	if t == tensor.F16 {
		return " -DOT=ushort -DOUT_HALF", nil
	}
	ct, err := b.numType(n, t)
	if err != nil {
		return "", err
	}
	return " -DOT=" + ct, nil
}

// lowerBernoulli draws each element against its probability.
func lowerBernoulli(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	defs, err := b.randomFloat(n, b.val(x).typ)
	if err != nil {
		return err
	}
	od, err := b.outDefines(n, b.val(y).typ)
	if err != nil {
		return err
	}
	cnt := b.val(y).shape.NumElements()
	return b.emit(n, "bernoulli", defs+od, cnt, append([]any{slotArg(x), slotArg(y), uint64(cnt)}, b.randomArgs(n)...)...)
}

// lowerMultinomial draws each sample of each row from the row's softmax.
func lowerMultinomial(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	defs, err := b.randomFloat(n, b.val(x).typ)
	if err != nil {
		return err
	}
	od, err := b.outDefines(n, b.val(y).typ)
	if err != nil {
		return err
	}
	s, ys := b.val(x).shape, b.val(y).shape
	cnt := ys.NumElements()
	return b.emit(n, "multinomial", defs+od+b.expDefine(), cnt,
		append([]any{slotArg(x), slotArg(y), uint64(cnt), uint64(s[1]), uint64(ys[1])}, b.randomArgs(n)...)...)
}

// lowerDropoutTrain runs Dropout whose training_mode is not known false at
// plan time: dropout_train reads the mode and the ratio on the device.
func lowerDropoutTrain(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	t := b.val(x).typ
	defs, err := b.randomFloat(n, t)
	if err != nil {
		return err
	}
	ratio := b.in(n, 1)
	if ratio < 0 {
		r, _ := tensor.FromF64(tensor.Shape{}, []float64{0.5})
		rc, err := r.Convert(t)
		if err != nil {
			return errUnsupported(n, "%v", err)
		}
		ratio = b.newValue(t, tensor.Shape{}, rc)
	} else if b.val(ratio).typ != t {
		return errUnsupported(n, "ratio of type %s for data of type %s", b.val(ratio).typ, t)
	}
	train := b.in(n, 2)
	if b.val(train).typ != tensor.Bool {
		return errUnsupported(n, "training_mode of type %s", b.val(train).typ)
	}
	mask := b.temp(tensor.Bool, b.val(x).shape)
	if len(n.Outputs) > 1 {
		mask = b.out(n, 1)
	}
	cnt := b.val(x).shape.NumElements()
	return b.emit(n, "dropout_train", defs, cnt, append([]any{slotArg(x), slotArg(ratio), slotArg(train), slotArg(y), slotArg(mask),
		uint64(cnt)}, b.randomArgs(n)...)...)
}

// randomLowerings are the GPU table entries of the random family.
func randomLowerings() map[string]lowering {
	return map[string]lowering{
		"RandomUniform": {lower: lowerRandom}, "RandomUniformLike": {lower: lowerRandom},
		"RandomNormal": {lower: lowerRandom}, "RandomNormalLike": {lower: lowerRandom},
		"Bernoulli": {lower: lowerBernoulli}, "Multinomial": {lower: lowerMultinomial},
	}
}

package clbackend

import (
	"errors"
	"fmt"
	"slices"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// selectingOps are the ops whose results are input values (or their
// indices) picked by comparisons and whose kernels lack some integer
// types: run in a wider float type that holds every value of an integer
// type exactly, they give the same bits.
var selectingOps = map[string]bool{"ArgMax": true, "ArgMin": true}

// viaDoubleOps are the ops whose CPU reference computes integer tensors
// in f64 (float math on integers: erf, the Shrink thresholds, the log and
// exp of ReduceLogSumExp, Resize's interpolation) and truncates the result: run in f64 between
// casts, the GPU computes the same.
var viaDoubleOps = map[string]bool{"Erf": true, "Shrink": true, "ReduceLogSumExp": true, "Resize": true}

// viaFloatOps are the ops whose CPU reference computes f64 tensors in f32
// (cpufallback's nnFloatKernel) and whose GPU kernels have no f64 form:
// the GPU computes them in f32 between casts too, as the reference does
// and as OpenVINO's GPU plugin runs f64 models.
var viaFloatOps = map[string]bool{
	"Conv": true, "ConvTranspose": true, graph.OpFusedConv: true, graph.OpFullyConnected: true,
	"LayerNormalization": true, "GlobalLpPool": true, "GridSample": true,
	"LSTM": true, "GRU": true, "RNN": true,
}

// widerType returns the type node n's tensors of type t run in when n's
// lowering refuses t (Undefined: none). bf16 and the 8-bit floats run in
// f32 on every op, as on OpenVINO's GPU plugin, which runs bf16 models in
// f32, and so does f16 on the ops without an f16 form: the kernels store
// f32, f16 and f64, and the CPU reference computes these types in f32.
// The 8- and 16-bit integers run in f32 and the 32-bit ones in f64 on the
// selecting ops, where that is exact, and every integer runs in f64 on the
// ops the CPU reference computes in f64 (viaDoubleOps); f64 runs in f32 on
// the ops the CPU reference computes in f32 (viaFloatOps).
func widerType(n *graph.Node, t tensor.ElementType) tensor.ElementType {
	switch {
	case t == tensor.BF16 || t == tensor.F16 || t.IsFloat8():
		return tensor.F32
	case t == tensor.F64 && viaFloatOps[n.OpType]:
		return tensor.F32
	case t.IsInteger() && viaDoubleOps[n.OpType]:
		return tensor.F64
	case !selectingOps[n.OpType]:
		return tensor.Undefined
	case t == tensor.I8 || t == tensor.U8 || t == tensor.I16 || t == tensor.U16:
		return tensor.F32
	case t == tensor.I32 || t == tensor.U32:
		return tensor.F64
	}
	return tensor.Undefined
}

// widenType returns the type node n, whose lowering refused it with err,
// is widened from (lowerWidened): err is ErrUnsupported, n has no bodies,
// the types of its outputs follow its inputs (no "to" or "dtype"
// attribute), and its first input, or else an output, has a type
// widerType widens. Undefined means n is not widened.
func widenType(n *graph.Node, err error) tensor.ElementType {
	if !errors.Is(err, driver.ErrUnsupported) || n.HasBodies() || n.Attrs.Has("to") || n.Attrs.Has("dtype") {
		return tensor.Undefined
	}
	var t tensor.ElementType
	switch {
	case len(n.Inputs) > 0 && n.Inputs[0].Valid():
		t = n.Inputs[0].Port().Type
	case len(n.Outputs) > 0:
		t = n.Outputs[0].Type
	}
	if widerType(n, t) == tensor.Undefined {
		return tensor.Undefined
	}
	return t
}

// lowerWidened lowers n with l on copies of its tensors of type from in
// the wider type widerType gives: each such input converted by a cast
// launch (on the host when known there), the op lowered as a shadow of n
// whose ports of type from are wide, each such output converted back
// (cast.cl; f32 to bf16 rounds to nearest even). The launches are n's.
func (b *builder) lowerWidened(n *graph.Node, l lowering, from tensor.ElementType) error {
	to := widerType(n, from)
	fromDef, toDef, err := b.castDefines(n, from, to)
	if err != nil {
		return err
	}
	first := len(b.pl.launches)
	shadow := *n
	shadow.Inputs = slices.Clone(n.Inputs)
	shadow.Outputs = slices.Clone(n.Outputs)
	for i, o := range n.Inputs {
		if !o.Valid() || o.Port().Type != from {
			continue
		}
		v := b.of[o]
		p := o.Port()
		src := &graph.Node{Name: fmt.Sprintf("%s/%s_to_%s", n.Name, from, to), OpType: "Cast", Outputs: []graph.Port{{Name: p.Name, Type: to, Shape: p.Shape}}}
		shadow.Inputs[i] = src.Out(0)
		w := b.temp(to, b.val(v).shape)
		b.of[src.Out(0)] = w
		if err := b.castValue(n, v, w, "-DSRC_"+fromDef+" -DDST_"+toDef); err != nil {
			return err
		}
	}
	for i, o := range n.Outputs {
		if o.Type == from {
			shadow.Outputs[i].Type = to
			b.of[shadow.Out(i)] = b.temp(to, b.val(b.out(n, i)).shape)
		} else if v, ok := b.of[n.Out(i)]; ok {
			b.of[shadow.Out(i)] = v
		}
	}
	if err := l.lower(b, &shadow); err != nil {
		return err
	}
	for i, o := range n.Outputs {
		if o.Type != from {
			if v, ok := b.of[shadow.Out(i)]; ok {
				b.of[n.Out(i)] = v
			}
			continue
		}
		if err := b.castValue(n, b.of[shadow.Out(i)], b.out(n, i), "-DSRC_"+toDef+" -DDST_"+fromDef); err != nil {
			return err
		}
	}
	for i := first; i < len(b.pl.launches); i++ {
		if b.pl.launches[i].node == &shadow {
			b.pl.launches[i].node = n
		}
	}
	delete(b.pl.impl, &shadow)
	return nil
}

// castDefines returns the cast.cl type defines (after -DSRC_ or -DDST_) of
// from and of its wider type to: "BF16", "F8=<code>", or "T=<C type>".
func (b *builder) castDefines(n *graph.Node, from, to tensor.ElementType) (string, string, error) {
	def := func(t tensor.ElementType) (string, error) {
		switch {
		case t == tensor.BF16:
			return "BF16", nil
		case t == tensor.F16:
			return "HALF", nil
		case t.IsFloat8():
			return f8Define(t), nil
		}
		ct, err := b.numType(n, t)
		return "T=" + ct, err
	}
	f, err := def(from)
	if err != nil {
		return "", "", err
	}
	t, err := def(to)
	return f, t, err
}

// castValue emits cast.cl's conversion of value from into value to (of the
// same shape), built with defines; a host value converts on the host.
func (b *builder) castValue(n *graph.Node, from, to int, defines string) error {
	if h := b.val(from).host; h != nil {
		t, err := h.Convert(b.val(to).typ)
		if err != nil {
			return errUnsupported(n, "%v", err)
		}
		b.val(to).host = t
		return nil
	}
	cnt := b.val(to).shape.NumElements()
	if cnt == 0 {
		return nil
	}
	return b.emit(n, "cast", defines, cnt, slotArg(from), slotArg(to), uint64(cnt))
}

// lowFloat reports whether t is f32 or a type asF32 widens.
func lowFloat(t tensor.ElementType) bool {
	return t == tensor.F32 || t == tensor.F16 || t == tensor.BF16
}

// asF32 returns value v as f32: v itself, or an f16 or bf16 v converted
// by a cast launch (on the host when known there), for the lowerings that
// run these types in f32 themselves (those lowerWidened cannot reach: the
// count launches of the data-sized ops).
func (b *builder) asF32(n *graph.Node, v int) (int, error) {
	t := b.val(v).typ
	if t == tensor.F32 {
		return v, nil
	}
	from, to, err := b.castDefines(n, t, tensor.F32)
	if err != nil {
		return 0, err
	}
	w := b.temp(tensor.F32, b.val(v).shape)
	return w, b.castValue(n, v, w, "-DSRC_"+from+" -DDST_"+to)
}

package clbackend

import (
	"errors"
	"slices"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// bf16InF32 reports whether node n, whose lowering refused it with err,
// runs in f32 instead (lowerInF32): the refusal is ErrUnsupported, n reads
// or makes a bf16 tensor, the types of its outputs follow its inputs (no
// "to" or "dtype" attribute) and it has no bodies. The GPU kernels store
// f32, f16 and f64; bf16 is a storage type there, as on OpenVINO's GPU
// plugin, which runs bf16 models in f32.
func bf16InF32(n *graph.Node, err error) bool {
	if !errors.Is(err, driver.ErrUnsupported) || n.HasBodies() || n.Attrs.Has("to") || n.Attrs.Has("dtype") {
		return false
	}
	for _, o := range n.Inputs {
		if o.Valid() && o.Port().Type == tensor.BF16 {
			return true
		}
	}
	for _, o := range n.Outputs {
		if o.Type == tensor.BF16 {
			return true
		}
	}
	return false
}

// lowerInF32 lowers n with l on f32 copies of its bf16 tensors: each bf16
// input converted by a cast launch (a host value on the host), the op
// lowered as a shadow of n whose bf16 ports are f32, each bf16 output
// converted back (cast.cl rounds to nearest even). The launches are n's.
func (b *builder) lowerInF32(n *graph.Node, l lowering) error {
	first := len(b.pl.launches)
	shadow := *n
	shadow.Inputs = slices.Clone(n.Inputs)
	shadow.Outputs = slices.Clone(n.Outputs)
	for i, o := range n.Inputs {
		if !o.Valid() || o.Port().Type != tensor.BF16 {
			continue
		}
		v := b.of[o]
		p := o.Port()
		src := &graph.Node{Name: n.Name + "/bf16_to_f32", OpType: "Cast", Outputs: []graph.Port{{Name: p.Name, Type: tensor.F32, Shape: p.Shape}}}
		shadow.Inputs[i] = src.Out(0)
		if h := b.val(v).host; h != nil {
			f, err := h.Convert(tensor.F32)
			if err != nil {
				return errUnsupported(n, "input %d: %v", i, err)
			}
			b.of[src.Out(0)] = b.newValue(tensor.F32, b.val(v).shape, f)
			continue
		}
		w := b.temp(tensor.F32, b.val(v).shape)
		b.of[src.Out(0)] = w
		if err := b.castValue(n, v, w, "-DSRC_BF16 -DDST_T=float"); err != nil {
			return err
		}
	}
	for i, o := range n.Outputs {
		if o.Type == tensor.BF16 {
			shadow.Outputs[i].Type = tensor.F32
			b.of[shadow.Out(i)] = b.temp(tensor.F32, b.val(b.out(n, i)).shape)
		} else if v, ok := b.of[n.Out(i)]; ok {
			b.of[shadow.Out(i)] = v
		}
	}
	if err := l.lower(b, &shadow); err != nil {
		return err
	}
	for i, o := range n.Outputs {
		if o.Type != tensor.BF16 {
			if v, ok := b.of[shadow.Out(i)]; ok {
				b.of[n.Out(i)] = v
			}
			continue
		}
		if err := b.castValue(n, b.of[shadow.Out(i)], b.out(n, i), "-DSRC_T=float -DDST_BF16"); err != nil {
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

package preprocess

import (
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// output inserts the configured output's steps before its Result.
func (b *builder) output(o *OutputInfo) error {
	r := b.m.Result(o.name)
	if r == nil {
		var list []string
		for _, r := range b.m.Results {
			list = append(list, r.Name)
		}
		if o.name == "" {
			return fmt.Errorf("%w: the model has no output %d (outputs: %q)", ErrInvalid, o.index, list)
		}
		return fmt.Errorf("%w: the model has no output %q (outputs: %q)", ErrInvalid, o.name, list)
	}
	ml := modelLayout(o.modelLayout, r)
	c := &cursor{b: b, prefix: o.name + "/postprocess/", out: r.Inputs[0], layout: ml}
	for _, st := range o.list {
		switch st.kind {
		case stepConvertElementType:
			if err := c.cast(st.elem, "convert_element_type"); err != nil {
				return err
			}
		case stepConvertLayout:
			if err := c.transposeTo(st.layout); err != nil {
				return fmt.Errorf("output %q: %w", o.name, err)
			}
		case stepCustom:
			out, err := st.custom(c.out)
			if err != nil {
				return fmt.Errorf("output %q: custom step: %w", o.name, err)
			}
			c.out = out
		}
	}
	if o.layout.Known() {
		if err := c.transposeTo(o.layout); err != nil {
			return fmt.Errorf("output %q: %w", o.name, err)
		}
	}
	if o.elem != tensor.Undefined {
		if err := c.cast(o.elem, "convert_element_type"); err != nil {
			return err
		}
	}
	r.Inputs[0] = c.out
	return nil
}

// transposeTo transposes the value from the current layout to l.
func (c *cursor) transposeTo(l Layout) error {
	if !c.layout.Known() {
		return fmt.Errorf("%w: converting to layout %v needs the model's layout (set it with Model().SetLayout)", ErrInvalid, l)
	}
	if c.layout.Equal(l) {
		return nil
	}
	perm, err := permutation(c.layout, l)
	if err != nil {
		return err
	}
	if err := c.op("Transpose", "layout", graph.Attrs{"perm": perm}, c.out); err != nil {
		return err
	}
	c.layout = l
	return nil
}

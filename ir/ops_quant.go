package ir

import (
	"github.com/clinfer/clinfer/graph"
)

// quantImports are quantization. FakeQuantize is written out in the op
// set's arithmetic, following its definition:
//
//	x <= min(il, ih): ol
//	x >  max(il, ih): oh
//	otherwise:        round((x - il) / (ih - il) * (levels-1)) / (levels-1) * (oh - ol) + ol
//
// with Round rounding halves to even, as the reference's nearbyint does.
var quantImports = []importRow{
	{"FakeQuantize", 1, importFakeQuantize},
}

func importFakeQuantize(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(5, 5); err != nil {
		return nil, err
	}
	levels, err := c.int("levels", 0)
	if err != nil {
		return nil, err
	}
	if levels < 2 {
		return nil, c.badAttr("levels", errf("%d is below 2", levels))
	}
	if _, err := c.enum("auto_broadcast", "numpy", "numpy", "none"); err != nil {
		return nil, err
	}
	x, il, ih, ol, oh := c.in[0], c.in[1], c.in[2], c.in[3], c.in[4]
	t := x.Type()
	steps, err := c.constOf("steps", t, true, float64(levels-1))
	if err != nil {
		return nil, err
	}
	var v graph.Output
	step := func(op, name string, in ...graph.Output) error {
		var err error
		v, err = c.op(op, name, nil, in...)
		return err
	}
	if err := step("Sub", "in_range", ih, il); err != nil {
		return nil, err
	}
	inRange := v
	if err := step("Sub", "x_offset", x, il); err != nil {
		return nil, err
	}
	if err := step("Div", "x_unit", v, inRange); err != nil {
		return nil, err
	}
	if err := step("Mul", "x_steps", v, steps); err != nil {
		return nil, err
	}
	if err := step("Round", "x_level", v); err != nil {
		return nil, err
	}
	if err := step("Div", "y_unit", v, steps); err != nil {
		return nil, err
	}
	level := v
	if err := step("Sub", "out_range", oh, ol); err != nil {
		return nil, err
	}
	if err := step("Mul", "y_scaled", level, v); err != nil {
		return nil, err
	}
	if err := step("Add", "y_mid", v, ol); err != nil {
		return nil, err
	}
	mid := v
	if err := step("Min", "in_min", il, ih); err != nil {
		return nil, err
	}
	if err := step("LessOrEqual", "below", x, v); err != nil {
		return nil, err
	}
	below := v
	if err := step("Max", "in_max", il, ih); err != nil {
		return nil, err
	}
	if err := step("Greater", "above", x, v); err != nil {
		return nil, err
	}
	above := v
	if err := step("Where", "y_high", above, oh, mid); err != nil {
		return nil, err
	}
	return one(c.op("Where", "", nil, below, ol, v))
}

package graph

import (
	"fmt"

	"github.com/clinfer/clinfer/tensor"
)

// Example is a small instance of an op, declared in the op's row of the op
// table (OpSpec.Examples). The tests that run every op on every device
// build a one-node model from each example, fill its parameters with
// seeded values and compare the device with the CPU reference, so an op
// declared with examples needs no test code of its own in any device
// package (the GPU's TestLoweringsMatchCPU picks them up).
type Example struct {
	// Name tells the examples of one op apart ("upper_k1"); "" reads as
	// "example".
	Name string
	// Attrs are the node's attributes.
	Attrs Attrs
	// Inputs are the node's inputs, in order.
	Inputs []ExampleInput
	// Outputs is the node's number of outputs; 0 means 1.
	Outputs int
}

// ExampleInput is one input of an Example: a parameter the test fills with
// seeded values, or, with Ints set, an i64 constant (axes, pads, k...), or
// with Floats set, an f32 constant (thresholds, boxes...).
type ExampleInput struct {
	// Type is the parameter's element type; F32 when Undefined.
	Type tensor.ElementType
	// Shape is the parameter's shape, or the constant's (nil: a vector of
	// len(Ints); empty and non-nil: a scalar).
	Shape []int64
	// Ints, when non-nil, makes the input an i64 constant of these values
	// (of Type when that is another integer type).
	Ints []int64
	// Floats, when non-nil, makes the input an f32 constant of these
	// values (Shape as for Ints).
	Floats []float32
	// Positive asks for values above zero (Log, Sqrt, a divisor).
	Positive bool
	// Omit leaves an optional input out (a later one is given).
	Omit bool
}

// Build returns the example as a model of one node of opType over its
// parameters (named after the input index: "x0", "x1"..., "pos2" for a
// Positive input, which the tests fill with values above zero), with outputs
// "y", "y1", "y2"... It checks the example against the op's spec, so a
// wrong example fails with the op and example named.
func (e Example) Build(opType string) (*Model, error) {
	name := e.Name
	if name == "" {
		name = "example"
	}
	var params []*Node
	var ins []Output
	for i, in := range e.Inputs {
		if in.Omit {
			ins = append(ins, Output{})
			continue
		}
		if in.Ints != nil || in.Floats != nil {
			shape := tensor.Shape(in.Shape)
			if in.Shape == nil {
				shape = tensor.Shape{int64(len(in.Ints) + len(in.Floats))}
			}
			t, err := tensor.FromI64(shape, in.Ints)
			if in.Floats != nil {
				t, err = tensor.FromF32(shape, in.Floats)
			} else if err == nil && in.Type.Valid() && in.Type != tensor.I64 {
				t, err = t.Convert(in.Type)
			}
			if err != nil {
				return nil, fmt.Errorf("graph: op %s, example %s, input %d: %w", opType, name, i, err)
			}
			ins = append(ins, NewConstant(fmt.Sprintf("c%d", i), t).Out(0))
			continue
		}
		typ := in.Type
		if typ == tensor.Undefined {
			typ = tensor.F32
		}
		pn := fmt.Sprintf("x%d", i)
		if in.Positive {
			pn = fmt.Sprintf("pos%d", i)
		}
		p := NewParameter(pn, typ, ShapeOf(in.Shape...))
		params = append(params, p)
		ins = append(ins, p.Out(0))
	}
	outs := e.Outputs
	if outs == 0 {
		outs = 1
	}
	n := NewNode(opType, "node", ins, e.Attrs, outs)
	var res []*Node
	for i := range n.Outputs {
		rn := "y"
		if i > 0 {
			rn = fmt.Sprintf("y%d", i)
		}
		res = append(res, NewResult(rn, n.Out(i)))
	}
	m := NewModel(opType+"/"+name, params, res)
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("graph: op %s, example %s: %w", opType, name, err)
	}
	return m, nil
}

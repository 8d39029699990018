package batch

import (
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// batchModels returns the model lone requests run on (single: m with its
// shapes inferred, so a dynamic axis 0 stays dynamic and the compiled
// model's ports are m's), the output shapes at batch 1 (what a request of
// batch 1 gets) and a copy of m at batch n (batched; nil when n is 1),
// after checking that axis 0 is the batch: every input's axis 0 is 1 or
// dynamic and its other axes are static, and every output has the same
// shape at batch 1 and at batch n except axis 0, which is 1 and n. Shape
// inference cannot prove that no op mixes samples, but it catches what
// breaks batching in practice: an input without a batch axis, a Reshape or
// reduction that folds the batch into another axis, dynamic image sizes a
// batch of one shape cannot hold. The error wraps driver.ErrUnsupported
// and names the input or output.
func batchModels(m *graph.Model, n int) (single *graph.Model, outOne []tensor.Shape, batched *graph.Model, err error) {
	if len(m.Parameters) == 0 {
		return nil, nil, nil, unbatchable(m, "it has no inputs")
	}
	for _, p := range m.Parameters {
		s := p.Outputs[0].Shape
		if !s.RankKnown || len(s.Dims) == 0 {
			return nil, nil, nil, unbatchable(m, fmt.Sprintf("input %q has shape %v: no axis 0 to batch on", p.Name, s))
		}
		if d := s.Dims[0]; d.IsStatic() && d.Size != 1 {
			return nil, nil, nil, unbatchable(m, fmt.Sprintf("input %q has shape %v: axis 0 is %d, want 1 or dynamic (the batch)", p.Name, s, d.Size))
		}
		for i, d := range s.Dims[1:] {
			if !d.IsStatic() {
				return nil, nil, nil, unbatchable(m, fmt.Sprintf("input %q has shape %v: axis %d is dynamic, and a batch needs one shape for all its requests; "+
					"give it a size before compiling with Model.Reshape (as OpenVINO's model.reshape; cmd/benchmark -shape %s=%v)", p.Name, s, i+1, p.Name, exampleShape(s)))
			}
		}
	}
	at1, err := withBatch(m, 1)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, r := range at1.Results {
		s, ok := r.Outputs[0].Shape.ToShape()
		if !ok || len(s) == 0 || s[0] != 1 {
			return nil, nil, nil, unbatchable(m, fmt.Sprintf("output %q has shape %v at batch 1: want a static shape with 1 on axis 0", r.Name, r.Outputs[0].Shape))
		}
		outOne = append(outOne, s)
	}
	single = m.Clone()
	if err := single.InferShapes(); err != nil {
		return nil, nil, nil, unbatchable(m, fmt.Sprintf("its shapes do not infer: %v", err))
	}
	if n == 1 {
		return single, outOne, nil, nil
	}
	if batched, err = withBatch(m, n); err != nil {
		return nil, nil, nil, err
	}
	for i, r := range batched.Results {
		one, many := at1.Results[i].Outputs[0].Shape, r.Outputs[0].Shape
		ok := many.IsStatic() && len(many.Dims) == len(one.Dims) && many.Dims[0].Size == int64(n)
		for d := 1; ok && d < len(one.Dims); d++ {
			ok = many.Dims[d].Size == one.Dims[d].Size
		}
		if !ok {
			return nil, nil, nil, unbatchable(m, fmt.Sprintf("output %q has shape %v at batch 1 but %v at batch %d: its axis 0 is not the batch (an op folds the batch into another axis)", r.Name, one, many, n))
		}
	}
	return single, outOne, batched, nil
}

// withBatch returns a copy of m with axis 0 of every input set to n and
// the shapes inferred again.
func withBatch(m *graph.Model, n int) (*graph.Model, error) {
	c := m.Clone()
	for _, p := range c.Parameters {
		s := p.Outputs[0].Shape.Clone()
		s.Dims[0] = graph.StaticDim(int64(n))
		p.Outputs[0].Shape = s
	}
	if err := c.InferShapes(); err != nil {
		return nil, unbatchable(m, fmt.Sprintf("its shapes do not infer at batch %d: %v", n, err))
	}
	return c, nil
}

// exampleShape is s with its dynamic axes but axis 0 given a size, for
// the hint of an error: 1 for the batch, 224 elsewhere.
func exampleShape(s graph.PartialShape) tensor.Shape {
	out := make(tensor.Shape, len(s.Dims))
	for i, d := range s.Dims {
		switch {
		case d.IsStatic():
			out[i] = d.Size
		case i == 0:
			out[i] = 1
		default:
			out[i] = 224
		}
	}
	return out
}

func unbatchable(m *graph.Model, why string) error {
	return driver.Errorf(driver.ErrUnsupported, "batch: model %q cannot be batched: %s", m.Name, why)
}

package batch

import (
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
)

// batchModels returns copies of m with axis 0 of every input set to 1
// (single) and to n (batched; nil when n is 1), after checking that axis 0
// is the batch: every input's axis 0 is 1 or dynamic and its other axes
// are static, and every output has the same shape in both copies except
// axis 0, which is 1 and n. Shape inference cannot prove that no op mixes
// samples, but it catches what breaks batching in practice: an input
// without a batch axis, a Reshape or reduction that folds the batch into
// another axis, dynamic image sizes a batch of one shape cannot hold. The
// error wraps driver.ErrUnsupported and names the input or output.
func batchModels(m *graph.Model, n int) (single, batched *graph.Model, err error) {
	if len(m.Parameters) == 0 {
		return nil, nil, unbatchable(m, "it has no inputs")
	}
	for _, p := range m.Parameters {
		s := p.Outputs[0].Shape
		if !s.RankKnown || len(s.Dims) == 0 {
			return nil, nil, unbatchable(m, fmt.Sprintf("input %q has shape %v: no axis 0 to batch on", p.Name, s))
		}
		if d := s.Dims[0]; d.IsStatic() && d.Size != 1 {
			return nil, nil, unbatchable(m, fmt.Sprintf("input %q has shape %v: axis 0 is %d, want 1 or dynamic (the batch)", p.Name, s, d.Size))
		}
		for i, d := range s.Dims[1:] {
			if !d.IsStatic() {
				return nil, nil, unbatchable(m, fmt.Sprintf("input %q has shape %v: axis %d is dynamic; a batch needs one shape for all its requests (fix the input's shape before compiling)", p.Name, s, i+1))
			}
		}
	}
	if single, err = withBatch(m, 1); err != nil {
		return nil, nil, err
	}
	for _, r := range single.Results {
		s := r.Outputs[0].Shape
		if !s.IsStatic() || len(s.Dims) == 0 || s.Dims[0].Size != 1 {
			return nil, nil, unbatchable(m, fmt.Sprintf("output %q has shape %v at batch 1: want a static shape with 1 on axis 0", r.Name, s))
		}
	}
	if n == 1 {
		return single, nil, nil
	}
	if batched, err = withBatch(m, n); err != nil {
		return nil, nil, err
	}
	for i, r := range batched.Results {
		one, many := single.Results[i].Outputs[0].Shape, r.Outputs[0].Shape
		ok := many.IsStatic() && len(many.Dims) == len(one.Dims) && many.Dims[0].Size == int64(n)
		for d := 1; ok && d < len(one.Dims); d++ {
			ok = many.Dims[d].Size == one.Dims[d].Size
		}
		if !ok {
			return nil, nil, unbatchable(m, fmt.Sprintf("output %q has shape %v at batch 1 but %v at batch %d: its axis 0 is not the batch (an op folds the batch into another axis)", r.Name, one, many, n))
		}
	}
	return single, batched, nil
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

func unbatchable(m *graph.Model, why string) error {
	return driver.Errorf(driver.ErrUnsupported, "batch: model %q cannot be batched: %s", m.Name, why)
}

package cpufallback

import (
	"errors"
	"fmt"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// The host memory budget (MAX_HOST_MEMORY) of one inference: the bytes of
// the tensors it holds at once — the model's constants, its inputs and the
// values the plan keeps alive, not the process's memory — may not exceed
// it. compile checks the peak when every shape is static; an inference
// whose shapes come from its inputs is checked before anything runs, with
// the shapes inferred for those inputs (peakFor), so that a refusal costs
// no large allocation. Values whose shape only their computation decides
// (NonZero's) are checked as they appear, and tensor.New refuses any
// single tensor over tensor.AllocLimit before it is made.

// exhausted is the error of a node whose output takes the budget over.
func exhausted(model string, n *graph.Node, out tensor.Shape, typ tensor.ElementType, bytes, live, max int64) error {
	return driver.Errorf(driver.ErrResourceExhausted,
		"cpu: %q: node %q (%s): its output %v%v takes %s, and the inference would hold %s, over MAX_HOST_MEMORY=%s; raise MAX_HOST_MEMORY or feed smaller inputs",
		model, n.Name, n.OpType, typ, out, tensor.FormatBytes(bytes), tensor.FormatBytes(live), tensor.FormatBytes(max))
}

// shapeOf returns the static shape of the value at o, or false when it
// is not known.
type shapeOf func(o graph.Output) (tensor.Shape, bool)

// staticShapes is shapeOf over the compiled graph's own shapes.
func staticShapes(o graph.Output) (tensor.Shape, bool) {
	return o.Node.Outputs[o.Index].Shape.ToShape()
}

// checkPeak walks the plan with the shapes shape gives and fails when the
// live bytes exceed max at some step. A value of unknown shape counts as
// nothing (the inference checks it when it appears); complete reports
// that every shape was known.
func (c *CompiledModel) checkPeak(max int64, shape shapeOf) (complete bool, err error) {
	name := c.model.Name
	size := make([]int64, c.numSlots)
	var live int64
	for _, v := range c.consts {
		live += v.ByteSize()
	}
	complete = true
	for si := range c.steps {
		st := &c.steps[si]
		if st.node.OpType == graph.OpConstant || st.node.OpType == graph.OpResult {
			continue
		}
		for i, slot := range st.out {
			o := st.node.Out(i)
			s, ok := shape(o)
			if !ok || o.Kind() != tensor.KindTensor { // a sequence's length is not in its port
				complete = false
				continue
			}
			t := st.node.Outputs[i].Type
			b, fits := s.Bytes(t)
			if !fits {
				return false, driver.Errorf(driver.ErrResourceExhausted, "cpu: %q: node %q (%s): its output %v%v has more bytes than int64 counts",
					name, st.node.Name, st.node.OpType, t, s)
			}
			size[slot] = b
			live += b
			if live > max {
				return false, exhausted(name, st.node, s, t, b, live, max)
			}
		}
		for _, slot := range st.free {
			if !isResultInput(c, slot) {
				live -= size[slot]
			}
		}
	}
	return complete, nil
}

// peakFor checks, before an inference of these inputs runs, that the
// model's shapes for them fit (else an error naming the input, as every
// device words it: graph.InputShapeError) and that the plan's peak for
// them fits MAX_HOST_MEMORY. Verdicts are cached per input shapes (and
// the values of inputs that decide shapes). A compiled model whose shapes
// are all static was checked at compile time and skips this, as does an
// inference of sequences or optionals.
func (c *CompiledModel) peakFor(inputs []*tensor.Tensor) error {
	if c.staticPeak {
		return nil
	}
	for _, t := range inputs {
		if t.Kind() != tensor.KindTensor {
			// A sequence's or optional's tensors have their own shapes:
			// the budget is checked as values appear (execute).
			return nil
		}
	}
	shapes := make([]tensor.Shape, len(inputs))
	values := make([]*tensor.Tensor, len(inputs))
	var key strings.Builder
	for i, t := range inputs {
		shapes[i] = t.Shape()
		fmt.Fprint(&key, shapes[i])
		if c.shapeParam[i] {
			values[i] = t.Contiguous()
			fmt.Fprint(&key, "=", values[i].Float64s())
		}
		key.WriteByte(';')
	}
	return c.peaks.Check(key.String(), func() error { return c.checkFor(shapes, values) })
}

// checkFor is peakFor's check, uncached.
func (c *CompiledModel) checkFor(shapes []tensor.Shape, values []*tensor.Tensor) error {
	m, err := c.model.FitInputs(shapes, values)
	if err != nil {
		return driver.Errorf(driver.ErrInvalidArgument, "cpu: infer %q: %w", c.model.Name, err)
	}
	nodes, err := m.Nodes()
	if err != nil {
		return driver.Errorf(driver.ErrInvalidArgument, "cpu: infer %q: %w", c.model.Name, err)
	}
	byName := make(map[string]*graph.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	_, err = c.checkPeak(c.maxHost, func(o graph.Output) (tensor.Shape, bool) {
		n := byName[o.Node.Name]
		if n == nil || o.Index >= len(n.Outputs) {
			return nil, false
		}
		return n.Outputs[o.Index].Shape.ToShape()
	})
	return err
}

// shapeParams reports, per input of model, whether its value decides
// shapes: every use of it is an input the ops read on the host (a
// Reshape's shape, a Range's limit), so that peakFor infers shapes with
// its value.
func shapeParams(model *graph.Model) []bool {
	out := make([]bool, len(model.Parameters))
	cons, err := model.Consumers()
	if err != nil {
		return out
	}
	for i, prm := range model.Parameters {
		uses := cons[prm.Out(0)]
		host := len(uses) > 0
		for _, in := range uses {
			if in.Node.OpType != graph.OpResult && !graph.IsHostInput(in.Node, in.Index) {
				host = false
			}
		}
		out[i] = host
	}
	return out
}

// stepError turns a kernel's error into the inference's: a tensor over
// tensor.AllocLimit is ErrResourceExhausted naming the node.
func stepError(model string, st *step, err error) error {
	if errors.Is(err, tensor.ErrTooLarge) {
		return driver.Errorf(driver.ErrResourceExhausted, "cpu: infer %q: %w; feed smaller inputs", model, err)
	}
	return driver.Errorf(driver.ErrInvalidArgument, "cpu: infer %q: %w", model, err)
}

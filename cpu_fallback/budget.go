package cpufallback

import (
	"errors"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// The host memory budget (MAX_HOST_MEMORY) of one inference: the bytes of
// the tensors it holds at once — the model's constants, its inputs and the
// values the plan keeps alive — may not exceed it. compile checks the peak
// when every shape is static; an inference whose shapes come from its
// inputs is checked as each kernel's outputs appear, and tensor.New
// refuses any single tensor over tensor.AllocLimit before it is made.

// exhausted is the error of a node whose output takes the budget over.
func exhausted(model string, n *graph.Node, out tensor.Shape, typ tensor.ElementType, bytes, live, max int64) error {
	return driver.Errorf(driver.ErrResourceExhausted,
		"cpu: %q: node %q (%s): its output %v%v takes %s, and the inference would hold %s, over MAX_HOST_MEMORY=%s; raise MAX_HOST_MEMORY or feed smaller inputs",
		model, n.Name, n.OpType, typ, out, tensor.FormatBytes(bytes), tensor.FormatBytes(live), tensor.FormatBytes(max))
}

// staticBytes returns the size of the value at o when its shape is static;
// ok is false when it is not (it depends on the inputs). A size that
// overflows is an error.
func staticBytes(model string, o graph.Output) (n int64, ok bool, err error) {
	s, static := o.Node.Outputs[o.Index].Shape.ToShape()
	if !static || o.Kind() != tensor.KindTensor { // a sequence's length is not in its port
		return 0, false, nil
	}
	t := o.Node.Outputs[o.Index].Type
	b, fits := s.Bytes(t)
	if !fits {
		return 0, false, driver.Errorf(driver.ErrResourceExhausted, "cpu: %q: node %q (%s): its output %v%v has more bytes than int64 counts",
			model, o.Node.Name, o.Node.OpType, t, s)
	}
	return b, true, nil
}

// checkStaticPeak walks the plan with the static shapes and fails when the
// live bytes exceed max at some step; a plan with a dynamic shape is left
// to the inference.
func (c *CompiledModel) checkStaticPeak(max int64) error {
	name := c.model.Name
	size := make([]int64, c.numSlots)
	var live int64
	for _, v := range c.consts {
		live += v.ByteSize()
	}
	for si := range c.steps {
		st := &c.steps[si]
		if st.node.OpType == graph.OpConstant || st.node.OpType == graph.OpResult {
			continue
		}
		for i, slot := range st.out {
			b, ok, err := staticBytes(name, st.node.Out(i))
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
			size[slot] = b
			live += b
			if live > max {
				s, _ := st.node.Outputs[i].Shape.ToShape()
				return exhausted(name, st.node, s, st.node.Outputs[i].Type, b, live, max)
			}
		}
		for _, slot := range st.free {
			if !isResultInput(c, slot) {
				live -= size[slot]
			}
		}
	}
	return nil
}

// stepError turns a kernel's error into the inference's: a tensor over
// tensor.AllocLimit is ErrResourceExhausted naming the node.
func stepError(model string, st *step, err error) error {
	if errors.Is(err, tensor.ErrTooLarge) {
		return driver.Errorf(driver.ErrResourceExhausted, "cpu: infer %q: %w; feed smaller inputs", model, err)
	}
	return driver.Errorf(driver.ErrInvalidArgument, "cpu: infer %q: %w", model, err)
}

package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// The memory a plan may ask for, checked while it is built (at compile for
// static shapes, at the first inference of new input shapes otherwise), so
// that no buffer is requested that cannot be had: every device buffer fits
// CL_DEVICE_MAX_MEM_ALLOC_SIZE, the plan's buffers and uploads together
// fit CL_DEVICE_GLOBAL_MEM_SIZE, and nothing over tensor.AllocLimit is
// computed on the host. Exceeding one is an error wrapping
// driver.ErrResourceExhausted naming the node, the shape and the bytes.

// foldLimit is the largest value the planner computes on the host and
// uploads when the op also has a GPU kernel: larger ones run on the device
// (OpenVINO also leaves huge constant subgraphs unfolded).
const foldLimit = 16 << 20

// checkOutput fails when output o of n, of shape s, cannot be one device
// buffer.
func (b *builder) checkOutput(n *graph.Node, o graph.Port, s tensor.Shape) error {
	d := b.c.dev
	bytes, ok := s.Bytes(o.Type)
	if !ok {
		return driver.Errorf(driver.ErrResourceExhausted, "gpu: node %q (%s): its output %v%v has more bytes than int64 counts", n.Name, n.OpType, o.Type, s)
	}
	if d.maxAlloc > 0 && bytes > d.maxAlloc {
		return driver.Errorf(driver.ErrResourceExhausted,
			"gpu: node %q (%s): its output %v%v takes %s, more than the largest buffer %s allows (%s, CL_DEVICE_MAX_MEM_ALLOC_SIZE); feed smaller inputs",
			n.Name, n.OpType, o.Type, s, tensor.FormatBytes(bytes), d.name(), tensor.FormatBytes(d.maxAlloc))
	}
	return nil
}

// foldSize decides whether the planner computes n on the host: false when
// its static outputs are over foldLimit and the device has a kernel for
// it; an error when they are over what the host may allocate.
func (b *builder) foldSize(n *graph.Node) (fold bool, err error) {
	var total int64
	for _, o := range n.Outputs {
		s, static := o.Shape.ToShape()
		if !static {
			return true, nil // known only once computed; tensor.New guards it
		}
		bytes, ok := s.Bytes(o.Type)
		if !ok || bytes > tensor.AllocLimit() {
			return false, driver.Errorf(driver.ErrResourceExhausted,
				"gpu: node %q (%s): its output %v%v takes %s on the host, over the %s a tensor may take (half the memory, tensor.AllocLimit)",
				n.Name, n.OpType, o.Type, s, bytesOrOverflow(bytes, ok), tensor.FormatBytes(tensor.AllocLimit()))
		}
		total += bytes
	}
	if total > foldLimit {
		if l, ok := lowerings()[n.OpType]; ok && l.lower != nil {
			return false, nil
		}
	}
	return true, nil
}

func bytesOrOverflow(n int64, ok bool) string {
	if !ok {
		return "more bytes than int64 counts"
	}
	return tensor.FormatBytes(n)
}

// checkTotal fails when the plan's activation buffers and uploads do not
// fit the device's memory.
func (b *builder) checkTotal() error {
	d := b.c.dev
	if d.memSize <= 0 {
		return nil
	}
	var acts, uploads int64
	for _, s := range b.pl.bufSizes {
		acts += int64(s)
	}
	for i := range b.pl.values {
		if v := &b.pl.values[i]; v.host != nil && v.root == i && i >= b.pl.base {
			uploads += int64(v.bytes)
		}
	}
	if acts+uploads > d.memSize {
		return driver.Errorf(driver.ErrResourceExhausted,
			"gpu: model %q: the plan for these input shapes needs %s of device memory (activations %s, weights and constants %s), more than %s has (%s, CL_DEVICE_GLOBAL_MEM_SIZE); feed smaller inputs",
			b.c.model.Name, tensor.FormatBytes(acts+uploads), tensor.FormatBytes(acts), tensor.FormatBytes(uploads), d.name(), tensor.FormatBytes(d.memSize))
	}
	return nil
}

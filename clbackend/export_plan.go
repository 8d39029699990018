package clbackend

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"unsafe"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/wire"
	"github.com/clinfer/clinfer/tensor"
)

// planSection is the blob section holding the launch plan of the static
// input shapes: its values and their liveness, the activation buffer plan,
// every launch (kernel, build options, arguments, work sizes), the kernel
// variant choices and the host tensors the planner derived (weights
// repacked for a kernel, folded constants). ImportModel maps it back
// instead of planning again (IS-Net medium: 1.1-2.6 s of graph walks,
// variant choice and weight transforms); a record it cannot use (another
// record version, an inconsistent one, a configuration or tuning cache that
// would plan differently) is ignored by name and the model is planned.
const planSection = "plan"

// planRecordVersion is the version of the plan section's encoding; a
// record of another version is not used.
const planRecordVersion = 4

// Host tensor forms of a plan value in the record.
const (
	hostNone     = 0 // a device value
	hostConstant = 1 // the tensor of the graph's Constant of that name
	hostData     = 2 // the bytes follow
	// hostDropped: a value no launch reads (a weight the planner
	// repacked, in its form before that; a value an import left out) is
	// left out; the imported plan never needs it.
	hostDropped = 3
)

// Kernel argument tags of the record: a value index (slotArg), a
// __local size, or a scalar tagged with its reflect.Kind.
const (
	argSlot  = 0
	argLocal = 0xff
)

// argTypes are the scalar types of kernel arguments (cl.Kernel.SetArg),
// by kind.
var argTypes = func() map[reflect.Kind]reflect.Type {
	m := map[reflect.Kind]reflect.Type{}
	for _, v := range []any{int8(0), uint8(0), int16(0), uint16(0), int32(0), uint32(0), int64(0), uint64(0), int(0), uint(0), float32(0), float64(0)} {
		m[reflect.TypeOf(v).Kind()] = reflect.TypeOf(v)
	}
	return m
}()

// recordAlign is the alignment of the data of host values in the record,
// from the start of the section's data.
const recordAlign = 128

// recordBase is where the record starts in its section's data: after the
// section name.
const recordBase = 1 + len(planSection)

// errNoRecord says why a plan is not recorded: the import plans it.
var errNoRecord = errors.New("plan not recordable")

// planRecord encodes the static plan for the blob, or returns an error
// wrapping errNoRecord for a plan the record does not cover (control flow,
// sizes read back, a launch of a node the graph does not have). consts
// names the graph's Constants whose tensors the record refers to instead
// of holding their bytes: the only Constants an import of the record reads.
// The record is rec's parts one after another: the bytes of the host
// values it holds are parts of their own, the plan's tensors themselves,
// not copied (IS-Net medium: 261 MB of packed weights, which the single
// buffer this was, grown past its estimate by the launches after them,
// copied into 580 MB more: 2-7 s of every cold compile's Close on a
// machine where fresh memory costs ~8 ms per MB to fault in).
func (c *CompiledModel) planRecord() (rec [][]byte, consts map[string]bool, err error) {
	pl := c.static
	if pl == nil || pl.control || pl.prog != nil || pl.cont != nil || pl.parent != nil || len(pl.loops) > 0 {
		return nil, nil, errNoRecord
	}
	byName, err := c.nodesByName()
	if err != nil {
		return nil, nil, err
	}
	consts = map[string]bool{}
	used := pl.deviceReads()
	var r recordParts
	e := &r.e
	e.U32(planRecordVersion)
	e.Str(pl.key)
	e.Uvarint(uint64(len(pl.values)))
	for _, v := range pl.values {
		e.Byte(byte(v.typ))
		e.Uvarint(uint64(len(v.shape)))
		for _, d := range v.shape {
			e.Varint(d)
		}
		e.Varint(int64(v.bytes))
		e.Str(v.weight)
		for _, x := range []int{v.held, v.root, v.off, v.buf, v.first, v.last} {
			e.Varint(int64(x))
		}
		switch {
		case !used[v.root]:
			// Nothing reads it: neither its data nor its buffer (which an
			// imported plan's left-out values, and the planner's unused
			// roots, do not have) is needed.
			e.Byte(hostDropped)
		case v.host == nil:
			e.Byte(hostNone)
		case v.weight != "" && isGraphConstant(byName[v.weight], v.host):
			e.Byte(hostConstant)
			consts[v.weight] = true
		default:
			h := v.host.Contiguous()
			if h.Kind() != tensor.KindTensor || h.Type() == tensor.String {
				return nil, nil, fmt.Errorf("%w: host value of type %v", errNoRecord, h.Type())
			}
			e.Byte(hostData)
			raw := h.Bytes()
			e.Uvarint(uint64(len(raw)))
			// Zeros up to an address the tensor's elements can be
			// read at in place on import, and a device that shares
			// host memory can use in place (CL_DEVICE_MEM_BASE_ADDR_ALIGN:
			// 128 bytes on POCL): ReadBlob reads a section into one
			// allocation, page-aligned when large; the record follows
			// its name.
			pad := (recordAlign - (recordBase+r.len()+1)%recordAlign) % recordAlign
			e.Byte(byte(pad))
			e.Buf = append(e.Buf, make([]byte, pad)...)
			r.data(raw)
		}
	}
	e.Uvarint(uint64(len(pl.launches)))
	for _, l := range pl.launches {
		if byName[l.node.Name] == nil {
			return nil, nil, fmt.Errorf("%w: launch of node %q, which the graph does not have", errNoRecord, l.node.Name)
		}
		e.Str(l.node.Name)
		src, err := l.kernel.Source()
		if err != nil {
			return nil, nil, fmt.Errorf("%w: node %q: %v", errNoRecord, l.node.Name, err)
		}
		// The program's key names its source: a build of clinfer whose
		// kernel changed does not run the record's arguments on it.
		for _, s := range []string{l.kernel.Name, l.kernel.File, l.kernel.Entry, l.kernel.Options, l.kernel.Generated, l.options, programKey(c.run, src, l.options)} {
			e.Str(s)
		}
		e.Uvarint(uint64(len(l.args)))
		for _, a := range l.args {
			if err := encodeArg(e, a); err != nil {
				return nil, nil, fmt.Errorf("%w: node %q: %v", errNoRecord, l.node.Name, err)
			}
		}
		e.Varint(l.n)
		encodeInts(e, l.global)
		e.Byte(boolByte(l.local != nil))
		encodeInts(e, l.local)
		e.Varint(l.bytes)
	}
	encodeInts(e, pl.params)
	e.Uvarint(uint64(len(pl.hostIn)))
	for _, h := range pl.hostIn {
		e.Byte(boolByte(h))
	}
	encodeInts(e, pl.results)
	encodeInts(e, pl.bufSizes)
	e.Varint(int64(pl.seed))
	e.Varint(pl.planned)
	e.Varint(pl.naive)
	encodeByName(e, pl.impl, func(s string) { e.Str(s) })
	encodeByName(e, pl.order, func(i int) { e.Varint(int64(i)) })
	encodeByName(e, pl.variants, func(s string) { e.Str(s) })
	e.Uvarint(uint64(len(pl.choices)))
	for _, ch := range pl.choices {
		for _, s := range []string{ch.Node, ch.Op, ch.Key, ch.Variant, ch.Heuristic, ch.Source} {
			e.Str(s)
		}
		e.F64(ch.Ms)
		e.F64(ch.HeuristicMs)
		e.Varint(int64(ch.Tried))
		e.Varint(int64(ch.Refused))
		e.Uvarint(uint64(len(ch.Refusals)))
		for _, s := range ch.Refusals {
			e.Str(s)
		}
	}
	return r.done(), consts, nil
}

// recordParts is a plan record in parts: encoded fields, and the bytes of
// host values as they are.
type recordParts struct {
	parts [][]byte
	e     wire.Encoder // the fields after the last part
	n     int          // bytes in parts
}

// len is the record's length so far.
func (r *recordParts) len() int { return r.n + len(r.e.Buf) }

// data appends raw after the fields encoded so far, without copying it.
func (r *recordParts) data(raw []byte) {
	r.parts = append(r.parts, r.e.Buf, raw)
	r.n += len(r.e.Buf) + len(raw)
	r.e.Buf = nil
}

// done returns the record's parts.
func (r *recordParts) done() [][]byte { return append(r.parts, r.e.Buf) }

// deviceReads returns the root values a straight-line plan reads on the
// device or returns: its launches' arguments, its inputs, outputs and
// seed.
func (pl *plan) deviceReads() map[int]bool {
	used := map[int]bool{}
	mark := func(v int) {
		if v >= 0 && v < len(pl.values) {
			used[pl.values[v].root] = true
		}
	}
	for _, l := range pl.launches {
		for _, a := range l.args {
			if s, ok := a.(slotArg); ok {
				mark(int(s))
			}
		}
	}
	for _, v := range pl.params {
		mark(v)
	}
	for _, v := range pl.results {
		mark(v)
	}
	mark(pl.seed - 1)
	return used
}

// nodesByName maps the names of the compiled model's nodes to them.
func (c *CompiledModel) nodesByName() (map[string]*graph.Node, error) {
	nodes, err := c.model.Nodes()
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*graph.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	return byName, nil
}

// isGraphConstant reports whether host holds the tensor of Constant node n
// (the plan's model is a specialised clone: the same bytes, usually not
// the same memory), so the record names n instead of copying its bytes.
func isGraphConstant(n *graph.Node, host *tensor.Tensor) bool {
	if n == nil || n.OpType != graph.OpConstant || n.Value == nil {
		return false
	}
	g := n.Value.Contiguous()
	if g.Type() != host.Type() || !g.Shape().Equal(host.Shape()) || !host.IsContiguous() {
		return false
	}
	a, b := g.Bytes(), host.Bytes()
	return len(a) == len(b) && (len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b) || bytes.Equal(a, b))
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func encodeInts(e *wire.Encoder, v []int) {
	e.Uvarint(uint64(len(v)))
	for _, x := range v {
		e.Varint(int64(x))
	}
}

// encodeByName writes a per-node map by node name, sorted.
func encodeByName[V any](e *wire.Encoder, m map[*graph.Node]V, val func(V)) {
	byName := make(map[string]V, len(m))
	for n, v := range m {
		byName[n.Name] = v
	}
	e.Uvarint(uint64(len(byName)))
	for _, k := range slices.Sorted(maps.Keys(byName)) {
		e.Str(k)
		val(byName[k])
	}
}

func encodeArg(e *wire.Encoder, a any) error {
	switch a := a.(type) {
	case slotArg:
		e.Byte(argSlot)
		e.Varint(int64(a))
		return nil
	case cl.LocalBuffer:
		e.Byte(argLocal)
		e.Varint(int64(a))
		return nil
	}
	v := reflect.ValueOf(a)
	if argTypes[v.Kind()] != v.Type() {
		return fmt.Errorf("kernel argument of type %T", a)
	}
	e.Byte(byte(v.Kind()))
	switch {
	case v.CanInt():
		e.Varint(v.Int())
	case v.CanUint():
		e.Uvarint(v.Uint())
	default:
		e.F64(v.Float()) // a float32 goes through float64 exactly
	}
	return nil
}

// decodeByName reads a per-node map written by encodeByName, keyed by the
// nodes of byName; an unknown name is an error.
// withPlanRecord hands compile the plan section of a blob being imported.
// restorePlan rebuilds the static plan of key from a record planRecord
// wrote: it decodes and checks every index, takes the programs from the
// program cache (the blob's binaries, preloaded), the weights from the
// graph's Constants and the record, and uploads what the plan uploads.
// Any error (a record of another version or shapes, inconsistent indices,
// a choice the tuning cache would now make differently) wraps
// driver.ErrCorrupt or errStaleRecord and leaves nothing allocated; the
// caller plans the model instead.
// errStaleRecord marks a plan record that is sound but would not be the
// plan a compile makes now.
// hostTensor is a tensor over raw (the blob's memory) when it is aligned
// for t, else a copy.
// checkRecord checks that every index of a decoded plan is in range, so
// a request never reads past a slice or binds the wrong buffer.
// checkChoices returns an error wrapping errStaleRecord when the tuning
// cache, the shipped tuning database or GPU_KERNEL_VARIANTS would now
// choose a variant the record did not: a compile would plan differently.
// restoreOrBuild returns the plan of the static input shapes: restored
// from the plan record of the blob being imported (ctx) when it is sound
// and current, else planned. A damaged record is reported on stderr; a
// stale one (another record version, tuning records that changed) is
// replaced silently.

package clbackend

import (
	"errors"
	"fmt"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
)

// implInPlace is the runtime model's IMPL_TYPE of a Concat whose inputs
// were all written in place into its output: it launches nothing.
const implInPlace = "in_place"

// concatInPlace plans the inputs of Concat n (along axis ax) that can be
// written straight into their block of its output, as OpenVINO's and ONNX
// Runtime's memory planners place a concatenation's inputs, and returns
// which inputs it placed (the others are copied as before). An input is
// a consecutive block of the output when every axis before ax has size 1
// (N = 1 NCHW along channels: a U-Net's skip connections); its device
// memory then becomes that block (value.off: the producer, and every
// reader, bind it as a sub-buffer of the output's buffer), so the
// producer writes it there and the Concat moves nothing. The output's
// buffer lives from its first input's producer on (planBuffers follows
// the roots), in place of the inputs' own buffers.
//
// An input stays a copy when its memory is not wholly its own (a view of
// a larger value, or already placed: in another Concat, or twice in this
// one), when it is a model input, a result, a constant, a request's
// state or an earlier plan's value, or when its block's origin is not a
// multiple of the device's sub-buffer alignment
// (CL_DEVICE_MEM_BASE_ADDR_ALIGN). Nothing is placed in a model with
// control flow, whose programs copy between values by root.
func (b *builder) concatInPlace(n *graph.Node, ax int64) map[int]bool {
	y := b.out(n, 0)
	yv := b.val(y)
	align := b.c.dev.subAlign
	os := yv.shape
	if align <= 0 || yv.root != y || yv.off != 0 || y < b.pl.base || yv.host != nil || yv.held > 0 || b.pl.control || b.hasBodies() {
		return nil
	}
	for _, d := range os[:ax] {
		if d != 1 {
			return nil
		}
	}
	esize, ok := elemBytes(yv)
	if !ok {
		return nil
	}
	fixed := map[int]bool{} // roots that must keep their own memory
	for _, v := range b.pl.params {
		fixed[b.val(v).root] = true
	}
	for _, r := range b.model.Results {
		if len(r.Inputs) == 1 {
			if v, ok := b.of[r.Inputs[0]]; ok {
				fixed[b.val(v).root] = true
			}
		}
	}
	block := int64(esize)
	for _, d := range os[ax+1:] {
		block *= d
	}
	placed := map[int]bool{}
	var at int64
	for i := range n.Inputs {
		x := b.in(n, i)
		if x < 0 {
			continue
		}
		xv := b.val(x)
		off := at * block
		at += xv.shape[ax]
		r := xv.root
		rv := b.val(r)
		switch {
		case xv.bytes == 0, xv.off != 0, rv.off != 0, r == y, fixed[r], rv.host != nil, rv.held > 0, r < b.pl.base,
			rv.bytes != xv.bytes, xv.typ != yv.typ, off%int64(align) != 0:
			continue
		}
		for w := b.pl.base; w < len(b.pl.values); w++ {
			if wv := &b.pl.values[w]; wv.root == r {
				wv.root, wv.off = y, wv.off+int(off)
			}
		}
		placed[i] = true
	}
	if len(placed) == len(n.Inputs) {
		b.pl.impl[n] = implInPlace
	}
	return placed
}

// gatherView makes Gather's output y (of x, along axis ax, inner
// elements per index) a view of x's memory instead of a launch, and
// reports whether it did: one index known at plan time, every axis before
// ax of size 1 (so the block it selects is contiguous), at an origin that
// is a multiple of the device's sub-buffer alignment, of a device value of
// this plan with no control flow (as concatInPlace). A request binds the
// view as a sub-buffer, of an activation buffer or of its state buffer
// (Silero VAD's two Gathers of its LSTM state: nothing writes a state
// buffer but the next state's copy after every launch, and writeState
// between inferences).
func (b *builder) gatherView(x, idx, y int, ax, inner int64) bool {
	k, ok := b.hostInts(idx)
	xv := b.val(x)
	if !ok || len(k) != 1 {
		return false
	}
	if k[0] < 0 {
		k[0] += xv.shape[ax]
	}
	if k[0] < 0 || k[0] >= xv.shape[ax] {
		return false
	}
	return b.blockView(x, y, ax, k[0], inner)
}

// blockView makes y a view of x's memory from index start along axis ax
// (inner elements per index) instead of a copy, and reports whether it
// did: every axis of x before ax of size 1 (so that y, the indices from
// start on that it holds, is a contiguous block of x), y of x's element
// type and bytes within x, at an origin that is a multiple of the
// device's sub-buffer alignment, of a device value of this plan with no
// control flow (as concatInPlace). A request binds the view as a
// sub-buffer, of an activation buffer or of its state buffer (gatherView).
func (b *builder) blockView(x, y int, ax, start, inner int64) bool {
	xv, yv := b.val(x), b.val(y)
	align := b.c.dev.subAlign
	if align <= 0 || b.pl.control || b.hasBodies() {
		return false
	}
	for _, d := range xv.shape[:ax] {
		if d != 1 {
			return false
		}
	}
	esize, ok := elemBytes(xv)
	rv := b.val(xv.root)
	if !ok || rv.host != nil || xv.root < b.pl.base || yv.root != y || yv.typ != xv.typ {
		return false
	}
	at := start * inner * int64(esize)
	off := int64(xv.off) + at
	if off%int64(align) != 0 || at+int64(yv.bytes) > int64(xv.bytes) {
		return false
	}
	yv.root, yv.off = xv.root, int(off)
	return true
}

// elemBytes is the size of one element of v (false for a type of less
// than a byte, or an empty value).
func elemBytes(v *value) (int, bool) {
	ne := v.shape.NumElements()
	if ne <= 0 || int64(v.bytes)%ne != 0 || int64(v.bytes)/ne == 0 {
		return 0, false
	}
	return int(int64(v.bytes) / ne), true
}

// hasBodies reports whether the planned model has control flow (a node
// with bodies other than a KernelFusion's: If, Loop, Scan), read once per
// plan. An If of a plan per outcome of host conditions (plan_conds.go)
// whose branches have no control flow of their own is not: the plan takes
// its branch inline, straight-line (Silero VAD's sample-rate If, whose
// Concat of the next state then places the LSTM's two states in place).
func (b *builder) hasBodies() bool {
	if b.bodies == 0 {
		b.bodies = 1
		nodes, err := b.model.Nodes()
		if err != nil {
			b.bodies = 2
		}
		for _, n := range nodes {
			if n.HasBodies() && n.OpType != graph.OpKernelFusion && !b.straightIf(n) {
				b.bodies = 2
			}
		}
	}
	return b.bodies == 2
}

// straightIf reports whether n is an If the plan takes one branch of at
// plan time because its outcome is forced (b.forced), and that branch has
// no control flow of its own.
func (b *builder) straightIf(n *graph.Node) bool {
	then, ok := b.forced[n.Name]
	if !ok || n.OpType != graph.OpIf {
		return false
	}
	body, els, err := graph.IfBranches(n)
	if err != nil {
		return false
	}
	if !then {
		body = els
	}
	nodes, err := body.Nodes()
	if err != nil {
		return false
	}
	for _, m := range nodes {
		if m.HasBodies() && m.OpType != graph.OpKernelFusion {
			return false
		}
	}
	return true
}

// view is a sub-buffer of a plan's activation buffer: the buffer, the
// origin and the size in bytes; a negative buffer -(i+1) is the request's
// state buffer of model input i (gatherView).
type view struct{ buf, off, size int }

// makeViews creates the sub-buffers of st's activation buffers, and of the
// request's state buffers (held), that the values of pl at an offset in
// their root are bound as (see value.off).
func (st *planState) makeViews(pl *plan, held []*cl.MemObject) error {
	for _, v := range pl.values {
		if v.off == 0 || v.root < pl.base {
			continue
		}
		rv := pl.values[v.root]
		k := view{rv.buf, v.off, max(v.bytes, 1)}
		if rv.held > 0 {
			k.buf = -rv.held // of the request's state buffer (gatherView)
		}
		if _, ok := st.views[k]; ok {
			continue
		}
		var parent *cl.MemObject
		if rv.held > 0 {
			parent = held[rv.held-1]
		} else {
			parent = st.bufs[k.buf]
		}
		m, err := parent.CreateSubBuffer(0, k.off, k.size)
		if err != nil {
			return fmt.Errorf("%d bytes at %d of buffer %d: %w", k.size, k.off, k.buf, err)
		}
		if st.views == nil {
			st.views = map[view]*cl.MemObject{}
		}
		st.views[k] = m
	}
	return nil
}

// closeViews releases the sub-buffers makeViews made.
func (st *planState) closeViews() error {
	var errs []error
	for _, m := range st.views {
		errs = append(errs, m.Close())
	}
	st.views = nil
	return errors.Join(errs...)
}

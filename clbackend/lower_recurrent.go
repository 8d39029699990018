package clbackend

import (
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// recurrentLowerings are LSTM, GRU and RNN: per direction batch, one GEMM
// of every step's input by W up front, then per step one GEMM of the
// state by R for every direction, gate and batch entry, and one fused
// kernel of the gates (recurrent_cell.cl); GRU without
// linear_before_reset needs its reset gate before the product of its h
// rows, so it runs two GEMMs and two kernels per step. Constant weights are
// laid out at plan time as the GEMM wants them (W^T and R^T per
// direction), once per compiled model.
func recurrentLowerings() map[string]lowering {
	return map[string]lowering{"LSTM": {lower: lowerRecurrent}, "GRU": {lower: lowerRecurrent}, "RNN": {lower: lowerRecurrent}}
}

// recActivationCodes are the codes of recurrent_cell.cl's recActivation.
var recActivationCodes = map[string]int64{
	"sigmoid": 0, "tanh": 1, "relu": 2, "affine": 3, "leakyrelu": 4, "thresholdedrelu": 5,
	"scaledtanh": 6, "hardsigmoid": 7, "elu": 8, "softsign": 9, "softplus": 10,
}

// recWeights returns weight input i ([D, rows, cols]) as the B operand
// of per-direction GEMMs by its transpose: a host weight laid out [D,
// cols, rows] (contiguous columns), a device one read with strides.
func (b *builder) recWeights(v int, d, rows, cols int64) (int, gemmGeom) {
	if b.val(v).host == nil {
		return v, gemmGeom{bK: 1, bCol: cols, bBatch: []int64{rows * cols}}
	}
	src := b.hostF32(v)
	dst := make([]float32, len(src))
	for k := int64(0); k < d; k++ {
		for r := int64(0); r < rows; r++ {
			for c := int64(0); c < cols; c++ {
				dst[k*rows*cols+c*rows+r] = src[k*rows*cols+r*cols+c]
			}
		}
	}
	return b.layout(v, dst, fmt.Sprintf("#recT%dx%dx%d", d, rows, cols)), gemmGeom{bK: rows, bCol: 1, bBatch: []int64{rows * cols}}
}

// recHost returns input i of n, or a host constant of f32 zeros of shape s
// when it is omitted.
func (b *builder) recHost(n *graph.Node, i int, s tensor.Shape) int {
	if v := b.in(n, i); v >= 0 {
		return v
	}
	z, _ := tensor.New(tensor.F32, s)
	return b.newValue(tensor.F32, s, z)
}

// recState copies a [D, N, H] state input (layout 1: [N, D, H]) into the
// state value st, or zeros when it is omitted.
func (b *builder) recState(n *graph.Node, i int, st int, d, nb, h int64, batchFirst bool) {
	src := b.recHost(n, i, tensor.Shape{d, nb, h})
	if b.in(n, i) < 0 || !batchFirst || d == 1 {
		b.copyAll(src, st) // the same bytes in either layout
		return
	}
	row := int(h) * 4
	for k := int64(0); k < d; k++ {
		b.ctl(instr{op: opCopy, loop: -1, cond: -1, copy: copySpec{src: src, dst: st, srcOff: int(k) * row, dstOff: int(k*nb) * row,
			bytes: row, rows: int(nb), srcPitch: int(d) * row, dstPitch: row, loop: -1}})
	}
}

// recOutState copies the state value st ([D, N, H]) into output o of n
// (layout 1: [N, D, H]).
func (b *builder) recOutState(n *graph.Node, o, st int, d, nb, h int64, batchFirst bool) {
	if o >= len(n.Outputs) {
		return
	}
	dst := b.out(n, o)
	if !batchFirst || d == 1 {
		b.copyAll(st, dst)
		return
	}
	row := int(h) * 4
	for k := int64(0); k < d; k++ {
		b.ctl(instr{op: opCopy, loop: -1, cond: -1, copy: copySpec{src: st, dst: dst, srcOff: int(k*nb) * row, dstOff: int(k) * row,
			bytes: row, rows: int(nb), srcPitch: row, dstPitch: int(d) * row, loop: -1}})
	}
}

func lowerRecurrent(b *builder, n *graph.Node) error {
	l, err := graph.Recurrent(n)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	for i := range n.Inputs {
		if v := b.in(n, i); v >= 0 && i != 4 && b.val(v).typ != tensor.F32 {
			return errUnsupported(n, "input %d of type %s (the GPU kernels take f32)", i, b.val(v).typ)
		}
	}
	xs := b.val(b.in(n, 0)).shape
	S, N, I := xs[0], xs[1], xs[2]
	if l.BatchFirst {
		S, N = N, S
	}
	D, G, H := int64(l.Directions), int64(l.Gates), l.Hidden
	if H < 0 {
		H = b.val(b.in(n, 1)).shape[1] / G
	}
	GH := G * H
	lens, flags := b.in(n, 4), int64(0)
	if lens >= 0 {
		flags |= 1
		if b.val(lens).typ != tensor.I32 {
			v, ok := b.hostInts(lens)
			if !ok {
				return errUnsupported(n, "sequence_lens of type %s (the GPU kernels take i32)", b.val(lens).typ)
			}
			i32 := make([]int64, len(v))
			copy(i32, v)
			t, _ := tensor.FromI64(tensor.Shape{int64(len(v))}, i32)
			t, _ = t.Convert(tensor.I32)
			lens = b.newValue(tensor.I32, t.Shape(), t)
		}
	} else {
		z, _ := tensor.New(tensor.I32, tensor.Shape{max(N, 1)})
		lens = b.newValue(tensor.I32, z.Shape(), z)
	}
	if n.OpType == "LSTM" && n.Input(7).Valid() {
		flags |= 2
	}
	if l.InputForget {
		flags |= 4
	}
	if l.LinearBeforeReset {
		flags |= 8
	}
	rev := int64(0)
	for d, r := range l.Reverse {
		if r {
			rev |= 1 << d
		}
	}
	params := []float32{l.Clip}
	codes := make([]int64, 6)
	for d, acts := range l.Activations {
		for k := 0; k < 3; k++ {
			a := graph.Activation{Name: "sigmoid"}
			if k < len(acts) {
				a = acts[k]
			}
			codes[3*d+k] = recActivationCodes[a.Name]
			params = append(params, a.Alpha, a.Beta)
		}
	}
	for len(params) < 13 {
		params = append(params, 0)
	}
	pf := b.floats(params)
	bias := b.recHost(n, 3, tensor.Shape{D, 2 * GH})
	peep := -1
	if n.OpType == "LSTM" {
		peep = b.recHost(n, 7, tensor.Shape{D, 3 * H})
	}

	if vw := stepWidth(H, b.profile().vw()); n.OpType == "LSTM" && S == 1 && !l.BatchFirst && b.in(n, 4) < 0 && vw > 0 &&
		b.val(b.in(n, 1)).host != nil && b.val(b.in(n, 2)).host != nil {
		m := b.meta(append([]int64{D, N, H, I, 0, flags, 0, 0, 0, 0, 0, 0, 0}, codes...))
		return b.lstmStep(n, D, N, H, I, vw, bias, peep, m, pf)
	}
	// Every step's input times W, per direction: xw [D, S*N, G*H] in X's
	// row order.
	w, wg := b.recWeights(b.in(n, 1), D, GH, I)
	xw := b.temp(tensor.F32, tensor.Shape{D, S * N, GH})
	g := gemmGeom{M: S * N, N: GH, K: I, aRow: I, aK: 1, bK: wg.bK, bCol: wg.bCol, batch: []int64{D}, aBatch: []int64{0}, bBatch: wg.bBatch}
	if err := b.gemm(n, b.in(n, 0), w, -1, xw, g, 1, 0); err != nil {
		return err
	}
	r, rg := b.recWeights(b.in(n, 2), D, GH, H)
	var rh2 int // GRU's h rows of R^T without linear_before_reset
	var rh2g gemmGeom
	if n.OpType == "GRU" && !l.LinearBeforeReset {
		rh2, rh2g = b.recGRUh(n, D, H)
	}
	st := b.deviceValue(tensor.F32, tensor.Shape{D, N, H})
	b.recState(n, 5, st, D, N, H, l.BatchFirst)
	cst := -1
	if n.OpType == "LSTM" {
		cst = b.deviceValue(tensor.F32, tensor.Shape{D, N, H})
		b.recState(n, 6, cst, D, N, H, l.BatchFirst)
	}
	rh := b.temp(tensor.F32, tensor.Shape{D, N, GH})
	y := b.out(n, 0)
	xwT, xwB := N, int64(1)
	yT, yD, yB := D*N*H, N*H, H
	if l.BatchFirst {
		xwT, xwB = 1, S
		yT, yD, yB = D*H, H, S*D*H
	}
	items := D * N * H
	for s := int64(0); s < S; s++ {
		m := b.meta(append([]int64{D, N, H, S, s, flags, rev, xwT, xwB, S * N * GH, yT, yD, yB}, codes...))
		hg := gemmGeom{M: N, N: GH, K: H, aRow: H, aK: 1, bK: rg.bK, bCol: rg.bCol, batch: []int64{D}, aBatch: []int64{N * H}, bBatch: rg.bBatch}
		if err := b.gemm(n, st, r, -1, rh, hg, 1, 0); err != nil {
			return err
		}
		switch n.OpType {
		case "LSTM":
			err = b.emit(n, "lstm_cell", "", items, slotArg(xw), slotArg(rh), slotArg(bias), slotArg(peep), slotArg(lens), slotArg(st), slotArg(cst), slotArg(y), uint64(items), m, pf)
		case "GRU":
			rhh := rh
			if !l.LinearBeforeReset {
				rst := b.temp(tensor.F32, tensor.Shape{D, N, H})
				rhh = b.temp(tensor.F32, tensor.Shape{D, N, H})
				if err := b.emit(n, "gru_reset", "", items, slotArg(xw), slotArg(rh), slotArg(bias), slotArg(lens), slotArg(st), slotArg(rst), uint64(items), m, pf); err != nil {
					return err
				}
				g2 := gemmGeom{M: N, N: H, K: H, aRow: H, aK: 1, bK: rh2g.bK, bCol: rh2g.bCol, batch: []int64{D}, aBatch: []int64{N * H}, bBatch: rh2g.bBatch}
				if err := b.gemm(n, rst, rh2, -1, rhh, g2, 1, 0); err != nil {
					return err
				}
			}
			err = b.emit(n, "gru_cell", "", items, slotArg(xw), slotArg(rh), slotArg(rhh), slotArg(bias), slotArg(lens), slotArg(st), slotArg(y), uint64(items), m, pf)
		default:
			err = b.emit(n, "rnn_cell", "", items, slotArg(xw), slotArg(rh), slotArg(bias), slotArg(lens), slotArg(st), slotArg(y), uint64(items), m, pf)
		}
		if err != nil {
			return err
		}
	}
	b.recOutState(n, 1, st, D, N, H, l.BatchFirst)
	if cst >= 0 {
		b.recOutState(n, 2, cst, D, N, H, l.BatchFirst)
	}
	return nil
}

// stepWidth is lstm_step's VW for hidden size h on a device whose vectors
// hold vw floats: the widest of 16, 8 and 4, at most vw, that divides h;
// 0 when none does.
func stepWidth(h int64, vw int) int {
	for _, w := range []int{16, 8, 4} {
		if w <= vw && h%int64(w) == 0 {
			return w
		}
	}
	return 0
}

// lstmStep emits a one-step LSTM (layout 0, no sequence_lens, host W and
// R) as one lstm_step launch of vector width vw: W^T and R^T laid out at
// plan time, the initial states read where they are, Y, Y_h and Y_c
// written directly (a temporary for each one the node does not have).
func (b *builder) lstmStep(n *graph.Node, d, nb, h, in int64, vw, bias, peep int, m, pf slotArg) error {
	w := b.stepWeights(b.in(n, 1), d, h, in, int64(vw))
	r := b.stepWeights(b.in(n, 2), d, h, h, int64(vw))
	h0 := b.recHost(n, 5, tensor.Shape{d, nb, h})
	c0 := b.recHost(n, 6, tensor.Shape{d, nb, h})
	outs := make([]int, 3)
	for o := range outs {
		if o < len(n.Outputs) {
			outs[o] = b.out(n, o)
		} else {
			outs[o] = b.temp(tensor.F32, tensor.Shape{d, nb, h})
		}
	}
	items := d * nb * h / int64(vw)
	return b.emit(n, "lstm_step", fmt.Sprintf("-DVW=%d", vw), items, slotArg(b.in(n, 0)), slotArg(w), slotArg(r), slotArg(bias), slotArg(peep),
		slotArg(h0), slotArg(c0), slotArg(outs[0]), slotArg(outs[1]), slotArg(outs[2]), uint64(items), m, pf)
}

// stepWeights lays out host weight v ([D, 4H, cols], ONNX's W or R) for
// lstm_step of vector width vw: [D, H/vw, cols, 4, vw], each item's
// weights (vw units of the four gates, over every column) one contiguous
// run.
func (b *builder) stepWeights(v int, d, h, cols, vw int64) int {
	src := b.hostF32(v)
	dst := make([]float32, len(src))
	i := 0
	for k := range d {
		for u := range h / vw {
			for c := range cols {
				for q := range int64(4) {
					for l := range vw {
						dst[i] = src[(k*4*h+q*h+u*vw+l)*cols+c]
						i++
					}
				}
			}
		}
	}
	return b.layout(v, dst, fmt.Sprintf("#step%dx%dx%d/%d", d, 4*h, cols, vw))
}

// recGRUh returns the B operand of the product of (r . h) with GRU's h
// rows of R (rows 2H..3H of each direction): a host layout [D, H, H] of
// their transpose, or, for a device R, a copy of those rows read with
// strides.
func (b *builder) recGRUh(n *graph.Node, d, h int64) (int, gemmGeom) {
	r := b.in(n, 2)
	if b.val(r).host != nil {
		src := b.hostF32(r)
		dst := make([]float32, d*h*h)
		for k := int64(0); k < d; k++ {
			for row := int64(0); row < h; row++ {
				for c := int64(0); c < h; c++ {
					dst[k*h*h+c*h+row] = src[k*3*h*h+(2*h+row)*h+c]
				}
			}
		}
		return b.layout(r, dst, fmt.Sprintf("#gruhT%dx%d", d, h)), gemmGeom{bK: h, bCol: 1, bBatch: []int64{h * h}}
	}
	rows := b.deviceValue(tensor.F32, tensor.Shape{d, h, h})
	row := int(h*h) * 4
	b.ctl(instr{op: opCopy, loop: -1, cond: -1, copy: copySpec{src: r, dst: rows, srcOff: 2 * row, bytes: row, rows: int(d),
		srcPitch: 3 * row, dstPitch: row, loop: -1}})
	return rows, gemmGeom{bK: 1, bCol: h, bBatch: []int64{h * h}}
}

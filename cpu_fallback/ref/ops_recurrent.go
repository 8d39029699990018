package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// The recurrent family: LSTM, GRU and RNN (graph/ops_recurrent.go says
// what every input and attribute means). Each direction multiplies the
// inputs of every step by W in one GEMM up front, then runs the steps: one
// GEMM of the state by R for every batch entry, then the gates.

func recurrentKernels() map[string]Kernel {
	return guardAll(map[string]Kernel{"LSTM": recurrentAnyKernel, "GRU": recurrentAnyKernel, "RNN": recurrentAnyKernel})
}

// recurrentAnyKernel is recurrentKernel, which computes in f32 (reading
// f16 and bf16 itself), on f64 too: converted to f32 and back
// (nnFloatKernel), as f64 Conv is and as OpenVINO's GPU plugin runs f64
// models.
func recurrentAnyKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(in) > 0 && in[0] != nil && in[0].Type() == tensor.F64 {
		return nnFloatKernel(recurrentKernel)(n, in)
	}
	return recurrentKernel(n, in)
}

// activate applies a recurrent activation function.
func activate(a graph.Activation, x float32) float32 {
	switch a.Name {
	case "sigmoid":
		return float32(1 / (1 + math.Exp(-float64(x))))
	case "tanh":
		return float32(math.Tanh(float64(x)))
	case "relu":
		return max(x, 0)
	case "affine":
		return a.Alpha*x + a.Beta
	case "leakyrelu":
		if x >= 0 {
			return x
		}
		return a.Alpha * x
	case "thresholdedrelu":
		if x > a.Alpha {
			return x
		}
		return 0
	case "scaledtanh":
		return a.Alpha * float32(math.Tanh(float64(a.Beta*x)))
	case "hardsigmoid":
		return min(max(a.Alpha*x+a.Beta, 0), 1)
	case "elu":
		if x >= 0 {
			return x
		}
		return a.Alpha * float32(math.Expm1(float64(x)))
	case "softsign":
		return x / (1 + float32(math.Abs(float64(x))))
	case "softplus":
		return float32(math.Log1p(math.Exp(float64(x))))
	}
	return x
}

// clipTo bounds x to [-c, c] when c > 0.
func clipTo(x, c float32) float32 {
	if c > 0 {
		return min(max(x, -c), c)
	}
	return x
}

// recState reads a [D, N, H] state input (layout 1: [N, D, H]) as
// [D][N*H], zeros when it is omitted.
func recState(x *tensor.Tensor, d, nb, h int, batchFirst bool) [][]float32 {
	out := make([][]float32, d)
	for i := range out {
		out[i] = make([]float32, nb*h)
	}
	if x == nil {
		return out
	}
	v := toF32(x)
	for i := 0; i < d; i++ {
		for b := 0; b < nb; b++ {
			src := (i*nb + b) * h
			if batchFirst {
				src = (b*d + i) * h
			}
			copy(out[i][b*h:(b+1)*h], v[src:src+h])
		}
	}
	return out
}

func recurrentKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	l, err := graph.Recurrent(n)
	if err != nil {
		return nil, err
	}
	x, w, r := in[0], in[1], in[2]
	if t := x.Type(); t != tensor.F32 && t != tensor.F16 && t != tensor.BF16 {
		return nil, n.Errorf("%w: %s on %v (the CPU reference computes recurrent ops in f32, on f32, f16, bf16 and f64)", driver.ErrUnsupported, n.OpType, t)
	}
	if x.Rank() != 3 || w.Rank() != 3 || r.Rank() != 3 {
		return nil, n.Errorf("X, W and R must have rank 3, got %v, %v, %v", x.Shape(), w.Shape(), r.Shape())
	}
	S, N, I := int(x.Shape()[0]), int(x.Shape()[1]), int(x.Shape()[2])
	if l.BatchFirst {
		S, N = N, S
	}
	G, D := l.Gates, l.Directions
	H := int(l.Hidden)
	if H < 0 {
		H = int(w.Shape()[1]) / G
	}
	if w.Shape()[0] != int64(D) || int(w.Shape()[1]) != G*H || int(w.Shape()[2]) != I || !r.Shape().Equal(tensor.Shape{int64(D), int64(G * H), int64(H)}) {
		return nil, n.Errorf("W %v and R %v do not fit X %v, %d directions and hidden_size %d", w.Shape(), r.Shape(), x.Shape(), D, H)
	}
	xv := toF32(x)
	if l.BatchFirst { // to [S, N, I]
		t := make([]float32, len(xv))
		for b := 0; b < N; b++ {
			for s := 0; s < S; s++ {
				copy(t[(s*N+b)*I:(s*N+b+1)*I], xv[(b*S+s)*I:(b*S+s+1)*I])
			}
		}
		xv = t
	}
	wv, rv := toF32(w), toF32(r)
	var bias []float32
	if b := opt(in, 3); b != nil {
		if !b.Shape().Equal(tensor.Shape{int64(D), int64(2 * G * H)}) {
			return nil, n.Errorf("B has shape %v, want [%d,%d]", b.Shape(), D, 2*G*H)
		}
		bias = toF32(b)
	}
	lens := make([]int, N)
	for b := range lens {
		lens[b] = S
	}
	if sl := opt(in, 4); sl != nil {
		v := toI64s(sl)
		if len(v) != N {
			return nil, n.Errorf("sequence_lens has %d entries for batch %d", len(v), N)
		}
		for b, x := range v {
			if x < 0 || x > int64(S) {
				return nil, n.Errorf("sequence_lens[%d] = %d is outside [0, %d]", b, x, S)
			}
			lens[b] = int(x)
		}
	}
	hs := recState(opt(in, 5), D, N, H, l.BatchFirst)
	var cs [][]float32
	var peep []float32
	if n.OpType == "LSTM" {
		cs = recState(opt(in, 6), D, N, H, l.BatchFirst)
		if p := opt(in, 7); p != nil {
			if !p.Shape().Equal(tensor.Shape{int64(D), int64(3 * H)}) {
				return nil, n.Errorf("P has shape %v, want [%d,%d]", p.Shape(), D, 3*H)
			}
			peep = toF32(p)
		}
	}
	y := make([]float32, S*D*N*H) // [S, D, N, H]
	for d := 0; d < D; d++ {
		cell := recCell{op: n.OpType, l: l, act: l.Activations[d], N: N, H: H, G: G,
			r: rv[d*G*H*H : (d+1)*G*H*H], h: hs[d]}
		if bias != nil {
			cell.wb, cell.rb = bias[d*2*G*H:d*2*G*H+G*H], bias[d*2*G*H+G*H:(d+1)*2*G*H]
		}
		if cs != nil {
			cell.c = cs[d]
		}
		if peep != nil {
			cell.p = peep[d*3*H : (d+1)*3*H]
		}
		// X times W for every step and batch entry: [S*N, G*H].
		cell.xw = make([]float32, S*N*G*H)
		if S*N > 0 {
			matMulBT(xv, wv[d*G*H*I:(d+1)*G*H*I], cell.xw, S*N, G*H, I)
		}
		for s := 0; s < S; s++ {
			cell.step(s, lens, l.Reverse[d], func(t, b int, h []float32) {
				copy(y[((t*D+d)*N+b)*H:], h)
			})
		}
	}
	return recurrentOutputs(n, x.Type(), y, hs, cs, S, D, N, H, l.BatchFirst)
}

// recurrentOutputs stores Y, Y_h and Y_c in the node's layout and type.
func recurrentOutputs(n *graph.Node, t tensor.ElementType, y []float32, hs, cs [][]float32, S, D, N, H int, batchFirst bool) ([]*tensor.Tensor, error) {
	ys := tensor.Shape{int64(S), int64(D), int64(N), int64(H)}
	ss := tensor.Shape{int64(D), int64(N), int64(H)}
	if batchFirst {
		ys = tensor.Shape{int64(N), int64(S), int64(D), int64(H)}
		ss = tensor.Shape{int64(N), int64(D), int64(H)}
		t2 := make([]float32, len(y))
		for s := 0; s < S; s++ {
			for d := 0; d < D; d++ {
				for b := 0; b < N; b++ {
					copy(t2[((b*S+s)*D+d)*H:((b*S+s)*D+d+1)*H], y[((s*D+d)*N+b)*H:((s*D+d)*N+b+1)*H])
				}
			}
		}
		y = t2
	}
	state := func(v [][]float32) []float32 {
		out := make([]float32, D*N*H)
		for d := 0; d < D; d++ {
			for b := 0; b < N; b++ {
				dst := (d*N + b) * H
				if batchFirst {
					dst = (b*D + d) * H
				}
				copy(out[dst:dst+H], v[d][b*H:(b+1)*H])
			}
		}
		return out
	}
	vals := [][]float32{y, state(hs)}
	shapes := []tensor.Shape{ys, ss}
	if cs != nil {
		vals, shapes = append(vals, state(cs)), append(shapes, ss)
	}
	outs := make([]*tensor.Tensor, len(n.Outputs))
	for i := range outs {
		o, err := newOut(n, t, shapes[i])
		if err != nil {
			return nil, err
		}
		storeF32(o, vals[i])
		outs[i] = o
	}
	return outs, nil
}

// recCell is one direction of a recurrent op during its steps.
type recCell struct {
	op      string
	l       graph.RecurrentLayout
	act     []graph.Activation
	N, H, G int
	xw, r   []float32 // X.W^T [S*N, G*H]; R [G*H, H]
	wb, rb  []float32 // biases [G*H], nil when omitted
	p       []float32 // LSTM peepholes [3*H] (i, o, f), nil when omitted
	h, c    []float32 // state [N*H]
	rh      []float32 // scratch: h.R^T [N, G*H]
}

// bias is W's and R's bias of gate unit j.
func (c *recCell) bias(j int) (float32, float32) {
	if c.wb == nil {
		return 0, 0
	}
	return c.wb[j], c.rb[j]
}

// step runs step s for every batch entry still within its length,
// calling emit with the time index and the new state of each.
func (c *recCell) step(s int, lens []int, reverse bool, emit func(t, b int, h []float32)) {
	N, H, G := c.N, c.H, c.G
	if c.rh == nil {
		c.rh = make([]float32, N*G*H)
	}
	matMulBT(c.h, c.r, c.rh, N, G*H, H)
	var rhH []float32 // GRU without linear_before_reset: (r . h) Rh^T
	if c.op == "GRU" && !c.l.LinearBeforeReset {
		reset := make([]float32, N*H)
		for b := 0; b < N; b++ {
			if s >= lens[b] {
				continue
			}
			xw := c.xw[(c.time(s, b, lens, reverse)*N+b)*G*H:]
			for j := 0; j < H; j++ {
				wb, rbias := c.bias(H + j)
				rg := activate(c.act[0], clipTo(xw[H+j]+c.rh[b*G*H+H+j]+wb+rbias, c.l.Clip))
				reset[b*H+j] = rg * c.h[b*H+j]
			}
		}
		rhH = make([]float32, N*H)
		matMulBT(reset, c.r[2*H*H:3*H*H], rhH, N, H, H)
	}
	for b := 0; b < N; b++ {
		if s >= lens[b] {
			continue
		}
		t := c.time(s, b, lens, reverse)
		xw := c.xw[(t*N+b)*G*H : (t*N+b+1)*G*H]
		rh := c.rh[b*G*H : (b+1)*G*H]
		h := c.h[b*H : (b+1)*H]
		pre := func(gate, j int) float32 {
			wb, rbias := c.bias(gate*H + j)
			return xw[gate*H+j] + rh[gate*H+j] + wb + rbias
		}
		switch c.op {
		case "LSTM":
			cc := c.c[b*H : (b+1)*H]
			for j := 0; j < H; j++ {
				pi, po, pf := float32(0), float32(0), float32(0)
				if c.p != nil {
					pi, po, pf = c.p[j], c.p[H+j], c.p[2*H+j]
				}
				ig := activate(c.act[0], clipTo(pre(0, j)+pi*cc[j], c.l.Clip))
				fg := activate(c.act[0], clipTo(pre(2, j)+pf*cc[j], c.l.Clip))
				if c.l.InputForget {
					fg = 1 - ig
				}
				cg := activate(c.act[1], clipTo(pre(3, j), c.l.Clip))
				cc[j] = fg*cc[j] + ig*cg
				og := activate(c.act[0], clipTo(pre(1, j)+po*cc[j], c.l.Clip))
				h[j] = og * activate(c.act[2], cc[j])
			}
		case "GRU":
			for j := 0; j < H; j++ {
				z := activate(c.act[0], clipTo(pre(0, j), c.l.Clip))
				wbh, rbh := c.bias(2*H + j)
				var hc float32
				if c.l.LinearBeforeReset {
					rg := activate(c.act[0], clipTo(pre(1, j), c.l.Clip))
					hc = activate(c.act[1], clipTo(xw[2*H+j]+wbh+rg*(rh[2*H+j]+rbh), c.l.Clip))
				} else {
					hc = activate(c.act[1], clipTo(xw[2*H+j]+wbh+rhH[b*H+j]+rbh, c.l.Clip))
				}
				h[j] = (1-z)*hc + z*h[j]
			}
		case "RNN":
			for j := 0; j < H; j++ {
				h[j] = activate(c.act[0], clipTo(pre(0, j), c.l.Clip))
			}
		}
		emit(t, b, h)
	}
}

// time is the step index batch entry b reads and writes at step s: s
// forward, from its own last step backward.
func (c *recCell) time(s, b int, lens []int, reverse bool) int {
	if reverse {
		return lens[b] - 1 - s
	}
	return s
}

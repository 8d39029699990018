package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// padKernel is ONNX Pad (opset 19/21): pads (begin values then end values,
// for axes or every axis; negative values crop), optional constant_value
// and axes inputs, and mode constant, reflect, edge or wrap. It moves raw
// elements, so it works on every element type.
func padKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := nnInput(n, in, 0, 0)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	r := len(xs)
	pads, ok, err := nnInts(n, in, 1)
	if err != nil {
		return nil, err
	}
	if !ok {
		pads = nil
	}
	axes, hasAxes, err := nnInts(n, in, 3)
	if err != nil {
		return nil, err
	}
	if !hasAxes {
		axes = make([]int64, r)
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	if pads != nil && len(pads) != 2*len(axes) {
		return nil, n.Errorf("pads has %d values, want %d (2 per axis of %v)", len(pads), 2*len(axes), axes)
	}
	padB, padE := make([]int64, r), make([]int64, r)
	if pads != nil {
		for j, a := range axes {
			ax, err := normAxis(n, a, r)
			if err != nil {
				return nil, err
			}
			padB[ax], padE[ax] = pads[j], pads[j+len(axes)]
		}
	}
	mode := n.Attrs.String("mode", "constant")
	switch mode {
	case "constant", "reflect", "edge", "wrap":
	default:
		return nil, n.Errorf("mode %q: want constant, reflect, edge or wrap", mode)
	}
	ys := make(tensor.Shape, r)
	for d := 0; d < r; d++ {
		ys[d] = xs[d] + padB[d] + padE[d]
		if ys[d] < 0 {
			return nil, n.Errorf("pads %v crop more than axis %d of %v holds", pads, d, xs)
		}
		if mode != "constant" && xs[d] == 0 && ys[d] > 0 {
			return nil, n.Errorf("cannot %s-pad empty axis %d of %v", mode, d, xs)
		}
	}
	y, err := tensor.New(x.Type(), ys)
	if err != nil {
		return nil, n.Errorf("output shape %v: %w", ys, err)
	}
	sz := x.Type().Size()
	var fill []byte
	if len(in) > 2 && in[2] != nil && in[2].NumElements() > 0 {
		cv := in[2]
		if cv.Type() != x.Type() {
			c, err := cv.Convert(x.Type())
			if err != nil {
				return nil, n.Errorf("constant_value: %w", err)
			}
			cv = c
		}
		fill = cv.Bytes()[:sz]
	}
	// maps[d][j] is the input coordinate for output coordinate j on axis
	// d, or -1 for the constant.
	maps := make([][]int64, r)
	for d := 0; d < r; d++ {
		m := make([]int64, ys[d])
		for j := range m {
			m[j] = nnPadSource(int64(j)-padB[d], xs[d], mode)
		}
		maps[d] = m
	}
	X, Y := x.Bytes(), y.Bytes()
	total := ys.NumElements()
	if total == 0 {
		return []*tensor.Tensor{y}, nil
	}
	if r == 0 {
		copy(Y, X)
		return []*tensor.Tensor{y}, nil
	}
	inStr := tensor.ContiguousStrides(xs)
	last := ys[r-1]
	idx := make([]int64, r)
	for o := int64(0); o < total; o += last {
		base := int64(0)
		valid := true
		for d := 0; d < r-1; d++ {
			i := maps[d][idx[d]]
			if i < 0 {
				valid = false
				break
			}
			base += i * inStr[d]
		}
		for j := int64(0); j < last; j++ {
			dst := Y[(o+j)*int64(sz) : (o+j+1)*int64(sz)]
			i := maps[r-1][j]
			switch {
			case valid && i >= 0:
				copy(dst, X[(base+i)*int64(sz):(base+i+1)*int64(sz)])
			case fill != nil:
				copy(dst, fill)
			}
		}
		for d := r - 2; d >= 0; d-- {
			idx[d]++
			if idx[d] < ys[d] {
				break
			}
			idx[d] = 0
		}
	}
	return []*tensor.Tensor{y}, nil
}

// nnPadSource maps a (possibly out of range) coordinate i on an axis of size
// n to the input coordinate the mode reads, or -1 for the constant.
func nnPadSource(i, n int64, mode string) int64 {
	if i >= 0 && i < n {
		return i
	}
	switch mode {
	case "edge":
		return min(max(i, 0), n-1)
	case "wrap":
		return ((i % n) + n) % n
	case "reflect":
		if n == 1 {
			return 0
		}
		period := 2 * (n - 1)
		i = ((i % period) + period) % period
		if i >= n {
			i = period - i
		}
		return i
	}
	return -1
}

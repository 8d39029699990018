package cpufallback

import (
	"math"
	"sync"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// fusedKernels is the family of ops the fusion passes produce (graph's
// ops_fused.go): FusedConv and FullyConnected with their post-op lists.
func fusedKernels() map[string]kernel {
	return guardAll(map[string]kernel{
		graph.OpFusedConv:      nnFloatKernel(fusedConvKernel),
		graph.OpFullyConnected: nnFloatKernel(fullyConnectedKernel),
	})
}

// fusedConvKernel is Conv on inputs 0..2 followed by the post-ops, which may
// read the residual input 3; the post-ops run in the conv's output pass
// (convFused).
func fusedConvKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	ops, err := graph.PostOps(n)
	if err != nil {
		return nil, err
	}
	y, err := convFused(n, in[:min(len(in), 3)], ops, opt(in, 3))
	if err != nil {
		return nil, err
	}
	return one(y), nil
}

// fullyConnectedKernel is MatMul(A, W) + B followed by the post-ops.
func fullyConnectedKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	ops, err := graph.PostOps(n)
	if err != nil {
		return nil, err
	}
	w, err := need(n, in, 1)
	if err != nil {
		return nil, err
	}
	if w.Rank() != 2 {
		return nil, n.Errorf("weights %v must be a [K, N] matrix", w.Shape())
	}
	outs, err := nnMatMul[float32](nnSgemm, tensor.F32)(n, in[:2])
	if err != nil {
		return nil, err
	}
	y := outs[0]
	if b := opt(in, 2); b != nil {
		N := w.Shape()[1]
		if b.NumElements() != N {
			return nil, n.Errorf("bias %v: want %d elements", b.Shape(), N)
		}
		bias, Y := b.F32(), y.F32()
		for r := 0; r+int(N) <= len(Y); r += int(N) {
			row := Y[r : r+int(N)]
			for j := range row {
				row[j] += bias[j]
			}
		}
	}
	y, err = applyPostOps(n, ops, y, opt(in, 3))
	if err != nil {
		return nil, err
	}
	return one(y), nil
}

// applyPostOps applies ops in order to the f32 tensor y, in place where it
// can; residual is the operand of a "sum" post-op.
func applyPostOps(n *graph.Node, ops []graph.PostOp, y, residual *tensor.Tensor) (*tensor.Tensor, error) {
	for _, p := range ops {
		if p.Kind == graph.PostSum {
			if residual == nil {
				return nil, n.Errorf("post-op %q needs input 3", graph.PostSum)
			}
			if residual.Shape().Equal(y.Shape()) {
				Y, R := y.F32(), residual.F32()
				for i := range Y {
					Y[i] += R[i]
				}
				continue
			}
			s, err := arith(n, opAdd, y, residual)
			if err != nil {
				return nil, err
			}
			if !s.Shape().Equal(y.Shape()) {
				return nil, n.Errorf("residual %v does not broadcast to output %v", residual.Shape(), y.Shape())
			}
			y = s
			continue
		}
		f, err := compileRowOp(n, p)
		if err != nil {
			return nil, err
		}
		applyRowOps(y.F32(), f)
	}
	return y, nil
}

// postOpFunc returns the elementwise function of an activation post-op,
// computed in float64 like the standalone unary kernels.
func postOpFunc(n *graph.Node, p graph.PostOp) (func(float64) float64, error) {
	a, b := float64(p.Alpha), float64(p.Beta)
	switch p.Kind {
	case graph.PostRelu:
		return func(x float64) float64 { return math.Max(x, 0) }, nil
	case graph.PostClip:
		return func(x float64) float64 {
			// Written so NaN passes through, as in clipRun.
			if x < a {
				x = a
			}
			if x > b {
				x = b
			}
			return x
		}, nil
	case graph.PostHardSwish:
		return func(x float64) float64 { return x * math.Max(0, math.Min(1, x/6+0.5)) }, nil
	case graph.PostHardSigmoid:
		return func(x float64) float64 { return math.Max(0, math.Min(1, a*x+b)) }, nil
	case graph.PostSigmoid:
		return sigmoid, nil
	case graph.PostSwish:
		return func(x float64) float64 { return x * sigmoid(a*x) }, nil
	case graph.PostGelu:
		if a != 0 {
			k := math.Sqrt(2 / math.Pi)
			return func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(k*(x+0.044715*x*x*x))) }, nil
		}
		return func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }, nil
	case graph.PostLeakyRelu:
		return func(x float64) float64 {
			if x < 0 {
				return a * x
			}
			return x
		}, nil
	case graph.PostTanh:
		return math.Tanh, nil
	case graph.PostLinear:
		return func(x float64) float64 { return a*x + b }, nil
	}
	return nil, n.Errorf("post-op kind %q has no CPU implementation", p.Kind)
}

// hostKernels is the kernel table Evaluate uses, built once.
var hostKernels = sync.OnceValue(kernelTable)

// Evaluate computes one node's outputs on the host with the CPU device's
// reference kernels; in[i] is nil for an omitted optional input. It is what
// the fusion passes use to fold constant subgraphs (fusion.Options.Eval).
// An op without a CPU kernel is an error naming the node; a panic inside a
// kernel becomes an error.
func Evaluate(n *graph.Node, in []*tensor.Tensor) (out []*tensor.Tensor, err error) {
	k, ok := hostKernels()[n.OpType]
	if !ok || n.Domain != "" {
		return nil, n.Errorf("op %s has no CPU kernel", n.OpType)
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, n.Errorf("cpu kernel panicked: %v", r)
		}
	}()
	dense := make([]*tensor.Tensor, len(in))
	for i, x := range in {
		if x != nil {
			dense[i] = x.Contiguous()
		}
	}
	out, err = k(n, dense)
	if err != nil {
		return nil, err
	}
	if len(out) < len(n.Outputs) {
		return nil, n.Errorf("kernel returned %d outputs, want %d", len(out), len(n.Outputs))
	}
	return out, nil
}

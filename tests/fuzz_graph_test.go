// The whole-path fuzz target runs graphs on the GPU device, which needs a
// build with OpenCL.

//go:build cgo && !noopencl

package tests

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clinfer/clinfer/internal/onnxbuild"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// byteSource hands out the fuzzer's bytes as small decisions; past the end
// it returns zeros, so every input is a valid (if short) program.
type byteSource struct {
	b []byte
	i int
}

// n returns a value in [0, k).
func (s *byteSource) n(k int) int {
	if s.i >= len(s.b) {
		return 0
	}
	v := int(s.b[s.i])
	s.i++
	return v % k
}

// fuzzGraph is a random but valid ONNX model: one f32 NCHW input, a chain
// of ops whose shapes the generator tracks, one output.
type fuzzGraph struct {
	onnx  []byte
	shape tensor.Shape
	ops   []string
}

// unaryFuzzOps are the elementwise ops the generator picks, with their
// attributes.
var unaryFuzzOps = []struct {
	op    string
	attrs map[string]any
}{
	{"Relu", nil}, {"Sigmoid", nil}, {"Tanh", nil}, {"Abs", nil}, {"Neg", nil},
	{"LeakyRelu", map[string]any{"alpha": float32(0.1)}}, {"Elu", map[string]any{"alpha": float32(0.5)}},
	{"HardSigmoid", map[string]any{"alpha": float32(0.2), "beta": float32(0.5)}}, {"HardSwish", nil},
	{"Softplus", nil}, {"Softsign", nil}, {"Erf", nil}, {"Floor", nil}, {"Ceil", nil},
}

// buildFuzzGraph turns fuzz bytes into a model.
func buildFuzzGraph(data []byte) fuzzGraph {
	src := &byteSource{b: data}
	shape := tensor.Shape{int64(1 + src.n(2)), int64(1 + src.n(4)), int64(1 + src.n(8)), int64(1 + src.n(8))}
	g := fuzzGraph{shape: shape.Clone()}
	m := onnxbuild.New("fuzz", 14) // HardSwish is opset 14
	m.Input("x", tensor.F32, onnxbuild.Dims(shape...))
	cur, cs := "x", shape.Clone()
	steps := 1 + src.n(6)
	for i := 0; i < steps; i++ {
		out := fmt.Sprintf("t%d", i)
		name := fmt.Sprintf("n%d", i)
		c := fmt.Sprintf("c%d", i)
		switch src.n(9) {
		case 0, 1: // elementwise unary
			u := unaryFuzzOps[src.n(len(unaryFuzzOps))]
			if (u.op == "Floor" || u.op == "Ceil") && i > 0 {
				// A step function after float math turns a last-bit
				// difference (tanh 0.99999994 on one device, 1 on the
				// other) into a difference of 1: only on the exact input.
				u = unaryFuzzOps[0]
			}
			m.Node(u.op, name, []string{cur}, []string{out}, u.attrs)
			g.ops = append(g.ops, u.op)
		case 2: // binary with a constant broadcast over some axes
			ops := []string{"Add", "Sub", "Mul", "Max", "Min", "Div"}
			op := ops[src.n(len(ops))]
			cshape := cs.Clone()
			for a := range cshape {
				if src.n(2) == 0 {
					cshape[a] = 1
				}
			}
			lo, hi := float32(-2), float32(2)
			if op == "Div" {
				lo, hi = 0.5, 2 // away from zero
			}
			ct, _ := tensor.FromF32(cshape, seeded.Float32s(uint32(i+1), int(cshape.NumElements()), lo, hi))
			m.Initializer(c, ct)
			m.Node(op, name, []string{cur, c}, []string{out}, nil)
			g.ops = append(g.ops, op)
		case 3: // convolution
			if len(cs) != 4 {
				continue
			}
			k := int64(1 + src.n(3))
			s := int64(1 + src.n(2))
			p := int64(src.n(2))
			oc := int64(1 + src.n(6))
			grp := int64(1)
			if src.n(3) == 0 {
				grp, oc = cs[1], cs[1] // depthwise
			}
			if cs[2]+2*p < k || cs[3]+2*p < k {
				continue
			}
			oh, ow := (cs[2]+2*p-k)/s+1, (cs[3]+2*p-k)/s+1
			wshape := tensor.Shape{oc, cs[1] / grp, k, k}
			w, _ := tensor.FromF32(wshape, seeded.Float32s(uint32(i+7), int(wshape.NumElements()), -1, 1))
			bias, _ := tensor.FromF32(tensor.Shape{oc}, seeded.Float32s(uint32(i+9), int(oc), -1, 1))
			m.Initializer(c+"w", w).Initializer(c+"b", bias)
			m.Node("Conv", name, []string{cur, c + "w", c + "b"}, []string{out}, map[string]any{
				"kernel_shape": []int64{k, k}, "strides": []int64{s, s}, "pads": []int64{p, p, p, p}, "group": grp,
			})
			cs = tensor.Shape{cs[0], oc, oh, ow}
			g.ops = append(g.ops, "Conv")
		case 4: // pooling
			if len(cs) != 4 {
				continue
			}
			k := int64(1 + src.n(3))
			s := int64(1 + src.n(2))
			if cs[2] < k || cs[3] < k {
				continue
			}
			op := []string{"MaxPool", "AveragePool"}[src.n(2)]
			m.Node(op, name, []string{cur}, []string{out}, map[string]any{"kernel_shape": []int64{k, k}, "strides": []int64{s, s}})
			cs = tensor.Shape{cs[0], cs[1], (cs[2]-k)/s + 1, (cs[3]-k)/s + 1}
			g.ops = append(g.ops, op)
		case 5: // transpose
			perm := []int64{0, 1, 2, 3}[:len(cs)]
			for a := len(perm) - 1; a > 0; a-- {
				b := src.n(a + 1)
				perm[a], perm[b] = perm[b], perm[a]
			}
			m.Node("Transpose", name, []string{cur}, []string{out}, map[string]any{"perm": perm})
			ns := make(tensor.Shape, len(cs))
			for a, p := range perm {
				ns[a] = cs[p]
			}
			cs = ns
			g.ops = append(g.ops, "Transpose")
		case 6: // softmax over an axis
			axis := int64(src.n(len(cs)))
			m.Node("Softmax", name, []string{cur}, []string{out}, map[string]any{"axis": axis})
			g.ops = append(g.ops, "Softmax")
		case 7: // reduction with kept dims
			axis := int64(src.n(len(cs)))
			op := []string{"ReduceMean", "ReduceSum", "ReduceMax"}[src.n(3)]
			if op == "ReduceSum" { // axes is an input since opset 13
				at, _ := tensor.FromI64(tensor.Shape{1}, []int64{axis})
				m.Initializer(c, at)
				m.Node(op, name, []string{cur, c}, []string{out}, map[string]any{"keepdims": int64(1)})
			} else {
				m.Node(op, name, []string{cur}, []string{out}, map[string]any{"axes": []int64{axis}, "keepdims": int64(1)})
			}
			cs = cs.Clone()
			cs[axis] = 1
			g.ops = append(g.ops, op)
		case 8: // flatten and a GEMM with a constant
			rows, cols := cs[0], cs.NumElements()/cs[0]
			n := int64(1 + src.n(5))
			shp, _ := tensor.FromI64(tensor.Shape{2}, []int64{rows, cols})
			w, _ := tensor.FromF32(tensor.Shape{cols, n}, seeded.Float32s(uint32(i+11), int(cols*n), -1, 1))
			m.Initializer(c+"s", shp).Initializer(c+"w", w)
			m.Node("Reshape", name+"r", []string{cur, c + "s"}, []string{out + "r"}, nil)
			m.Node("MatMul", name, []string{out + "r", c + "w"}, []string{out}, nil)
			cs = tensor.Shape{rows, n}
			g.ops = append(g.ops, "MatMul")
		}
		cur = out
	}
	m.Node("Identity", "result", []string{cur}, []string{"y"}, nil)
	m.Output("y", tensor.F32, onnxbuild.Dims(cs...))
	g.onnx = m.Bytes()
	return g
}

// fuzzCore holds the CPU and GPU devices the fuzz target shares between
// inputs (a new Core per input would time the OpenCL setup, not the path).
var fuzzCore = driver.NewCore()

// runFuzzGraph compiles and runs model on device within a time limit and
// returns the output, or an error; a panic is a crash the caller reports.
func runFuzzGraph(t *testing.T, g fuzzGraph, device string) (*tensor.Tensor, error) {
	m, err := onnx.Read(g.onnx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cm, err := fuzzCore.CompileModel(ctx, m, device, nil)
	if err != nil {
		return nil, err
	}
	defer cm.Close()
	r, err := cm.CreateInferRequest()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	x, err := tensor.FromF32(g.shape, seeded.Float32s(3, int(g.shape.NumElements()), -3, 3))
	if err != nil {
		return nil, err
	}
	if err := r.SetTensor("x", x); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- r.Infer(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			return nil, err
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s hangs on %v (ops %v): Infer ignored a 1-minute deadline", device, g.shape, g.ops)
	}
	y, err := r.Tensor("y")
	if err != nil {
		return nil, err
	}
	return y.Clone(), nil
}

// FuzzGraphsCPUvsGPU builds small random but valid graphs from the op set
// (elementwise, broadcast binary, convolution incl. depthwise, pooling,
// transpose, softmax, reductions, flatten + MatMul) and runs each on the
// CPU and GPU devices: no panic, no crash, no hang, and when both succeed
// their outputs agree within the ONNX backend suite's tolerance.
func FuzzGraphsCPUvsGPU(f *testing.F) {
	f.Add([]byte{0, 1, 4, 4, 3, 3, 1, 0, 1, 0, 0, 2})
	f.Add([]byte{1, 3, 7, 7, 5, 3, 2, 1, 1, 3, 1, 5, 2, 1, 0, 6, 2, 7, 1, 1})
	f.Add([]byte{1, 2, 5, 6, 4, 8, 3, 4, 2, 1, 1, 2, 2, 4, 1, 5, 0, 1, 3})
	f.Add([]byte{0, 0, 0, 0, 5, 5, 0, 1, 2, 0, 3, 6, 1, 7, 2, 1, 2, 8, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := buildFuzzGraph(data)
		cpu, cerr := runFuzzGraph(t, g, "CPU")
		gpu, gerr := runFuzzGraph(t, g, "GPU")
		for _, err := range []error{cerr, gerr} {
			if err != nil && strings.Contains(err.Error(), "panic") {
				t.Fatalf("ops %v on %v: %v", g.ops, g.shape, err)
			}
		}
		if cerr != nil || gerr != nil {
			// A graph one device rejects is allowed (an op the GPU lacks);
			// the CPU, the reference, must run every valid graph.
			if cerr != nil && !errors.Is(cerr, driver.ErrUnsupported) {
				t.Fatalf("CPU fails a valid graph (ops %v on %v): %v", g.ops, g.shape, cerr)
			}
			return
		}
		if err := conformance.Compare(gpu, cpu, conformance.DefaultTolerance(tensor.F32)); err != nil {
			t.Fatalf("GPU and CPU disagree on ops %v, input %v: %v", g.ops, g.shape, err)
		}
	})
}

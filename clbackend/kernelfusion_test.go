package clbackend

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// kernelFusionCases are lowerCases' cases of OpKernelFusion: one per
// declaration of fusion.KernelFusions, on the seeded random instance the
// declaration generates, fused by the declaration's own pass. A fusion is
// therefore compared with the CPU reference (which runs the body) the
// moment it is declared, and TestLoweringsMatchCPU's catalogue check sees
// its kernel launched.
func kernelFusionCases() []lowerCase {
	var out []lowerCase
	for _, k := range fusion.KernelFusions() {
		out = append(out, lowerCase{k.Kernel, func(g *caseGen) *graph.Model {
			return fusedInstance(g.t, k, g.r)
		}})
	}
	return out
}

// fusedInstance returns k's instance with k's pass applied: one
// KernelFusion node standing for the pattern.
func fusedInstance(t *testing.T, k fusion.KernelFusion, r *rand.Rand) *graph.Model {
	t.Helper()
	m, err := k.Instance(r)
	require.NoError(t, err)
	n, err := fusion.ApplyKernelFusion(context.Background(), m, k)
	require.NoError(t, err)
	require.Equal(t, 1, n, "pass %s does not fuse the instance of its own pattern", k.Name)
	return m
}

// runtimeNode returns the runtime-model node of layer type op (failing
// unless there is exactly one).
func runtimeNode(t *testing.T, rm *graph.Model, op string) *graph.Node {
	t.Helper()
	nodes, err := rm.Nodes()
	require.NoError(t, err)
	var found []*graph.Node
	for _, n := range nodes {
		if n.RT.Extra["LAYER_TYPE"] == op {
			found = append(found, n)
		}
	}
	require.Len(t, found, 1, "%s nodes in the runtime model", op)
	return found[0]
}

// TestKernelFusionsOnGPU compiles each declared fusion's unfused instance
// on the GPU with the standard pipeline: the pass fuses it into one
// KernelFusion node whose runtime-model entry names the catalogue kernel
// (IMPL_TYPE) and the absorbed user nodes (ORIGINAL_NAMES); QueryModel
// answers in the user's names; the result matches the CPU; export and
// import keep the node; and DISABLED_TRANSFORMATIONS=<pass> leaves the
// subgraph unfused.
func TestKernelFusionsOnGPU(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	ctx := context.Background()
	for i, k := range fusion.KernelFusions() {
		t.Run(k.Name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(i), 17))
			m, err := k.Instance(r)
			require.NoError(t, err)
			var ops []string
			nodes, err := m.Nodes()
			require.NoError(t, err)
			for _, n := range nodes {
				if n.OpType != graph.OpParameter && n.OpType != graph.OpConstant && n.OpType != graph.OpResult {
					ops = append(ops, n.Name)
				}
			}
			ins := map[string]*tensor.Tensor{}
			for _, p := range m.Parameters {
				ins[p.Name] = randomFill(t, r, p)
			}
			want, _ := inferAll(t, cpu, m, ins)

			cm, err := gpu.CompileModel(ctx, m, nil)
			require.NoError(t, err)
			defer cm.Close()
			rm, err := cm.RuntimeModel()
			require.NoError(t, err)
			kf := runtimeNode(t, rm, graph.OpKernelFusion)
			assert.Equal(t, k.Kernel+":"+k.Kernel, kf.RT.Extra["IMPL_TYPE"])
			got := strings.Split(kf.RT.Extra["ORIGINAL_NAMES"], ",")
			assert.ElementsMatch(t, ops, got, "ORIGINAL_NAMES are the absorbed nodes")
			counts, _ := opCounts(t, cm)
			assert.Equal(t, 1, counts[graph.OpKernelFusion])

			q, err := gpu.QueryModel(ctx, m, nil)
			require.NoError(t, err)
			for _, n := range nodes {
				assert.Equal(t, DeviceName, q[n.Name], "QueryModel on %q", n.Name)
			}

			outs := runBound(t, cm, ins)
			for j := range want {
				assertClose(t, want[j], outs[j])
			}

			// Export and import carry the body (a *graph.Model attribute).
			var blob bytes.Buffer
			require.NoError(t, cm.(driver.Exporter).Export(&blob))
			im, err := newGPU(t).ImportModel(ctx, &blob, nil)
			require.NoError(t, err)
			defer im.Close()
			irm, err := im.RuntimeModel()
			require.NoError(t, err)
			assert.Equal(t, k.Kernel+":"+k.Kernel, runtimeNode(t, irm, graph.OpKernelFusion).RT.Extra["IMPL_TYPE"])
			for j, y := range runBound(t, im, ins) {
				assertClose(t, outs[j], y)
			}

			off, err := gpu.CompileModel(ctx, m, map[string]string{fusion.KeyDisabledTransformations: k.Name})
			require.NoError(t, err)
			defer off.Close()
			// The ops it would absorb stay apart (or in chains whose kernel
			// is generated: FuseElementwiseChains).
			orm, err := off.RuntimeModel()
			require.NoError(t, err)
			onodes, err := orm.Nodes()
			require.NoError(t, err)
			for _, n := range onodes {
				assert.NotEqual(t, k.Kernel+":"+k.Kernel, n.RT.Extra["IMPL_TYPE"], "DISABLED_TRANSFORMATIONS=%s still fused", k.Name)
			}
			for j, y := range runBound(t, off, ins) {
				assertClose(t, want[j], y)
			}
		})
	}
}

// runBound infers once on cm with ins bound and returns every output.
func runBound(t *testing.T, cm driver.CompiledModel, ins map[string]*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	for name, x := range ins {
		require.NoError(t, r.SetTensor(name, x))
	}
	require.NoError(t, r.Infer(context.Background()))
	var out []*tensor.Tensor
	for _, o := range cm.Outputs() {
		y, err := r.Tensor(o.Name)
		require.NoError(t, err)
		out = append(out, y.Clone())
	}
	return out
}

// TestKernelFusionUnsupportedForms: the generic lowering refuses, naming
// the node, a kernel the catalogue does not have and an input that does not
// broadcast to the output.
func TestKernelFusionUnsupportedForms(t *testing.T) {
	gpu := newGPU(t)
	k, ok := fusion.LookupKernelFusion("se_residual")
	require.True(t, ok)
	for _, c := range []struct {
		name, want string
		edit       func(n *graph.Node)
	}{
		{"unknown_kernel", "no_such_kernel", func(n *graph.Node) { n.Attrs[graph.AttrKernel] = "no_such_kernel" }},
		{"bad_launch", "launch", func(n *graph.Node) { n.Attrs[graph.AttrLaunch] = "tiles" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := fusedInstance(t, k, rand.New(rand.NewPCG(3, 3)))
			nodes, err := m.Nodes()
			require.NoError(t, err)
			i := slices.IndexFunc(nodes, func(n *graph.Node) bool { return n.OpType == graph.OpKernelFusion })
			require.GreaterOrEqual(t, i, 0)
			c.edit(nodes[i])
			_, err = gpu.CompileModel(context.Background(), m, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), nodes[i].Name)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// generatedChainCases are models of chains of element-wise ops after
// FuseElementwiseChains: each one KernelFusion node whose kernel package
// gen prints from its body (graph.GeneratedKernel), over broadcast
// inputs, scalar constants in the body, and the ops' attributes as params.
func generatedChainCases() []lowerCase {
	chain := func(g *caseGen, build func(g *caseGen) *graph.Node) *graph.Model {
		m := g.model(build(g))
		require.NoError(g.t, m.InferShapes())
		n, err := fusion.NewManager(fusion.FuseElementwiseChains(), fusion.DeadCodeRemoval()).Run(context.Background(), m, fusion.Options{Chains: &fusion.ChainOptions{}})
		require.NoError(g.t, err)
		require.Equal(g.t, 1, n.Passes[0].Rewrites, "the case's chain was not fused")
		return m
	}
	scalar := func(v float32) graph.Output { return graph.NewConstant(fmt.Sprintf("s%v", v), tensor.Scalar(v)).Out(0) }
	k := 0
	op := func(typ string, attrs graph.Attrs, in ...graph.Output) graph.Output {
		k++
		return graph.NewNode(typ, fmt.Sprintf("%s_%d", typ, k), in, attrs, 1).Out(0)
	}
	return []lowerCase{
		{"generated_bias_sigmoid_gate", func(g *caseGen) *graph.Model {
			return chain(g, func(g *caseGen) *graph.Node {
				c := g.dim(2, 5)
				x := g.x("x", g.dim(1, 2), c, g.dim(2, 7), g.dim(3, 9))
				return op("Mul", nil, op("Sigmoid", nil, op("Add", nil, op("Mul", nil, x, scalar(0.75)), g.c(-1, 1, c, 1, 1))), x).Node
			})
		}},
		{"generated_pow_clip_gelu", func(g *caseGen) *graph.Model {
			return chain(g, func(g *caseGen) *graph.Node {
				w := g.dim(2, 9)
				x, y := g.x("pos", g.dim(1, 4), w), g.x("y", w)
				p := op("Pow", nil, op("Abs", nil, x), op("Clip", nil, y, scalar(-1), scalar(2)))
				return op("Gelu", graph.Attrs{"approximate": "tanh"}, op("LeakyRelu", graph.Attrs{"alpha": float32(0.2)}, op("Sub", nil, p, scalar(1)))).Node
			})
		}},
		// A spectrum's magnitude (Silero VAD's STFT): the squares are
		// printed as products.
		{"generated_square_magnitude", func(g *caseGen) *graph.Model {
			return chain(g, func(g *caseGen) *graph.Node {
				c, w := g.dim(2, 9), g.dim(1, 5)
				re, im := g.x("re", 1, c, w), g.x("im", 1, c, w)
				return op("Sqrt", nil, op("Add", nil, op("Pow", nil, re, scalar(2)), op("Pow", nil, im, scalar(2)))).Node
			})
		}},
		// Chains ending in a QuantizeLinear (a QDQ model's residual Add
		// and squeeze-excitation gate Mul): the kernel stores u8 or i8,
		// the CPU reference's bits.
		{"generated_residual_quantize_u8", func(g *caseGen) *graph.Model {
			return chain(g, func(g *caseGen) *graph.Node {
				c := g.dim(2, 5)
				x, y := g.x("x", 1, c, g.dim(2, 7), g.dim(3, 19)), g.x("y", c, 1, 1)
				q := g.scalarOf(tensor.U8, 128)
				return op("QuantizeLinear", nil, op("Add", nil, op("Mul", nil, x, y), x), scalar(0.02), q).Node
			})
		}},
		{"generated_gate_quantize_i8", func(g *caseGen) *graph.Model {
			return chain(g, func(g *caseGen) *graph.Node {
				c := g.dim(2, 5)
				x, gate := g.x("x", g.dim(1, 2), c, g.dim(2, 9)), g.x("gate", c, 1)
				q := g.scalarOf(tensor.I8, -3)
				return op("QuantizeLinear", nil, op("Mul", nil, x, op("Sigmoid", nil, gate)), scalar(0.01), q).Node
			})
		}},
		// Chains ending in a reduction over trailing axes
		// (graph.LaunchReduceRows): rows of odd lengths, a broadcast input.
		{"generated_square_mean", func(g *caseGen) *graph.Model {
			return chain(g, func(g *caseGen) *graph.Node {
				w := g.dim(3, 40)
				x := g.x("x", g.dim(1, 3), g.dim(2, 5), w)
				d := op("Sub", nil, x, g.c(-1, 1, w))
				return op("ReduceMean", graph.Attrs{"keepdims": int64(1)}, op("Mul", nil, d, d), g.ints(-1)).Node
			})
		}},
		{"generated_tanh_l2_two_axes", func(g *caseGen) *graph.Model {
			return chain(g, func(g *caseGen) *graph.Node {
				c := g.dim(2, 4)
				x := g.x("x", g.dim(1, 2), c, g.dim(2, 6), g.dim(2, 7))
				return op("ReduceL2", graph.Attrs{"keepdims": int64(0)}, op("Tanh", nil, op("Mul", nil, x, g.c(0.5, 2, c, 1, 1))), g.ints(-1, -2)).Node
			})
		}},
	}
}

// denseChainCases are lowerCases' cases of the dense_chain kernel
// (fusion.FuseDenseChain): random widths (whole and partial vector chunks,
// a first layer wider than the rest), one or two rows, fused before the
// GPU sees them, so the CPU runs the chain's body. The first is
// openWakeWord's head (LayerNormalization + Relu twice, then Sigmoid); the
// second has all four slots: a Relu post-op, a bare product, a Sigmoid
// post-op and a LayerNormalization without Relu.
func denseChainCases() []lowerCase {
	op := numberedNodes()
	dense := func(g *caseGen, h graph.Output, K, C int64, norm bool, act string) graph.Output {
		h = op("Add", nil, op("MatMul", nil, h, g.c(-0.5, 0.5, K, C)), g.c(-0.2, 0.2, C))
		if norm {
			h = op("LayerNormalization", graph.Attrs{"axis": int64(-1), "epsilon": float32(1e-5)}, h, g.c(0.5, 1.5, C), g.c(-0.3, 0.3, C))
		}
		if act != "" {
			h = op(act, nil, h)
		}
		return h
	}
	chain := func(g *caseGen, y graph.Output) *graph.Model {
		m := g.model(y.Node)
		require.NoError(g.t, m.InferShapes())
		rep, err := fusion.NewManager(fusion.FuseFullyConnected(), fusion.FuseDenseChain(), fusion.DeadCodeRemoval()).Run(context.Background(), m,
			fusion.Options{DenseChain: &fusion.DenseChainOptions{LocalBytes: 1 << 20, MaxRows: 2}})
		require.NoError(g.t, err)
		require.Equal(g.t, 1, rep.Passes[1].Rewrites, "the case's dense chain was not fused")
		return m
	}
	return []lowerCase{
		{"dense_chain_wake_word", func(g *caseGen) *graph.Model {
			K, C1, C2 := g.dim(3, 70), g.dim(5, 37), g.dim(2, 20)
			h := dense(g, dense(g, g.x("x", g.dim(1, 2), K), K, C1, true, "Relu"), C1, C2, true, "Relu")
			return chain(g, dense(g, h, C2, 1, false, "Sigmoid"))
		}},
		{"dense_chain_four_layers", func(g *caseGen) *graph.Model {
			K, C1, C2, C3, C4 := g.dim(2, 9), g.dim(9, 40), g.dim(1, 8), g.dim(4, 17), g.dim(3, 33)
			h := dense(g, g.x("x", 1, g.dim(1, 2), K), K, C1, false, "Relu")
			h = dense(g, dense(g, h, C1, C2, false, ""), C2, C3, false, "Sigmoid")
			return chain(g, dense(g, h, C3, C4, true, ""))
		}},
	}
}

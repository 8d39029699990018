package devicetest

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// The quantization of QDQMatMulModel: x in u8 (scale 1/32, zero point
// 128), the weights in i8 (scale 1/64, zero point 0).
const (
	qdqXScale = 1.0 / 32
	qdqXZero  = 128
	qdqWScale = 1.0 / 64
)

// qdqWeights are QDQMatMulModel's int8 weights, [4, 3].
var qdqWeights = []int8{12, -7, 100, -128, 5, 33, 64, -64, 1, 0, 127, -90}

// QDQMatMulModel returns the smallest QDQ model: Parameter "x" f32[1,4]
// -> QuantizeLinear -> DequantizeLinear -> MatMul with dequantized int8
// weights [4,3] -> Result "y" f32[1,3].
func QDQMatMulModel() *graph.Model {
	scalar := func(name string, t tensor.ElementType, v float64) graph.Output {
		x, err := tensor.FromFloat64s(t, tensor.Shape{}, []float64{v})
		if err != nil {
			panic(err) // a scalar of a valid type: cannot fail
		}
		return graph.NewConstant(name, x).Out(0)
	}
	node := func(op, name string, in ...graph.Output) graph.Output {
		return graph.NewNode(op, name, in, nil, 1).Out(0)
	}
	w := make([]float64, len(qdqWeights))
	for i, v := range qdqWeights {
		w[i] = float64(v)
	}
	wt, err := tensor.FromFloat64s(tensor.I8, tensor.Shape{4, 3}, w)
	if err != nil {
		panic(err)
	}
	x := graph.NewParameter(InputName, tensor.F32, graph.ShapeOf(1, 4))
	xs, xz := scalar("x_scale", tensor.F32, qdqXScale), scalar("x_zero", tensor.U8, qdqXZero)
	q := node("QuantizeLinear", "x_q", x.Out(0), xs, xz)
	dq := node("DequantizeLinear", "x_dq", q, xs, xz)
	ws, wz := scalar("w_scale", tensor.F32, qdqWScale), scalar("w_zero", tensor.I8, 0)
	wdq := node("DequantizeLinear", "w_dq", graph.NewConstant("w", wt).Out(0), ws, wz)
	y := graph.NewResult(OutputName, node("MatMul", "matmul", dq, wdq))
	return graph.NewModel("devicetest_qdq_matmul", []*graph.Node{x}, []*graph.Node{y})
}

// qdqWant is QDQMatMulModel's output for x, in float64 from the quantized
// values (exact to f32 rounding: the integer sums are small).
func qdqWant(x []float32) []float64 {
	y := make([]float64, 3)
	for k, v := range x {
		q := math.RoundToEven(float64(v)/qdqXScale) + qdqXZero
		q = math.Max(0, math.Min(255, q))
		for j := range y {
			y[j] += (q - qdqXZero) * qdqXScale * float64(qdqWeights[k*3+j]) * qdqWScale
		}
	}
	return y
}

// checkINT8 compiles QDQMatMulModel (and, where the device claims FP16,
// with INFERENCE_PRECISION_HINT=f16 too: the hint sets the float parts,
// not the quantized ones): its runtime model must show a node computing
// in u8 or i8 (RUNTIME_PRECISION) and no MatMul left in float, and its
// output must be the quantized product.
func checkINT8(t *testing.T, newPlugin NewPlugin, caps []string) {
	hints := []string{""}
	if slices.Contains(caps, "FP16") {
		hints = append(hints, tensor.F16.String())
	}
	for _, hint := range hints {
		var props map[string]string
		if hint != "" {
			props = map[string]string{driver.KeyInferencePrecisionHint: hint}
		}
		p := open(t, newPlugin)
		m := QDQMatMulModel()
		require.NoError(t, m.InferShapes())
		cm, err := p.CompileModel(context.Background(), m, props)
		require.NoError(t, err, "compiling a QDQ MatMul (hint %q)", hint)
		t.Cleanup(func() { assert.NoError(t, cm.Close()) })
		rm, err := cm.RuntimeModel()
		require.NoError(t, err)
		nodes, err := rm.Nodes()
		require.NoError(t, err)
		var ints, floats []string
		for _, n := range nodes {
			switch prec := n.RT.Extra[driver.RuntimePrecision]; {
			case prec == "u8" || prec == "i8":
				ints = append(ints, n.OpType)
			case n.OpType == "MatMul" || n.OpType == "FullyConnected":
				floats = append(floats, n.OpType+" in "+prec)
			}
		}
		assert.NotEmpty(t, ints, "%s claims INT8 but no node of the QDQ model runs in u8 or i8 (hint %q)", p.Name(), hint)
		assert.Empty(t, floats, "the QDQ product stayed float (hint %q)", hint)
		r, err := cm.CreateInferRequest()
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, r.Close()) })
		x := loadInput(42)
		require.NoError(t, r.SetTensor(InputName, x))
		require.NoError(t, r.Infer(context.Background()))
		y, err := r.Tensor(OutputName)
		require.NoError(t, err)
		got := y.Contiguous()
		tol := 1e-5
		if hint != "" {
			tol = 2e-2
		}
		want := qdqWant(x.F32())
		for j, v := range got.F32() {
			assert.InDelta(t, want[j], float64(v), tol, "y[%d] (hint %q)", j, hint)
		}
	}
}

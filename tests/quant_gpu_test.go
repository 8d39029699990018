// The GPU device exists only in builds with OpenCL.

//go:build cgo && !noopencl

package tests

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/clinfer/clinfer/clbackend" // registers the "GPU" device
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// quantDevices are the devices the quantization ops must agree on bit for
// bit.
var quantDevices = []string{"CPU", "GPU", heteroGPUCPU}

// specQuantize is ONNX QuantizeLinear of one value, written out here
// independently of the devices: saturate(rne(x / s) + zp) with the
// quotient in f32 and a NaN quotient giving the zero point.
func specQuantize(x, s float32, zp, lo, hi int64) int64 {
	q := x / s
	if q != q {
		return zp
	}
	r := math.RoundToEven(float64(q))
	r = math.Max(math.Min(r+float64(zp), float64(hi)), float64(lo))
	return int64(r)
}

// quantInput is a seeded f32 tensor mixing normal values of the given
// spread, exact rounding ties of scale, values far outside any range and a
// NaN.
func quantInput(r *rand.Rand, shape tensor.Shape, spread, scale float32) *tensor.Tensor {
	v := make([]float32, shape.NumElements())
	for i := range v {
		switch i % 7 {
		case 3:
			v[i] = (float32(r.IntN(41)-20) + 0.5) * scale // a tie
		case 5:
			v[i] = float32(r.NormFloat64()) * 1e6
		default:
			v[i] = float32(r.NormFloat64()) * spread
		}
	}
	if len(v) > 11 {
		v[11] = float32(math.NaN())
	}
	x, _ := tensor.FromF32(shape, v)
	return x
}

// runOnDevice compiles m on device (no transformations, so each op runs as
// itself) and returns its outputs for ins.
func runOnDevice(t *testing.T, core *driver.Core, m *graph.Model, device string, ins map[string]*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	cm, err := core.CompileModel(context.Background(), m, device, map[string]string{driver.KeyDisableTransformations: "YES"})
	require.NoError(t, err, "compile on %s", device)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	for k, v := range ins {
		require.NoError(t, r.SetTensor(k, v))
	}
	require.NoError(t, r.Infer(context.Background()), device)
	var out []*tensor.Tensor
	for _, o := range cm.Outputs() {
		y, err := r.Tensor(o.Name)
		require.NoError(t, err)
		out = append(out, y.Clone())
	}
	return out
}

// oneNode is a model of one node of op over parameters named p0, p1...
// (nil types: an omitted input) with outputs y0, y1...
func oneNode(op string, attrs graph.Attrs, outs int, ins ...*tensor.Tensor) (*graph.Model, map[string]*tensor.Tensor) {
	var params []*graph.Node
	var inputs []graph.Output
	feed := map[string]*tensor.Tensor{}
	for i, x := range ins {
		if x == nil {
			inputs = append(inputs, graph.Output{})
			continue
		}
		name := fmt.Sprintf("p%d", i)
		p := graph.NewParameter(name, x.Type(), graph.StaticShape(x.Shape()))
		params = append(params, p)
		inputs = append(inputs, p.Out(0))
		feed[name] = x
	}
	n := graph.NewNode(op, "node", inputs, attrs, outs)
	var res []*graph.Node
	for i := range outs {
		res = append(res, graph.NewResult(fmt.Sprintf("y%d", i), n.Out(i)))
	}
	return graph.NewModel(op, params, res), feed
}

// TestQuantOpsBitExact runs QuantizeLinear, DequantizeLinear and
// DynamicQuantizeLinear in every quantized type and geometry, the integer
// convolutions and products, and the linear Resize that feeds a dynamic
// quantization in IS-Net, on the CPU, the GPU and HETERO, and
// requires the same bits everywhere; QuantizeLinear also against the
// spec written out in this test.
func TestQuantOpsBitExact(t *testing.T) {
	core := driver.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	r := rand.New(rand.NewPCG(24, 1))
	type quantCase struct {
		name  string
		model *graph.Model
		feed  map[string]*tensor.Tensor
		check func(t *testing.T, out []*tensor.Tensor)
	}
	var cases []quantCase
	x := quantInput(r, tensor.Shape{2, 3, 7}, 300, 0.37)
	for _, qt := range []tensor.ElementType{tensor.I8, tensor.U8, tensor.I16, tensor.U16, tensor.I4, tensor.U4} {
		lo, hi, _ := qt.IntRange()
		zpv := []float64{float64(lo + (hi-lo)/3)}
		scale, _ := tensor.FromF32(tensor.Shape{}, []float32{0.37})
		zp, _ := tensor.FromFloat64s(qt, tensor.Shape{}, zpv)
		m, feed := oneNode("QuantizeLinear", nil, 1, x, scale, zp)
		cases = append(cases, quantCase{"QuantizeLinear/per_tensor/" + qt.String(), m, feed, func(t *testing.T, out []*tensor.Tensor) {
			got, _ := out[0].Int64s()
			for i, v := range x.F32() {
				require.Equal(t, specQuantize(v, 0.37, int64(zpv[0]), lo, hi), got[i], "element %d (%g)", i, v)
			}
		}})
		// Per axis (axis 1, 3 channels) and blocked (axis 2, block 3: a
		// short last block), with f16 scales for the blocked form, then
		// the dequantization of the same.
		ps, _ := tensor.FromF32(tensor.Shape{3}, []float32{0.5, 3, 17})
		pz, _ := tensor.FromFloat64s(qt, tensor.Shape{3}, []float64{float64(lo), float64(hi), float64((lo + hi) / 2)})
		m, feed = oneNode("QuantizeLinear", graph.Attrs{"axis": int64(1)}, 1, x, ps, pz)
		cases = append(cases, quantCase{"QuantizeLinear/per_axis/" + qt.String(), m, feed, nil})
		bs := make([]float64, 2*3*3)
		bz := make([]float64, len(bs))
		for i := range bs {
			bs[i] = 0.25 * float64(1+i%5)
			bz[i] = float64(lo + int64(i)%(hi-lo+1))
		}
		bst, _ := tensor.FromFloat64s(tensor.F16, tensor.Shape{2, 3, 3}, bs)
		bzt, _ := tensor.FromFloat64s(qt, tensor.Shape{2, 3, 3}, bz)
		attrs := graph.Attrs{"axis": int64(2), "block_size": int64(3)}
		m, feed = oneNode("QuantizeLinear", attrs, 1, x, bst, bzt)
		cases = append(cases, quantCase{"QuantizeLinear/blocked/" + qt.String(), m, feed, nil})
		qv := make([]float64, x.NumElements())
		for i := range qv {
			qv[i] = float64(lo + int64(r.IntN(int(hi-lo+1))))
		}
		q, _ := tensor.FromFloat64s(qt, x.Shape(), qv)
		m, feed = oneNode("DequantizeLinear", attrs, 1, q, bst, bzt)
		cases = append(cases, quantCase{"DequantizeLinear/blocked/" + qt.String(), m, feed, nil})
		bf, _ := tensor.FromFloat64s(tensor.BF16, tensor.Shape{3}, []float64{0.5, 3, 17})
		m, feed = oneNode("DequantizeLinear", graph.Attrs{"axis": int64(-2)}, 1, q, bf, pz)
		cases = append(cases, quantCase{"DequantizeLinear/per_axis_bf16/" + qt.String(), m, feed, nil})
	}
	i32, _ := tensor.FromI32(tensor.Shape{5}, []int32{-7, 5, 1 << 30, -(1 << 30), 3})
	i32s, _ := tensor.FromF32(tensor.Shape{}, []float32{2})
	m, feed := oneNode("QuantizeLinear", nil, 1, i32, i32s)
	cases = append(cases, quantCase{"QuantizeLinear/i32_no_zero_point", m, feed, nil})
	m, feed = oneNode("DequantizeLinear", nil, 1, i32, i32s)
	cases = append(cases, quantCase{"DequantizeLinear/i32", m, feed, nil})
	// DynamicQuantizeLinear over more elements than the partial ranges,
	// and all zeros.
	big := quantInput(r, tensor.Shape{3, 5000}, 4, 0.01)
	big.F32()[11] = 0 // DynamicQuantizeLinear's range of a NaN is unspecified
	big.F32()[5], big.F32()[12] = 40, -3
	for i := range big.F32() {
		if i%7 == 5 && i != 5 {
			big.F32()[i] = 0
		}
	}
	m, feed = oneNode("DynamicQuantizeLinear", nil, 3, big)
	cases = append(cases, quantCase{"DynamicQuantizeLinear/15000", m, feed, nil})
	zeros, _ := tensor.FromF32(tensor.Shape{4}, make([]float32, 4))
	m, feed = oneNode("DynamicQuantizeLinear", nil, 3, zeros)
	cases = append(cases, quantCase{"DynamicQuantizeLinear/zeros", m, feed, nil})
	// Integer convolutions and products with wide accumulators and
	// saturating requantization.
	u8 := func(shape ...int64) *tensor.Tensor {
		v := make([]float64, tensor.Shape(shape).NumElements())
		for i := range v {
			v[i] = float64(r.IntN(256))
		}
		x, _ := tensor.FromFloat64s(tensor.U8, shape, v)
		return x
	}
	i8 := func(shape ...int64) *tensor.Tensor {
		v := make([]float64, tensor.Shape(shape).NumElements())
		for i := range v {
			v[i] = float64(r.IntN(256) - 128)
		}
		x, _ := tensor.FromFloat64s(tensor.I8, shape, v)
		return x
	}
	f32 := func(v ...float32) *tensor.Tensor {
		shape := tensor.Shape{int64(len(v))}
		if len(v) == 1 {
			shape = tensor.Shape{}
		}
		x, _ := tensor.FromF32(shape, v)
		return x
	}
	convAttrs := graph.Attrs{"pads": []int64{1, 2, 1, 0}, "strides": []int64{2, 1}, "dilations": []int64{1, 2}, "group": int64(2)}
	m, feed = oneNode("ConvInteger", convAttrs, 1, u8(2, 4, 9, 8), i8(6, 2, 3, 3), u8(), i8(6))
	cases = append(cases, quantCase{"ConvInteger/groups_dilation", m, feed, nil})
	bias, _ := tensor.FromI32(tensor.Shape{6}, []int32{100, -1000, 0, 1 << 16, -(1 << 16), 7})
	m, feed = oneNode("QLinearConv", convAttrs, 1, u8(2, 4, 9, 8), f32(0.02), u8(), i8(6, 2, 3, 3), f32(0.01, 0.02, 0.005, 0.1, 0.03, 0.04), i8(6), f32(0.7), i8(), bias)
	cases = append(cases, quantCase{"QLinearConv/per_channel_bias", m, feed, nil})
	m, feed = oneNode("MatMulInteger", nil, 1, i8(2, 1, 5, 300), u8(3, 300, 7), i8(5), u8(7))
	cases = append(cases, quantCase{"MatMulInteger/batch_zero_points", m, feed, nil})
	m, feed = oneNode("QLinearMatMul", nil, 1, u8(2, 5, 64), f32(0.1, 0.2, 0.3, 0.05, 0.01), u8(5), i8(64, 7), f32(0.02), i8(), f32(0.9), u8())
	cases = append(cases, quantCase{"QLinearMatMul/per_row_scale", m, feed, nil})

	// Linear Resize feeds IS-Net's dynamic quantization, which turns a
	// last-bit difference into a different u8 step: every device computes
	// ONNX Runtime's sum (the GPU's separable 2-D kernel too).
	img := quantInput(r, tensor.Shape{1, 3, 13, 17}, 2, 0.01)
	img.F32()[11] = 0.25
	for _, sizes := range [][]int64{{1, 3, 26, 34}, {1, 3, 30, 41}} {
		sz, _ := tensor.FromI64(tensor.Shape{4}, sizes)
		m, feed = oneNode("Resize", graph.Attrs{"mode": "linear"}, 1, img, nil, nil, sz)
		cases = append(cases, quantCase{fmt.Sprintf("Resize/linear_%dx%d", sizes[2], sizes[3]), m, feed, nil})
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ref []*tensor.Tensor
			for _, dev := range quantDevices {
				out := runOnDevice(t, core, c.model, dev, c.feed)
				if ref == nil {
					ref = out
					if c.check != nil {
						c.check(t, out)
					}
					continue
				}
				require.Len(t, out, len(ref))
				for i := range ref {
					require.Equal(t, ref[i].Type(), out[i].Type(), "%s output %d", dev, i)
					require.Equal(t, ref[i].Shape(), out[i].Shape(), "%s output %d", dev, i)
					if !assert.Equal(t, ref[i].Contiguous().Bytes(), out[i].Contiguous().Bytes(), "%s output %d differs from CPU's bits", dev, i) {
						return
					}
				}
			}
		})
	}
}

// TestIsNetGPU runs IS-Net small on the GPU device and on HETERO:GPU,CPU
// against ONNX Runtime's mask; every ConvInteger runs as an int8 kernel
// (its runtime model says so).
func TestIsNetGPU(t *testing.T) {
	core := driver.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	for _, device := range []string{"GPU", heteroGPUCPU} {
		t.Run(device, func(t *testing.T) {
			cm := runIsNet(t, core, device)
			rm, err := cm.RuntimeModel()
			require.NoError(t, err)
			nodes, err := rm.Nodes()
			require.NoError(t, err)
			// GPU: the executed graph's fused nodes; HETERO: the user's
			// ConvInteger nodes, annotated with what ran them.
			int8 := 0
			for _, n := range nodes {
				if n.RT.Extra[driver.RuntimeLayerType] == graph.OpQuantizedConv && (n.OpType == graph.OpQuantizedConv || n.OpType == "ConvInteger") {
					int8++
					assert.Equal(t, "u8", n.RT.Extra[driver.RuntimePrecision], "%s", n.Name)
				}
			}
			assert.Equal(t, 119, int8, "every ConvInteger of IS-Net runs as a fused int8 convolution")
		})
	}
}

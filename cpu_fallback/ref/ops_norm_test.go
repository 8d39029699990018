package ref

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/cpu_fallback/internal/reftest"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

func TestBatchNormalization(t *testing.T) {
	rng := reftest.RNG(21)
	x := reftest.RandF32(rng, 2, 3, 4, 2)
	scale, bias, mean := reftest.RandF32(rng, 3), reftest.RandF32(rng, 3), reftest.RandF32(rng, 3)
	variance := reftest.RandF32(rng, 3)
	for i := range variance.F32() {
		variance.F32()[i] = variance.F32()[i]*variance.F32()[i] + 0.1
	}
	const eps = 1e-3
	got := nnRun(t, "BatchNormalization", graph.Attrs{"epsilon": float32(eps)}, 1, x, scale, bias, mean, variance)[0]
	want := make([]float32, x.NumElements())
	for i, v := range x.F32() {
		c := (i / 8) % 3
		want[i] = float32((float64(v)-float64(mean.F32()[c]))/math.Sqrt(float64(variance.F32()[c])+eps)*float64(scale.F32()[c]) + float64(bias.F32()[c]))
	}
	nnClose(t, want, got.F32(), 1e-5)

	_, err := nnRunErr("BatchNormalization", graph.Attrs{"training_mode": int64(1)}, 1, x, scale, bias, mean, variance)
	assert.ErrorContains(t, err, "training_mode")
	_, err = nnRunErr("BatchNormalization", nil, 1, x, reftest.RandF32(rng, 4), bias, mean, variance)
	assert.ErrorContains(t, err, "one per channel")
}

func TestInstanceNormalization(t *testing.T) {
	rng := reftest.RNG(22)
	x := reftest.RandF32(rng, 2, 3, 5)
	scale, bias := reftest.RandF32(rng, 3), reftest.RandF32(rng, 3)
	got := nnRun(t, "InstanceNormalization", graph.Attrs{"epsilon": float32(1e-5)}, 1, x, scale, bias)[0]
	X := x.F32()
	for p := 0; p < 6; p++ {
		c := p % 3
		m, v := 0.0, 0.0
		for _, e := range X[p*5 : (p+1)*5] {
			m += float64(e)
		}
		m /= 5
		for _, e := range X[p*5 : (p+1)*5] {
			v += (float64(e) - m) * (float64(e) - m)
		}
		v /= 5
		for j := 0; j < 5; j++ {
			want := (float64(X[p*5+j])-m)/math.Sqrt(v+1e-5)*float64(scale.F32()[c]) + float64(bias.F32()[c])
			assert.InDelta(t, want, got.F32()[p*5+j], 1e-5)
		}
	}
}

func TestLayerNormalization(t *testing.T) {
	cases := []struct {
		name        string
		x           tensor.Shape
		axis        int64
		scale, bias tensor.Shape
	}{
		{"last_axis", tensor.Shape{2, 3, 4}, -1, tensor.Shape{4}, tensor.Shape{4}},
		{"axis1", tensor.Shape{2, 3, 4}, 1, tensor.Shape{3, 4}, tensor.Shape{3, 4}},
		{"broadcast_scale_no_bias", tensor.Shape{3, 2, 5}, 1, tensor.Shape{1, 5}, nil},
		{"axis0", tensor.Shape{2, 3}, 0, tensor.Shape{2, 3}, tensor.Shape{3}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := reftest.RNG(uint64(600 + i))
			x, scale := reftest.RandF32(rng, tc.x...), reftest.RandF32(rng, tc.scale...)
			in := []*tensor.Tensor{x, scale}
			var bias *tensor.Tensor
			if tc.bias != nil {
				bias = reftest.RandF32(rng, tc.bias...)
				in = append(in, bias)
			}
			outs := nnRun(t, "LayerNormalization", graph.Attrs{"axis": tc.axis, "epsilon": float32(1e-5)}, 3, in...)
			axis := int(tc.axis)
			if axis < 0 {
				axis += len(tc.x)
			}
			inner := tc.x[axis:]
			D := nnProd(inner)
			rows := x.NumElements() / D
			statShape := tc.x.Clone()
			for d := axis; d < len(statShape); d++ {
				statShape[d] = 1
			}
			require.Equal(t, statShape, outs[1].Shape())
			require.Equal(t, statShape, outs[2].Shape())
			bval := func(b *tensor.Tensor, j int64) float64 {
				if b == nil {
					return 0
				}
				// Unidirectional broadcast of b over inner.
				idx := make([]int64, len(inner))
				rem := j
				for d := len(inner) - 1; d >= 0; d-- {
					idx[d] = rem % inner[d]
					rem /= inner[d]
				}
				bs := b.Shape()
				o := int64(0)
				for d := range bs {
					v := idx[d+len(inner)-len(bs)]
					if bs[d] == 1 {
						v = 0
					}
					o = o*bs[d] + v
				}
				return float64(b.F32()[o])
			}
			X := x.F32()
			for r := int64(0); r < rows; r++ {
				m, v := 0.0, 0.0
				for j := int64(0); j < D; j++ {
					m += float64(X[r*D+j])
				}
				m /= float64(D)
				for j := int64(0); j < D; j++ {
					v += (float64(X[r*D+j]) - m) * (float64(X[r*D+j]) - m)
				}
				inv := 1 / math.Sqrt(v/float64(D)+1e-5)
				assert.InDelta(t, m, outs[1].F32()[r], 1e-6)
				assert.InDelta(t, inv, outs[2].F32()[r], 1e-4*inv)
				for j := int64(0); j < D; j++ {
					want := (float64(X[r*D+j])-m)*inv*bval(scale, j) + bval(bias, j)
					assert.InDelta(t, want, outs[0].F32()[r*D+j], 1e-5)
				}
			}
		})
	}
}

func TestLayerNormalizationF16KeepsF32Stats(t *testing.T) {
	rng := reftest.RNG(23)
	x, _ := reftest.RandF32(rng, 2, 4).Convert(tensor.F16)
	s, _ := reftest.RandF32(rng, 4).Convert(tensor.F16)
	outs := nnRun(t, "LayerNormalization", nil, 3, x, s)
	assert.Equal(t, tensor.F16, outs[0].Type())
	assert.Equal(t, tensor.F32, outs[1].Type())
	assert.Equal(t, tensor.F32, outs[2].Type())
}

func TestSoftmax(t *testing.T) {
	for _, axis := range []int64{0, 1, 2, -1} {
		for _, op := range []string{"Softmax", "LogSoftmax"} {
			t.Run(op, func(t *testing.T) {
				x := reftest.RandF32(reftest.RNG(uint64(30+axis)), 2, 3, 4)
				for i := range x.F32() {
					x.F32()[i] *= 20 // large values exercise the max subtraction
				}
				got := nnRun(t, op, graph.Attrs{"axis": axis}, 1, x)[0]
				xs := x.Shape()
				a := int(axis)
				if a < 0 {
					a += 3
				}
				str := tensor.ContiguousStrides(xs)
				reftest.ForIndex(xs, func(idx []int64) {
					base := reftest.Flat(xs, idx) - idx[a]*str[a]
					m := math.Inf(-1)
					for j := int64(0); j < xs[a]; j++ {
						m = math.Max(m, float64(x.F32()[base+j*str[a]]))
					}
					s := 0.0
					for j := int64(0); j < xs[a]; j++ {
						s += math.Exp(float64(x.F32()[base+j*str[a]]) - m)
					}
					v := float64(x.F32()[reftest.Flat(xs, idx)])
					want := math.Exp(v-m) / s
					if op == "LogSoftmax" {
						want = v - m - math.Log(s)
					}
					assert.InDelta(t, want, got.F32()[reftest.Flat(xs, idx)], 1e-5)
				})
			})
		}
	}
	_, err := nnRunErr("Softmax", graph.Attrs{"axis": int64(3)}, 1, reftest.RandF32(reftest.RNG(1), 2, 3))
	assert.Error(t, err)
}

package ir

import (
	"math"
	"testing"

	"github.com/clinfer/clinfer/tensor"
)

// opCase is one IR snippet, its inputs and the outputs OpenVINO's
// specification gives for them (worked out by hand or by the small Go
// functions beside the case, never by clinfer's own kernels).
type opCase struct {
	name  string
	build func(b *irb) []port
	want  func() []*tensor.Tensor
	tol   float64
}

// f32s maps f over x's elements into a new f32 tensor of x's shape.
func f32s(x *tensor.Tensor, f func(i int, v float64) float64) *tensor.Tensor {
	v := x.Float64s()
	out := make([]float32, len(v))
	for i := range v {
		out[i] = float32(f(i, v[i]))
	}
	return tf32(x.Shape(), out...)
}

// gather builds an f32 tensor of shape whose element at index idx is
// f(idx).
func gather(shape tensor.Shape, f func(idx []int64) float64) *tensor.Tensor {
	n := shape.NumElements()
	out := make([]float32, n)
	idx := make([]int64, len(shape))
	for i := int64(0); i < n; i++ {
		r := i
		for a := len(shape) - 1; a >= 0; a-- {
			idx[a] = r % shape[a]
			r /= shape[a]
		}
		out[i] = float32(f(idx))
	}
	return tf32(shape, out...)
}

// at reads element idx of an f32 tensor of shape s.
func at(x *tensor.Tensor, idx ...int64) float64 {
	s := x.Shape()
	off := int64(0)
	for a := range s {
		off = off*s[a] + idx[a]
	}
	return float64(x.F32()[off])
}

func TestOpsAgainstSpec(t *testing.T) {
	x234 := iota32(2, 3, 4)
	signed := tf32(tensor.Shape{2, 3}, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5)
	img := tf32(tensor.Shape{1, 4, 2, 2}, 1, 2, 3, 4, -1, -2, 3, 5, 0, 0.5, 1, 8, 2, 2, 2, 3)
	cases := []opCase{
		{name: "Divide python floor on integers", build: func(b *irb) []port {
			a := b.input(ti32(tensor.Shape{4}, -7, 7, -7, 7))
			d := b.input(ti32(tensor.Shape{4}, 2, 2, -2, -2))
			return []port{b.op1("Divide", "opset1", `m_pythondivision="true"`, a, d), b.op1("Divide", "opset1", `m_pythondivision="false"`, a, d)}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{ti32(tensor.Shape{4}, -4, 3, 3, -4), ti32(tensor.Shape{4}, -3, 3, 3, -3)}
		}},
		{name: "SquaredDifference and FloorMod vs Mod", build: func(b *irb) []port {
			a := b.input(tf32(tensor.Shape{3}, -7, 5, 2))
			d := b.input(tf32(tensor.Shape{3}, 3, -3, 5))
			return []port{b.op1("SquaredDifference", "opset1", "", a, d), b.op1("FloorMod", "opset1", "", a, d), b.op1("Mod", "opset1", "", a, d)}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{tf32(tensor.Shape{3}, 100, 64, 9), tf32(tensor.Shape{3}, 2, -1, 2), tf32(tensor.Shape{3}, -1, 2, 2)}
		}},
		{name: "Round both modes", build: func(b *irb) []port {
			x := b.input(signed)
			return []port{b.op1("Round", "opset5", `mode="half_to_even"`, x), b.op1("Round", "opset5", `mode="half_away_from_zero"`, x)}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{tf32(tensor.Shape{2, 3}, -2, -2, 0, 0, 2, 2), tf32(tensor.Shape{2, 3}, -3, -2, -1, 1, 2, 3)}
		}},
		{name: "pdpd broadcast", build: func(b *irb) []port {
			a := b.input(iota32(2, 3, 2))
			d := b.input(tf32(tensor.Shape{3}, 10, 20, 30))
			return []port{b.op1("Add", "opset1", `auto_broadcast="pdpd" axis="1"`, a, d)}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{gather(tensor.Shape{2, 3, 2}, func(i []int64) float64 { return float64(i[0]*6+i[1]*2+i[2]) + 10*float64(i[1]+1) })}
		}},
		{name: "NotEqual IsFinite IsInf", build: func(b *irb) []port {
			x := b.input(tf32(tensor.Shape{4}, 1, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())))
			y := b.input(tf32(tensor.Shape{4}, 1, 2, float32(math.Inf(-1)), 0))
			return []port{b.op1("NotEqual", "opset1", "", x, y), b.op1("IsFinite", "opset10", "", x),
				b.op1("IsInf", "opset10", `detect_negative="false" detect_positive="true"`, x)}
		}, want: func() []*tensor.Tensor {
			b := func(v ...bool) *tensor.Tensor { x, _ := tensor.FromBool(tensor.Shape{4}, v); return x }
			return []*tensor.Tensor{b(false, true, false, true), b(true, false, false, false), b(false, true, false, false)}
		}},
		{name: "Xor of opset1 and LogicalXor", build: func(b *irb) []port {
			bools := func(v ...bool) *tensor.Tensor { x, _ := tensor.FromBool(tensor.Shape{4}, v); return x }
			x, y := b.input(bools(false, false, true, true)), b.input(bools(false, true, false, true))
			return []port{b.op1("Xor", "opset1", "", x, y), b.op1("LogicalXor", "opset1", "", x, y)}
		}, want: func() []*tensor.Tensor {
			x, _ := tensor.FromBool(tensor.Shape{4}, []bool{false, true, true, false})
			return []*tensor.Tensor{x, x}
		}},
		{name: "ReduceLogicalAnd and ReduceLogicalOr", build: func(b *irb) []port {
			x, _ := tensor.FromBool(tensor.Shape{3, 3}, []bool{true, true, true, true, false, true, false, false, false})
			in := b.input(x)
			return []port{b.op1("ReduceLogicalAnd", "opset1", `keep_dims="false"`, in, b.i64(1)),
				b.op1("ReduceLogicalOr", "opset1", `keep_dims="true"`, in, b.i64(1)),
				b.op1("ReduceLogicalOr", "opset1", `keep_dims="false"`, in, b.i64(0, 1))}
		}, want: func() []*tensor.Tensor {
			all, _ := tensor.FromBool(tensor.Shape{3}, []bool{true, false, false})
			anyKeep, _ := tensor.FromBool(tensor.Shape{3, 1}, []bool{true, true, false})
			anyAll, _ := tensor.FromBool(tensor.Shape{}, []bool{true})
			return []*tensor.Tensor{all, anyKeep, anyAll}
		}},
		{name: "Clamp on integers rounds the bounds inwards", build: func(b *irb) []port {
			x := b.input(ti32(tensor.Shape{5}, -3, -1, 0, 2, 3))
			return []port{b.op1("Clamp", "opset1", `min="-1.5" max="2.5"`, x)}
		}, want: func() []*tensor.Tensor { return []*tensor.Tensor{ti32(tensor.Shape{5}, -1, -1, 0, 2, 2)} }},
		{name: "PRelu per channel", build: func(b *irb) []port {
			x := b.input(img)
			return []port{b.op1("PRelu", "opset1", "", x, b.constant(tf32(tensor.Shape{4}, 0.1, 0.2, 0.3, 0.4)))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{gather(img.Shape(), func(i []int64) float64 {
				v := at(img, i...)
				if v < 0 {
					return v * 0.1 * float64(i[1]+1)
				}
				return v
			})}
		}, tol: 1e-6},
		{name: "Swish HSigmoid HardSigmoid Selu", build: func(b *irb) []port {
			x := b.input(signed)
			return []port{b.op1("Swish", "opset4", "", x, b.scalar(tensor.F32, 2)), b.op1("HSigmoid", "opset5", "", x),
				b.op1("HardSigmoid", "opset1", "", x, b.scalar(tensor.F32, 0.3), b.scalar(tensor.F32, 0.4)),
				b.op1("Selu", "opset1", "", x, b.constant(tf32(tensor.Shape{1}, 1.5)), b.constant(tf32(tensor.Shape{1}, 2)))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{
				f32s(signed, func(_ int, v float64) float64 { return v / (1 + math.Exp(-2*v)) }),
				f32s(signed, func(_ int, v float64) float64 { return math.Min(math.Max(v/6+0.5, 0), 1) }),
				f32s(signed, func(_ int, v float64) float64 { return math.Min(math.Max(0.3*v+0.4, 0), 1) }),
				f32s(signed, func(_ int, v float64) float64 {
					if v > 0 {
						return 2 * v
					}
					return 2 * 1.5 * (math.Exp(v) - 1)
				}),
			}
		}, tol: 1e-5},
		{name: "StridedSlice masks", build: func(b *irb) []port {
			x := b.input(x234)
			ss := func(data string, begin, end []int64, strides ...int64) port {
				in := []port{x, b.i64(begin...), b.i64(end...)}
				if strides != nil {
					in = append(in, b.i64(strides...))
				}
				return b.op1("StridedSlice", "opset1", data, in...)
			}
			return []port{
				ss(`begin_mask="0,0" end_mask="0,0"`, []int64{0, 1}, []int64{2, 3}),
				ss(`begin_mask="0,1" end_mask="1,0"`, []int64{1, 2}, []int64{0, 3}),
				ss(`begin_mask="0" end_mask="0" shrink_axis_mask="1"`, []int64{1}, []int64{2}),
				ss(`begin_mask="0,0" end_mask="0,0" new_axis_mask="1,0"`, []int64{0, 0}, []int64{0, 2}),
				ss(`begin_mask="0,0" end_mask="0,0" ellipsis_mask="1,0"`, []int64{0, 1}, []int64{0, 3}),
				ss(`begin_mask="0" end_mask="1"`, []int64{-1}, []int64{0}, -1),
				ss(`begin_mask="1,1,0" end_mask="1,1,0" shrink_axis_mask="0,0,1"`, []int64{0, 0, -1}, []int64{0, 0, 0}),
			}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{
				gather(tensor.Shape{2, 2, 4}, func(i []int64) float64 { return at(x234, i[0], i[1]+1, i[2]) }),
				gather(tensor.Shape{1, 3, 4}, func(i []int64) float64 { return at(x234, i[0]+1, i[1], i[2]) }),
				gather(tensor.Shape{3, 4}, func(i []int64) float64 { return at(x234, 1, i[0], i[1]) }),
				gather(tensor.Shape{1, 2, 3, 4}, func(i []int64) float64 { return at(x234, i[1], i[2], i[3]) }),
				gather(tensor.Shape{2, 3, 2}, func(i []int64) float64 { return at(x234, i[0], i[1], i[2]+1) }),
				gather(tensor.Shape{2, 3, 4}, func(i []int64) float64 { return at(x234, 1-i[0], i[1], i[2]) }),
				gather(tensor.Shape{2, 3}, func(i []int64) float64 { return at(x234, i[0], i[1], 3) }),
			}
		}},
		{name: "MVN and NormalizeL2", build: func(b *irb) []port {
			x := b.input(img)
			return []port{
				b.op1("MVN", "opset6", `eps="0.001" eps_mode="inside_sqrt" normalize_variance="true"`, x, b.i64(2, 3)),
				b.op1("MVN", "opset2", `eps="0.001" across_channels="true" normalize_variance="false"`, x),
				b.op1("NormalizeL2", "opset1", `eps="0.5" eps_mode="max"`, x, b.i64(1)),
			}
		}, want: func() []*tensor.Tensor {
			mvn := gather(img.Shape(), func(i []int64) float64 {
				var s, ss float64
				for h := int64(0); h < 2; h++ {
					for w := int64(0); w < 2; w++ {
						s += at(img, 0, i[1], h, w)
					}
				}
				mean := s / 4
				for h := int64(0); h < 2; h++ {
					for w := int64(0); w < 2; w++ {
						d := at(img, 0, i[1], h, w) - mean
						ss += d * d
					}
				}
				return (at(img, i...) - mean) / math.Sqrt(ss/4+0.001)
			})
			var total float64
			for _, v := range img.Float64s() {
				total += v
			}
			center := f32s(img, func(_ int, v float64) float64 { return v - total/16 })
			l2 := gather(img.Shape(), func(i []int64) float64 {
				var s float64
				for c := int64(0); c < 4; c++ {
					v := at(img, 0, c, i[2], i[3])
					s += v * v
				}
				return at(img, i...) / math.Sqrt(math.Max(s, 0.5))
			})
			return []*tensor.Tensor{mvn, center, l2}
		}, tol: 1e-5},
		{name: "GroupNormalization", build: func(b *irb) []port {
			x := b.input(img)
			return []port{b.op1("GroupNormalization", "opset12", `num_groups="2" epsilon="0.01"`, x,
				b.constant(tf32(tensor.Shape{4}, 1, 2, 3, 4)), b.constant(tf32(tensor.Shape{4}, 0, 1, 0, -1)))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{gather(img.Shape(), func(i []int64) float64 {
				g := i[1] / 2
				var s, ss float64
				for c := g * 2; c < g*2+2; c++ {
					for h := int64(0); h < 2; h++ {
						for w := int64(0); w < 2; w++ {
							s += at(img, 0, c, h, w)
						}
					}
				}
				mean := s / 8
				for c := g * 2; c < g*2+2; c++ {
					for h := int64(0); h < 2; h++ {
						for w := int64(0); w < 2; w++ {
							d := at(img, 0, c, h, w) - mean
							ss += d * d
						}
					}
				}
				scale, bias := []float64{1, 2, 3, 4}[i[1]], []float64{0, 1, 0, -1}[i[1]]
				return (at(img, i...)-mean)/math.Sqrt(ss/8+0.01)*scale + bias
			})}
		}, tol: 1e-5},
		{name: "FakeQuantize", build: func(b *irb) []port {
			x := b.input(tf32(tensor.Shape{1, 2, 3}, -1, 0.1, 0.26, 0.5, 0.9, 2))
			return []port{b.op1("FakeQuantize", "opset1", `levels="5"`, x, b.scalar(tensor.F32, 0), b.scalar(tensor.F32, 1),
				b.scalar(tensor.F32, -2), b.scalar(tensor.F32, 2))}
		}, want: func() []*tensor.Tensor {
			// Five levels over [0, 1] map onto -2, -1, 0, 1, 2.
			return []*tensor.Tensor{tf32(tensor.Shape{1, 2, 3}, -2, -2, -1, 0, 2, 2)}
		}, tol: 1e-6},
		{name: "Broadcast explicit and bidirectional", build: func(b *irb) []port {
			x := b.input(tf32(tensor.Shape{3}, 1, 2, 3))
			y := b.input(tf32(tensor.Shape{3, 1}, 10, 20, 30))
			return []port{b.op1("Broadcast", "opset3", `mode="explicit"`, x, b.i64(2, 3, 2), b.i64(1)),
				b.op1("Broadcast", "opset3", `mode="bidirectional"`, y, b.i64(1, 2))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{gather(tensor.Shape{2, 3, 2}, func(i []int64) float64 { return float64(i[1] + 1) }),
				gather(tensor.Shape{3, 2}, func(i []int64) float64 { return float64(10 * (i[0] + 1)) })}
		}},
		{name: "ShuffleChannels", build: func(b *irb) []port {
			return []port{b.op1("ShuffleChannels", "opset1", `axis="1" group="2"`, b.input(img))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{gather(img.Shape(), func(i []int64) float64 { return at(img, 0, []int64{0, 2, 1, 3}[i[1]], i[2], i[3]) })}
		}},
		{name: "BatchNormInference-1 takes gamma and beta first", build: func(b *irb) []port {
			x := b.input(img)
			c := func(v ...float32) port { return b.constant(tf32(tensor.Shape{4}, v...)) }
			return []port{b.op1("BatchNormInference", "opset1", `epsilon="0"`, c(1, 2, 1, 2), c(0, 0, 1, 1), x, c(1, 1, 0, 0), c(1, 4, 1, 4))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{gather(img.Shape(), func(i []int64) float64 {
				g, be, m, v := []float64{1, 2, 1, 2}[i[1]], []float64{0, 0, 1, 1}[i[1]], []float64{1, 1, 0, 0}[i[1]], []float64{1, 4, 1, 4}[i[1]]
				return (at(img, i...)-m)/math.Sqrt(v)*g + be
			})}
		}, tol: 1e-6},
		{name: "MatMul transposes", build: func(b *irb) []port {
			a := b.input(iota32(2, 3))
			c := b.input(iota32(4, 3))
			return []port{b.op1("MatMul", "opset1", `transpose_a="false" transpose_b="true"`, a, c)}
		}, want: func() []*tensor.Tensor {
			a, c := iota32(2, 3), iota32(4, 3)
			return []*tensor.Tensor{gather(tensor.Shape{2, 4}, func(i []int64) float64 {
				var s float64
				for k := int64(0); k < 3; k++ {
					s += at(a, i[0], k) * at(c, i[1], k)
				}
				return s
			})}
		}},
		{name: "VariadicSplit with -1 and Split", build: func(b *irb) []port {
			x := b.input(x234)
			v := b.op("VariadicSplit", "opset1", "", 2, x, b.i64(2), b.i64(1, -1))
			s := b.op("Split", "opset1", `num_splits="2"`, 2, x, b.scalar(tensor.I64, 0))
			return []port{v[0], v[1], s[1]}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{gather(tensor.Shape{2, 3, 1}, func(i []int64) float64 { return at(x234, i[0], i[1], 0) }),
				gather(tensor.Shape{2, 3, 3}, func(i []int64) float64 { return at(x234, i[0], i[1], i[2]+1) }),
				gather(tensor.Shape{1, 3, 4}, func(i []int64) float64 { return at(x234, 1, i[1], i[2]) })}
		}},
		{name: "TopK min by value with i32 indices", build: func(b *irb) []port {
			x := b.input(tf32(tensor.Shape{2, 4}, 5, 1, 4, 2, 0, 9, -1, 3))
			return b.op("TopK", "opset11", `axis="1" mode="min" sort="value" index_element_type="i32"`, 2, x, b.scalar(tensor.I64, 2))
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{tf32(tensor.Shape{2, 2}, 1, 2, -1, 0), ti32(tensor.Shape{2, 2}, 1, 3, 2, 0)}
		}},
		{name: "OneHot Gather ScatterUpdate Tile", build: func(b *irb) []port {
			idx := b.input(ti32(tensor.Shape{3}, 2, 0, -1))
			x := b.input(iota32(3, 2))
			return []port{
				b.op1("OneHot", "opset1", `axis="-1"`, idx, b.scalar(tensor.I64, 3), b.scalar(tensor.F32, 5), b.scalar(tensor.F32, -1)),
				b.op1("Gather", "opset8", `batch_dims="0"`, x, idx, b.scalar(tensor.I64, 0)),
				b.op1("ScatterUpdate", "opset3", "", x, b.constant(ti32(tensor.Shape{1}, 1)), b.constant(tf32(tensor.Shape{1, 2}, 7, 8)), b.scalar(tensor.I64, 0)),
				b.op1("Tile", "opset1", "", x, b.i64(2)),
			}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{tf32(tensor.Shape{3, 3}, -1, -1, 5, 5, -1, -1, -1, -1, -1),
				tf32(tensor.Shape{3, 2}, 4, 5, 0, 1, 4, 5), tf32(tensor.Shape{3, 2}, 0, 1, 7, 8, 4, 5),
				tf32(tensor.Shape{3, 4}, 0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5)}
		}},
		{name: "Pad-12 negative and edge", build: func(b *irb) []port {
			x := b.input(iota32(2, 3))
			return []port{b.op1("Pad", "opset12", `pad_mode="constant"`, x, b.i64(0, -1), b.i64(1, 1), b.scalar(tensor.F32, 9)),
				b.op1("Pad", "opset12", `pad_mode="edge"`, x, b.i64(1, 0), b.i64(0, 1))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{tf32(tensor.Shape{3, 3}, 1, 2, 9, 4, 5, 9, 9, 9, 9), tf32(tensor.Shape{3, 4}, 0, 1, 2, 2, 0, 1, 2, 2, 3, 4, 5, 5)}
		}},
		{name: "ReduceMean empty axes is the identity, Eye, Range-4, ShapeOf i32", build: func(b *irb) []port {
			x := b.input(iota32(2, 3))
			return []port{b.op1("ReduceMean", "opset1", `keep_dims="false"`, x, b.constant(ti64())),
				b.op1("Eye", "opset9", `output_type="f32"`, b.scalar(tensor.I64, 2), b.scalar(tensor.I64, 3), b.scalar(tensor.I64, 1)),
				b.op1("Range", "opset4", `output_type="f32"`, b.scalar(tensor.I32, 1), b.scalar(tensor.I32, 7), b.scalar(tensor.I32, 2)),
				b.op1("ShapeOf", "opset3", `output_type="i32"`, x)}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{iota32(2, 3), tf32(tensor.Shape{2, 3}, 0, 1, 0, 0, 0, 1), tf32(tensor.Shape{3}, 1, 3, 5), ti32(tensor.Shape{2}, 2, 3)}
		}},
		{name: "Reshape special_zero, Transpose empty order, Softmax-1", build: func(b *irb) []port {
			x := b.input(x234)
			return []port{b.op1("Reshape", "opset1", `special_zero="true"`, x, b.i64(0, -1)),
				b.op1("Transpose", "opset1", "", x, b.constant(ti64())),
				b.op1("SoftMax", "opset1", "", b.input(tf32(tensor.Shape{2, 2}, 0, float32(math.Log(3)), 1, 1)))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{iota32(2, 12), gather(tensor.Shape{4, 3, 2}, func(i []int64) float64 { return at(x234, i[2], i[1], i[0]) }),
				tf32(tensor.Shape{2, 2}, 0.25, 0.75, 0.5, 0.5)}
		}, tol: 1e-6},
		{name: "Interpolate nearest by sizes and linear by scales", build: func(b *irb) []port {
			x := b.input(tf32(tensor.Shape{1, 1, 2, 2}, 1, 2, 3, 4))
			return []port{
				b.op1("Interpolate", "opset11", `mode="nearest" shape_calculation_mode="sizes" coordinate_transformation_mode="asymmetric" nearest_mode="floor"`, x, b.i64(4, 4), b.i64(2, 3)),
				b.op1("Interpolate", "opset4", `mode="linear_onnx" shape_calculation_mode="scales" coordinate_transformation_mode="align_corners"`, x, b.i64(3, 3), b.constant(tf32(tensor.Shape{2}, 1.5, 1.5)), b.i64(2, 3)),
			}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{gather(tensor.Shape{1, 1, 4, 4}, func(i []int64) float64 { return float64(1 + i[2]/2*2 + i[3]/2) }),
				tf32(tensor.Shape{1, 1, 3, 3}, 1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4)}
		}, tol: 1e-6},
		{name: "DFT of one axis", build: func(b *irb) []port {
			x := b.input(tf32(tensor.Shape{4, 2}, 1, 0, 2, 0, 3, 0, 4, 0))
			return []port{b.op1("DFT", "opset7", "", x, b.i64(0)), b.op1("RDFT", "opset9", "", b.input(tf32(tensor.Shape{4}, 1, 2, 3, 4)), b.i64(-1))}
		}, want: func() []*tensor.Tensor {
			return []*tensor.Tensor{tf32(tensor.Shape{4, 2}, 10, 0, -2, 2, -2, 0, -2, -2), tf32(tensor.Shape{3, 2}, 10, 0, -2, 2, -2, 0)}
		}, tol: 1e-5},
	}
	runCases(t, cases)
}

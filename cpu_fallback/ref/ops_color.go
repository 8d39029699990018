package ref

import (
	"math"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// colorKernels are the colour conversions.
func colorKernels() map[string]Kernel {
	return map[string]Kernel{"NV12toRGB": nv12Kernel, "NV12toBGR": nv12Kernel}
}

// nv12Kernel converts an NV12 image to RGB or BGR (graph/ops_color.go).
func nv12Kernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	ys := in[0].Shape()
	if len(ys) != 4 {
		return nil, n.Errorf("the luma input has shape %v, want [N,H,W,1]", ys)
	}
	b, h, w := ys[0], ys[1], ys[2]
	yv := in[0].Float64s()
	var uv []float64
	planeStride := h * w // luma values per image
	uvOff := int64(0)    // where image i's chroma starts, relative to its base
	if len(in) == 1 || in[1] == nil {
		h = h / 3 * 2
		planeStride = h * w * 3 / 2
		uvOff = h * w
		uv = yv
	} else {
		uv = in[1].Float64s()
	}
	out, err := tensor.New(in[0].Type(), tensor.Shape{b, h, w, 3})
	if err != nil {
		return nil, err
	}
	k := graph.NV12Coefficients
	bgr := n.OpType == "NV12toBGR"
	round := in[0].Type() == tensor.U8
	vals := make([]float64, b*h*w*3)
	for i := int64(0); i < b; i++ {
		for r := int64(0); r < h; r++ {
			for c := int64(0); c < w; c++ {
				y := yv[i*planeStride+r*w+c]
				var ci int64
				if len(in) == 1 || in[1] == nil {
					ci = i*planeStride + uvOff + (r/2)*w + (c/2)*2
				} else {
					ci = i*(h/2)*(w/2)*2 + (r/2)*(w/2)*2 + (c/2)*2
				}
				u, v := uv[ci]-128, uv[ci+1]-128
				yy := float64(k[0]) * (y - 16)
				rgb := [3]float64{yy + float64(k[1])*v, yy - float64(k[2])*v - float64(k[3])*u, yy + float64(k[4])*u}
				if bgr {
					rgb[0], rgb[2] = rgb[2], rgb[0]
				}
				o := ((i*h+r)*w + c) * 3
				for j, x := range rgb {
					x = math.Min(math.Max(x, 0), 255)
					if round {
						x = math.RoundToEven(x)
					}
					vals[o+int64(j)] = x
				}
			}
		}
	}
	res, err := tensor.FromFloat64s(in[0].Type(), out.Shape(), vals)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{res}, nil
}

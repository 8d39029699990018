package graph

import "github.com/clinfer/clinfer/tensor"

// The colour conversions of OpenVINO's opset8: NV12toRGB and NV12toBGR
// take an NV12 image, either as one input [N, H*3/2, W, 1] (the luma
// plane's H rows, then H/2 rows of interleaved chroma) or as two, the
// luma plane Y [N, H, W, 1] and the chroma plane UV [N, H/2, W/2, 2], and
// make an [N, H, W, 3] image of the same element type (u8 or float) with
// the ITU-R BT.601 limited-range conversion
//
//	R = 1.164 (Y-16) + 1.596 (V-128)
//	G = 1.164 (Y-16) - 0.813 (V-128) - 0.391 (U-128)
//	B = 1.164 (Y-16) + 2.018 (U-128)
//
// each pixel reading the chroma of its 2x2 block; u8 results are rounded
// to the nearest integer and clamped to [0, 255].

// NV12Coefficients are the conversion's coefficients, in the order of the
// formula above: every device computes with these.
var NV12Coefficients = [5]float32{1.164, 1.596, 0.813, 0.391, 2.018}

// NV12Dims returns the batch, height and width of NV12toRGB/BGR node n's
// image from its inputs' shapes (dynamic where they are).
func NV12Dims(n *Node) (b, h, w Dim, err error) {
	y, err := requiredInput(n, 0)
	if err != nil {
		return
	}
	ys := y.Shape()
	if ys.RankKnown && (len(ys.Dims) != 4 || (ys.Dims[3].IsStatic() && ys.Dims[3].Size != 1)) {
		return b, h, w, n.Errorf("the luma input has shape %v, want [N,H,W,1]", ys)
	}
	if !ys.RankKnown {
		return DynamicDim(""), DynamicDim(""), DynamicDim(""), nil
	}
	b, h, w = ys.Dims[0], ys.Dims[1], ys.Dims[2]
	if len(n.Inputs) == 1 {
		// One plane: H*3/2 rows, so a multiple of 3 (H = rows/3*2 is
		// then even).
		if h.IsStatic() {
			if h.Size%3 != 0 {
				return b, h, w, n.Errorf("the NV12 image has %d rows, want H*3/2 for an even H", h.Size)
			}
			h = StaticDim(h.Size / 3 * 2)
		} else {
			h = DynamicDim("")
		}
	} else {
		uv, err := requiredInput(n, 1)
		if err != nil {
			return b, h, w, err
		}
		if uv.Type() != y.Type() {
			return b, h, w, n.Errorf("the planes are %v and %v, want one type", y.Type(), uv.Type())
		}
		us := uv.Shape()
		if us.RankKnown {
			if len(us.Dims) != 4 || (us.Dims[3].IsStatic() && us.Dims[3].Size != 2) {
				return b, h, w, n.Errorf("the chroma input has shape %v, want [N,H/2,W/2,2]", us)
			}
			for i, d := range []Dim{h, w} {
				if u := us.Dims[1+i]; d.IsStatic() && u.IsStatic() && u.Size*2 != d.Size {
					return b, h, w, n.Errorf("the chroma plane %v is not half the luma plane %v", us, ys)
				}
			}
		}
	}
	for _, d := range []Dim{h, w} {
		if d.IsStatic() && d.Size%2 != 0 {
			return b, h, w, n.Errorf("the image is %v x %v, want an even height and width", h, w)
		}
	}
	return b, h, w, nil
}

func inferNV12(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	b, h, w, err := NV12Dims(n)
	if err != nil {
		return err
	}
	t := n.Inputs[0].Type()
	if t != tensor.U8 && !t.IsFloat() {
		return n.Errorf("the image is %v, want u8 or a float type", t)
	}
	setOutput(n, 0, t, PartialShape{RankKnown: true, Dims: []Dim{b, h, w, StaticDim(3)}})
	return nil
}

// colorOps are the colour conversions.
var colorOps = []OpSpec{
	{Name: "NV12toRGB", MinInputs: 1, MaxInputs: 2, Infer: inferNV12, Examples: nv12Examples},
	{Name: "NV12toBGR", MinInputs: 1, MaxInputs: 2, Infer: inferNV12, Examples: nv12Examples},
}

var nv12Examples = []Example{
	{Name: "two_planes_u8", Inputs: []ExampleInput{{Type: tensor.U8, Shape: []int64{2, 4, 6, 1}}, {Type: tensor.U8, Shape: []int64{2, 2, 3, 2}}}},
	{Name: "one_plane_f32", Inputs: []ExampleInput{{Shape: []int64{1, 6, 8, 1}, Positive: true}}},
}

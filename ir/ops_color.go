package ir

import "github.com/clinfer/clinfer/graph"

// colorImports are the colour conversions of opset8, the op set's own.
var colorImports = []importRow{
	{"NV12toRGB", 8, same("NV12toRGB")},
	{"NV12toBGR", 8, same("NV12toBGR")},
	{"I420toRGB", 8, importI420("NV12toRGB")},
	{"I420toBGR", 8, importI420("NV12toBGR")},
}

// importI420 reads I420toRGB/BGR-8 as the NV12 conversion (the same
// BT.601 formula) of the chroma planes interleaved: three planes Y, U, V
// ([N, H/2, W/2, 1] each) concatenated on the last axis, or one plane
// [N, H*3/2, W, 1] whose rows past H hold U's H*W/4 values then V's,
// reshaped to [N, 2, H/2, W/2] and moved to [N, H/2, W/2, 2] (H and W
// static).
func importI420(op string) importFunc {
	return func(c *layerCtx) ([]graph.Output, error) {
		if len(c.in) == 3 {
			uv, err := c.op("Concat", "uv", graph.Attrs{"axis": int64(3)}, c.in[1], c.in[2])
			if err != nil {
				return nil, err
			}
			return one(c.op(op, "", nil, c.in[0], uv))
		}
		if err := c.inputs(1, 1); err != nil {
			return nil, err
		}
		s := c.in[0].Shape()
		if !s.RankKnown || s.Rank() != 4 || !s.Dims[1].IsStatic() || !s.Dims[2].IsStatic() || s.Dims[1].Size*2%3 != 0 || s.Dims[1].Size*2/3%2 != 0 || s.Dims[2].Size%2 != 0 {
			return nil, c.errorf(ErrUnsupportedAttribute, "an I420 plane of shape %v: the reader needs [N, H*3/2, W, 1] with H and W static and even", s)
		}
		h, w := s.Dims[1].Size/3*2, s.Dims[2].Size
		y, err := c.op("Slice", "y", nil, c.in[0], c.constI64("y_start", false, 0), c.constI64("y_end", false, h), c.constI64("rows", false, 1))
		if err != nil {
			return nil, err
		}
		uv, err := c.op("Slice", "chroma", nil, c.in[0], c.constI64("chroma_start", false, h), c.constI64("chroma_end", false, h*3/2), c.constI64("rows", false, 1))
		if err != nil {
			return nil, err
		}
		if uv, err = c.op("Reshape", "planes", nil, uv, c.constI64("planes_shape", false, 0, 2, h/2, w/2)); err != nil {
			return nil, err
		}
		if uv, err = c.op("Transpose", "uv", graph.Attrs{"perm": []int64{0, 2, 3, 1}}, uv); err != nil {
			return nil, err
		}
		return one(c.op(op, "", nil, y, uv))
	}
}

// colorExports write them back.
var colorExports = map[string]exportFunc{
	"NV12toRGB": sameAs("NV12toRGB", 8),
	"NV12toBGR": sameAs("NV12toBGR", 8),
}

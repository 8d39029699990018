package graph

import "github.com/clinfer/clinfer/tensor"

// Col2ImGeometry is Col2Im's geometry: per spatial axis, the image size,
// block (kernel) size, dilation, stride, begin and end pads, and the
// number of block positions along it.
type Col2ImGeometry struct {
	Image, Block, Dil, Stride, PadB, PadE, Blocks []int64
}

// Col2ImGeometryOf reads node n's attributes for image and block shapes.
func Col2ImGeometryOf(n *Node, image, block []int64) (*Col2ImGeometry, error) {
	r := len(image)
	if r == 0 || len(block) != r {
		return nil, n.Errorf("image_shape %v and block_shape %v must have one size per spatial axis", image, block)
	}
	ones := make([]int64, r)
	for i := range ones {
		ones[i] = 1
	}
	g := &Col2ImGeometry{Image: image, Block: block, Dil: n.Attrs.Ints("dilations", ones), Stride: n.Attrs.Ints("strides", ones)}
	pads := n.Attrs.Ints("pads", make([]int64, 2*r))
	if len(g.Dil) != r || len(g.Stride) != r || len(pads) != 2*r {
		return nil, n.Errorf("dilations %v, strides %v and pads %v do not fit %d spatial axes", g.Dil, g.Stride, pads, r)
	}
	g.PadB, g.PadE = pads[:r], pads[r:]
	for d := range r {
		span := g.Dil[d]*(block[d]-1) + 1
		if g.Stride[d] < 1 || g.Dil[d] < 1 || block[d] < 1 || image[d]+g.PadB[d]+g.PadE[d] < span {
			return nil, n.Errorf("axis %d: image %d with pads %d, %d is smaller than the block's span %d (or a stride or dilation is not positive)", d, image[d], g.PadB[d], g.PadE[d], span)
		}
		g.Blocks = append(g.Blocks, (image[d]+g.PadB[d]+g.PadE[d]-span)/g.Stride[d]+1)
	}
	return g, nil
}

// inferCol2Im is Col2Im(input [N, C*prod(block), L], image_shape,
// block_shape) -> [N, C, image...]: the columns' values summed back into
// the image (the inverse of im2col).
func inferCol2Im(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	for i := 1; i < 3; i++ {
		in, err := requiredInput(n, i)
		if err != nil {
			return err
		}
		if in.Type() != tensor.I64 {
			return n.Errorf("input %d has element type %v, want i64", i, in.Type())
		}
	}
	image, ok1 := n.ConstInts(1)
	block, ok2 := n.ConstInts(2)
	xs := x.Shape()
	if !ok1 || !ok2 || !xs.RankKnown {
		setOutput(n, 0, x.Type(), DynamicRank)
		return nil
	}
	g, err := Col2ImGeometryOf(n, image, block)
	if err != nil {
		return err
	}
	if len(xs.Dims) != 3 {
		return n.Errorf("input has shape %v, want [N, C*prod(block), L]", xs)
	}
	k, l := int64(1), int64(1)
	for d := range image {
		k *= block[d]
		l *= g.Blocks[d]
	}
	c := DynamicDim("")
	if d := xs.Dims[1]; d.IsStatic() {
		if d.Size%k != 0 {
			return n.Errorf("input axis 1 (%d) is not a multiple of the block size %d", d.Size, k)
		}
		c = StaticDim(d.Size / k)
	}
	if d := xs.Dims[2]; d.IsStatic() && d.Size != l {
		return n.Errorf("input has %d columns, the geometry %d block positions", d.Size, l)
	}
	out := PartialShape{RankKnown: true, Dims: []Dim{xs.Dims[0], c}}
	for _, s := range image {
		out.Dims = append(out.Dims, StaticDim(s))
	}
	setOutput(n, 0, x.Type(), out)
	return nil
}

// col2ImOps are the conv family's Col2Im.
var col2ImOps = []OpSpec{
	{Name: "Col2Im", Since: 18, MinInputs: 3, MaxInputs: 3, HostInputs: []int{1, 2}, Infer: inferCol2Im, Examples: []Example{
		// image 5x5, block 2x2, stride 1: 16 positions.
		{Name: "2d", Inputs: []ExampleInput{{Shape: []int64{2, 12, 16}}, {Ints: []int64{5, 5}}, {Ints: []int64{2, 2}}}},
		// image 6x5, block 3x2, stride 2x1, dilation 1x2, pads 1: 3x3 positions.
		{Name: "strided_dilated_padded", Attrs: Attrs{"strides": []int64{2, 1}, "dilations": []int64{1, 2}, "pads": []int64{1, 0, 0, 0}},
			Inputs: []ExampleInput{{Shape: []int64{1, 6, 9}}, {Ints: []int64{6, 5}}, {Ints: []int64{3, 2}}}},
		// image 3x5x4, block 2x2x2, strides 1x2x1: 2x2x3 positions.
		{Name: "3d", Attrs: Attrs{"strides": []int64{1, 2, 1}},
			Inputs: []ExampleInput{{Shape: []int64{1, 16, 12}}, {Ints: []int64{3, 5, 4}}, {Ints: []int64{2, 2, 2}}}},
	}},
}

package preprocess

import (
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// resize resizes the spatial axes to the step's or the model's size.
func (c *cursor) resize(st step, float tensor.ElementType, ms graph.PartialShape, ml Layout) error {
	h, err := c.axis("H", "Resize")
	if err != nil {
		return err
	}
	w, err := c.axis("W", "Resize")
	if err != nil {
		return err
	}
	hw := st.hw
	if hw == [2]int64{} {
		mh, mw := ml.Index("H"), ml.Index("W")
		if !ms.RankKnown || mh < 0 || mw < 0 || !ms.Dims[mh].IsStatic() || !ms.Dims[mw].IsStatic() {
			return fmt.Errorf("%w: Resize to the model's size needs static height and width, the model's input is %v (reshape the model, or use ResizeTo)", ErrInvalid, ms)
		}
		hw = [2]int64{ms.Dims[mh].Size, ms.Dims[mw].Size}
	}
	if err := c.toFloat(float); err != nil {
		return err
	}
	// Resize's sizes name every axis (devices plan Resize without axes):
	// the others keep their sizes, taken from the shape when dynamic.
	sizes, err := c.sizes(h, w, hw)
	if err != nil {
		return err
	}
	attrs := graph.Attrs{}
	switch st.alg {
	case ResizeLinear:
		attrs["mode"] = "linear"
	case ResizeCubic:
		attrs["mode"], attrs["cubic_coeff_a"] = "cubic", float32(-0.75)
	case ResizeNearest:
		attrs["mode"], attrs["coordinate_transformation_mode"], attrs["nearest_mode"] = "nearest", "half_pixel", "round_prefer_floor"
	default:
		return fmt.Errorf("%w: resize algorithm %d", ErrInvalid, st.alg)
	}
	return c.op("Resize", "resize", attrs, c.out, graph.Output{}, graph.Output{}, sizes)
}

// sizes is the sizes input of a Resize of axes h and w to hw: a constant
// when the other axes are static, else their sizes from the value's shape
// with hw in place.
func (c *cursor) sizes(h, w int, hw [2]int64) (graph.Output, error) {
	s := c.out.Shape()
	v := make([]int64, len(s.Dims))
	static := true
	for i, d := range s.Dims {
		switch i {
		case h:
			v[i] = hw[0]
		case w:
			v[i] = hw[1]
		default:
			v[i], static = d.Size, static && d.IsStatic()
		}
	}
	if static {
		return c.i64("resize/sizes", v...), nil
	}
	x := c.out
	if err := c.op("Shape", "resize/shape", nil, x); err != nil {
		return graph.Output{}, err
	}
	shape := c.out
	idx := make([]int64, len(v))
	for i := range idx {
		idx[i] = int64(i)
	}
	// Positions h and w read the target from a two-element constant
	// appended to the shape: Gather(Concat(shape, hw), order).
	idx[h], idx[w] = int64(len(v)), int64(len(v)+1)
	if err := c.op("Concat", "resize/shape_hw", graph.Attrs{"axis": int64(0)}, shape, c.i64("resize/hw", hw[0], hw[1])); err != nil {
		return graph.Output{}, err
	}
	if err := c.op("Gather", "resize/sizes", graph.Attrs{"axis": int64(0)}, c.out, c.i64("resize/order", idx...)); err != nil {
		return graph.Output{}, err
	}
	sizes := c.out
	c.out = x
	return sizes, nil
}

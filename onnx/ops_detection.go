package onnx

import "github.com/clinfer/clinfer/graph"

// roiAlign10 imports RoiAlign-10, which has no
// coordinate_transformation_mode and behaves as output_half_pixel (no half
// pixel shift, rois at least 1x1), as the opset-16 form.
func roiAlign10(c *nodeCtx) ([]graph.Output, error) {
	if _, ok := c.attrs["coordinate_transformation_mode"]; ok {
		return nil, c.attrErrorf("coordinate_transformation_mode", "is an attribute of RoiAlign since opset 16 only")
	}
	c.attrs["coordinate_transformation_mode"] = "output_half_pixel"
	return same(enum("mode", "avg", "max"))(c)
}

// detectionImports convert RoiAlign-10 (NonMaxSuppression is imported as
// is from opset 10, RoiAlign from 16).
var detectionImports = []opEntry{
	{"RoiAlign", "", 10, 16, roiAlign10},
}

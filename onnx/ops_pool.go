package onnx

// storageOrder checks MaxPool's storage_order, which sets the layout of the
// Indices output (0 row-major, 1 column-major within a plane); it is kept
// only when that output is used.
func storageOrder(c *nodeCtx) error {
	switch c.attrs.Int("storage_order", 0) {
	case 0:
		delete(c.attrs, "storage_order")
	case 1:
		if numOutputs(c) < 2 {
			delete(c.attrs, "storage_order")
		}
	default:
		return c.attrErrorf("storage_order", "want 0 (row-major) or 1 (column-major)")
	}
	return nil
}

// poolImports checks the windowed poolings' auto_pad and MaxPool's storage order.
var poolImports = []opEntry{
	{"MaxPool", "", 1, 0, same(enum("auto_pad", autoPads...), storageOrder)},
	{"AveragePool", "", 1, 0, same(enum("auto_pad", autoPads...))},
}

package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// scalarOf reads input i, a one-element tensor, as a float64.
func scalarOf(n *graph.Node, in []*tensor.Tensor, i int, what string) (float64, error) {
	x, err := need(n, in, i)
	if err != nil {
		return 0, err
	}
	if x.NumElements() != 1 {
		return 0, n.Errorf("%w: %s %v, want a scalar", driver.ErrInvalidArgument, what, x)
	}
	return toF64s(x)[0], nil
}

// windowOut makes output 0 of output_datatype (default f32) from v.
func windowOut(n *graph.Node, shape tensor.Shape, v []float64) ([]*tensor.Tensor, error) {
	t := tensor.ElementType(n.Attrs.Int("output_datatype", int64(tensor.F32)))
	y, err := newOut(n, t, shape)
	if err != nil {
		return nil, err
	}
	storeF64(y, v)
	return one(y), nil
}

// windowKernel is HannWindow, HammingWindow and BlackmanWindow
// (graph.Window).
func windowKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	size, err := scalarOf(n, in, 0, "size")
	if err != nil {
		return nil, err
	}
	if size < 0 {
		return nil, n.Errorf("%w: size %v is negative", driver.ErrInvalidArgument, size)
	}
	w := graph.Window(n.OpType, int64(size), n.Attrs.Int("periodic", 1) != 0)
	return windowOut(n, tensor.Shape{int64(size)}, w)
}

// melKernel is MelWeightMatrix (graph.MelWeightMatrix).
func melKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	var v [5]float64
	for i, what := range []string{"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"} {
		var err error
		if v[i], err = scalarOf(n, in, i, what); err != nil {
			return nil, err
		}
	}
	bins, dft := int64(v[0]), int64(v[1])
	f32 := in[3].Type() != tensor.F64 && in[4].Type() != tensor.F64
	m, err := graph.MelWeightMatrix(bins, dft, int64(v[2]), v[3], v[4], f32)
	if err != nil {
		return nil, n.Errorf("%w: %v", driver.ErrInvalidArgument, err)
	}
	return windowOut(n, tensor.Shape{dft/2 + 1, bins}, m)
}

// windowKernels are the signal family's generators.
func windowKernels() map[string]Kernel {
	return map[string]Kernel{
		"HannWindow":      windowKernel,
		"HammingWindow":   windowKernel,
		"BlackmanWindow":  windowKernel,
		"MelWeightMatrix": melKernel,
	}
}

package graph

import (
	"fmt"
	"math"

	"github.com/clinfer/clinfer/tensor"
)

// The window generators of audio front ends: their inputs are scalars
// that size the output, so they are host inputs (the GPU folds the
// windows at plan time, as it does Range).

// windowType is output_datatype (an element type; default f32).
func windowType(n *Node) (tensor.ElementType, error) {
	t := tensor.ElementType(n.Attrs.Int("output_datatype", int64(tensor.F32)))
	if !t.Valid() || t == tensor.String || t == tensor.Bool {
		return 0, n.Errorf("output_datatype %d is not a numeric element type", int64(t))
	}
	return t, nil
}

// inferWindow is HannWindow, HammingWindow and BlackmanWindow(size): a
// vector of size values.
func inferWindow(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	if _, err := requiredInput(n, 0); err != nil {
		return err
	}
	t, err := windowType(n)
	if err != nil {
		return err
	}
	out := dynamicShape(1)
	if v, ok := constFloats(n, 0); ok && len(v) == 1 {
		if v[0] < 0 {
			return n.Errorf("size %v is negative", v[0])
		}
		out = ShapeOf(int64(v[0]))
	}
	setOutput(n, 0, t, out)
	return nil
}

// Window returns the window op (HannWindow, HammingWindow,
// BlackmanWindow) of length size, periodic (denominator size) or
// symmetric (size-1), in float64.
func Window(op string, size int64, periodic bool) []float64 {
	w := make([]float64, size)
	d := float64(size)
	if !periodic {
		d--
	}
	for i := range w {
		x := 2 * math.Pi * float64(i) / d
		switch op {
		case "HannWindow":
			w[i] = 0.5 - 0.5*math.Cos(x)
		case "HammingWindow":
			w[i] = 25.0/46 - (1-25.0/46)*math.Cos(x)
		default: // BlackmanWindow
			w[i] = 0.42 - 0.5*math.Cos(x) + 0.08*math.Cos(2*x)
		}
	}
	return w
}

// inferMelWeightMatrix is MelWeightMatrix(num_mel_bins, dft_length,
// sample_rate, lower_edge_hertz, upper_edge_hertz) -> [dft_length/2+1,
// num_mel_bins].
func inferMelWeightMatrix(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	for i := range 5 {
		if _, err := requiredInput(n, i); err != nil {
			return err
		}
	}
	t, err := windowType(n)
	if err != nil {
		return err
	}
	out := dynamicShape(2)
	bins, ok1 := constFloats(n, 0)
	dft, ok2 := constFloats(n, 1)
	if ok1 && ok2 && len(bins) == 1 && len(dft) == 1 {
		out = ShapeOf(int64(dft[0])/2+1, int64(bins[0]))
	}
	setOutput(n, 0, t, out)
	return nil
}

// MelWeightMatrix returns the [dft/2+1, bins] matrix of triangular mel
// filters ONNX defines (and ONNX Runtime computes): bins+2 points i*step
// up from lower on the mel scale (2595 log10(1 + f/700)), step the mel
// range over bins+2 (so the last point stays below upper), each mapped to
// the spectrogram bin floor((dft+1) f / rate); filter i rises from point i to
// point i+1 and falls to point i+2. With f32 edges the mel edges and step
// are computed in float32, as ONNX's reference does with numpy (the points
// in float64), so the bins the floors pick are the same.
func MelWeightMatrix(bins, dft, rate int64, lower, upper float64, f32 bool) ([]float64, error) {
	spec := dft/2 + 1
	if bins < 1 || dft < 1 || rate < 1 {
		return nil, fmt.Errorf("num_mel_bins %d, dft_length %d and sample_rate %d must be positive", bins, dft, rate)
	}
	mel := func(f float64) float64 { return 2595 * math.Log10(1+f/700) }
	if f32 {
		mel = func(f float64) float64 {
			x := 1 + float32(f)/700
			return float64(2595 * float32(math.Log10(float64(x))))
		}
	}
	lo, hi := mel(lower), mel(upper)
	step := (hi - lo) / float64(bins+2)
	if f32 {
		step = float64(float32(hi-lo) / float32(bins+2))
	}
	pts := make([]int64, bins+2)
	for i := range pts {
		f := 700 * (math.Pow(10, (float64(i)*step+lo)/2595) - 1)
		pts[i] = int64(math.Floor(float64(dft+1) * f / float64(rate)))
		if pts[i] < 0 || pts[i] >= spec {
			return nil, fmt.Errorf("mel point %d falls in bin %d, outside the %d bins of dft_length %d (check the edge frequencies against sample_rate)", i, pts[i], spec, dft)
		}
	}
	out := make([]float64, spec*bins)
	for i := range bins {
		l, c, h := pts[i], pts[i+1], pts[i+2]
		if c == l {
			out[c*bins+i] = 1
		} else {
			for j := l; j <= c; j++ {
				out[j*bins+i] = float64(j-l) / float64(c-l)
			}
		}
		for j := c; j < h; j++ {
			out[j*bins+i] = float64(h-j) / float64(h-c)
		}
	}
	return out, nil
}

// windowOps are the signal family's generators (signalOps lists the
// transforms).
var windowOps = []OpSpec{
	{Name: "HannWindow", MinInputs: 1, MaxInputs: 1, HostInputs: []int{0}, Infer: inferWindow},
	{Name: "HammingWindow", MinInputs: 1, MaxInputs: 1, HostInputs: []int{0}, Infer: inferWindow},
	{Name: "BlackmanWindow", MinInputs: 1, MaxInputs: 1, HostInputs: []int{0}, Infer: inferWindow},
	{Name: "MelWeightMatrix", MinInputs: 5, MaxInputs: 5, HostInputs: []int{0, 1, 2, 3, 4}, Infer: inferMelWeightMatrix},
}

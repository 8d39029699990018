package quantize

import (
	"context"
	"fmt"
	"math"
	"slices"

	_ "github.com/clinfer/clinfer/cpu_fallback" // registers "CPU", calibration's default device
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Percentile calibration keeps an evenly strided subsample of each value
// per sample, at most this many elements.
const sampleCap = 1 << 14

// observer accumulates what calibration saw of one value.
type observer struct {
	min, max float64
	seen     bool
	values   []float32 // Percentile's subsample
}

// add folds one sample's value in.
func (o *observer) add(v []float32, keep bool) {
	for _, f := range v {
		x := float64(f)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		if !o.seen {
			o.min, o.max, o.seen = x, x, true
		}
		o.min, o.max = min(o.min, x), max(o.max, x)
	}
	if !keep {
		return
	}
	step := max(1, len(v)/sampleCap)
	for i := 0; i < len(v); i += step {
		if f := float64(v[i]); !math.IsNaN(f) && !math.IsInf(f, 0) {
			o.values = append(o.values, v[i])
		}
	}
}

// bounds is the observed range under method (percentile p).
func (o *observer) bounds(method Method, p float64) (lo, hi float64) {
	if !o.seen {
		return 0, 0
	}
	if method != Percentile || len(o.values) == 0 {
		return o.min, o.max
	}
	v := slices.Clone(o.values)
	slices.Sort(v)
	at := func(q float64) float64 {
		i := int(math.Round(q / 100 * float64(len(v)-1)))
		return float64(v[min(max(i, 0), len(v)-1)])
	}
	return max(o.min, at(100-p)), min(o.max, at(p))
}

// calibrate runs the samples through m with the observed values as extra
// outputs and returns each value's range and quantization.
func calibrate(ctx context.Context, m *graph.Model, observed []graph.Output, samples []map[string]*tensor.Tensor, opts Options) (map[graph.Output]Range, error) {
	results := slices.Clone(m.Results)
	taken := map[string]bool{}
	for _, r := range m.Results {
		taken[r.Name] = true
	}
	outNames := make([]string, len(observed))
	for i, o := range observed {
		name := fmt.Sprintf("quantize_calibration_%d", i)
		for taken[name] {
			name += "_"
		}
		outNames[i] = name
		results = append(results, graph.NewResult(name, o))
	}
	cm := graph.NewModel(m.Name, m.Parameters, results)
	cm.Opsets = m.Opsets
	core := driver.NewCore()
	defer core.Close()
	compiled, err := core.CompileModel(ctx, cm, opts.Device, opts.Config)
	if err != nil {
		return nil, fmt.Errorf("quantize: compiling the calibration model on %s: %w", opts.Device, err)
	}
	defer compiled.Close()
	req, err := compiled.CreateInferRequest()
	if err != nil {
		return nil, err
	}
	defer req.Close()
	obs := make([]observer, len(observed))
	for i, s := range samples {
		for name, t := range s {
			if err := req.SetTensor(name, t); err != nil {
				return nil, fmt.Errorf("quantize: sample %d: input %q: %w", i, name, err)
			}
		}
		if err := req.Infer(ctx); err != nil {
			return nil, fmt.Errorf("quantize: sample %d: %w", i, err)
		}
		for j, name := range outNames {
			t, err := req.Tensor(name)
			if err != nil {
				return nil, fmt.Errorf("quantize: sample %d: %w", i, err)
			}
			obs[j].add(t.Contiguous().F32(), opts.Method == Percentile)
		}
	}
	ranges := map[graph.Output]Range{}
	for j, o := range observed {
		lo, hi := obs[j].bounds(opts.Method, opts.Percentile)
		scale, zp := activationParams(lo, hi, opts.Activations)
		ranges[o] = Range{Min: lo, Max: hi, Scale: scale, ZeroPoint: zp}
	}
	return ranges, nil
}

// activationParams is the asymmetric quantization of [lo, hi] (widened to
// hold 0) in t (u8 or i8), as ONNX Runtime computes it: scale =
// (hi-lo)/(qmax-qmin), zero point = round(qmin - lo/scale); an empty range
// gets scale 1.
func activationParams(lo, hi float64, t tensor.ElementType) (float32, int64) {
	lo, hi = min(lo, 0), max(hi, 0)
	qmin, qmax, _ := t.IntRange()
	scale := float32((hi - lo) / float64(qmax-qmin))
	if scale == 0 || math.IsInf(float64(scale), 0) {
		return 1, max(qmin, min(qmax, 0))
	}
	zp := math.RoundToEven(float64(qmin) - lo/float64(scale))
	return scale, int64(max(float64(qmin), min(float64(qmax), zp)))
}

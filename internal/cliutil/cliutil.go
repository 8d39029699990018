package cliutil

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/defaultmodel"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/internal/suggest"
	"github.com/clinfer/clinfer/ir"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/tensor"
)

// ListFlag collects a repeatable flag (-p KEY=VALUE -p ...); it implements
// flag.Value.
type ListFlag []string

// String joins the values with spaces.
func (l *ListFlag) String() string { return strings.Join(*l, " ") }

// Set appends a value.
func (l *ListFlag) Set(v string) error { *l = append(*l, v); return nil }

// SplitKV splits "NAME=VALUE"; flagName is used in the error.
func SplitKV(flagName, s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return "", "", fmt.Errorf("%s %q: want NAME=VALUE", flagName, s)
	}
	return k, v, nil
}

// Props turns -p KEY=VALUE flags into a property map; a later flag for the
// same key wins.
func Props(flagName string, kvs []string) (map[string]string, error) {
	props := map[string]string{}
	for _, p := range kvs {
		k, v, err := SplitKV(flagName, p)
		if err != nil {
			return nil, err
		}
		props[k] = v
	}
	return props, nil
}

// ReadModel reads the model file at path (OpenVINO IR for .xml, else
// ONNX), or the embedded default model when path is empty. It returns the
// model and a name for messages.
func ReadModel(path string) (*graph.Model, string, error) {
	if path == "" {
		m, err := onnx.Read(defaultmodel.ONNX)
		return m, defaultmodel.Name + " (embedded)", err
	}
	if strings.EqualFold(filepath.Ext(path), ".xml") {
		m, err := ir.ReadFile(path)
		return m, path, err
	}
	m, err := onnx.ReadFile(path)
	return m, path, err
}

// InputNames lists the model's inputs with their shapes, for messages.
func InputNames(m *graph.Model) string {
	var names []string
	for _, p := range m.Parameters {
		names = append(names, fmt.Sprintf("%s%v", p.Name, p.Outputs[0].Shape))
	}
	return strings.Join(names, ", ")
}

// ParseShapes reads -shape NAME=[1,3,48,192] flags: each names an input of
// m and gives a static shape that fits it.
func ParseShapes(m *graph.Model, specs []string) (map[string]tensor.Shape, error) {
	return ParseShapesFlag("-shape", m, specs)
}

// ParseShapesFlag is ParseShapes for a flag of another name (flagName
// starts the errors: "-data_shape").
func ParseShapesFlag(flagName string, m *graph.Model, specs []string) (map[string]tensor.Shape, error) {
	shapes := map[string]tensor.Shape{}
	for _, s := range specs {
		k, v, err := SplitKV(flagName, s)
		if err != nil {
			return nil, err
		}
		p := m.Parameter(k)
		if p == nil {
			var names []string
			for _, p := range m.Parameters {
				names = append(names, p.Name)
			}
			return nil, fmt.Errorf("%s %s: model has no input %q%s (inputs: %s)", flagName, s, k, suggest.DidYouMean(k, names), InputNames(m))
		}
		sh, err := tensor.ParseShape(v)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flagName, s, err)
		}
		if err := sh.Validate(); err != nil {
			return nil, fmt.Errorf("%s %s: dimensions must be static: %w", flagName, s, err)
		}
		if !p.Outputs[0].Shape.Compatible(sh) {
			return nil, fmt.Errorf("%s %s: does not fit input %q of shape %v", flagName, s, k, p.Outputs[0].Shape)
		}
		shapes[k] = sh
	}
	return shapes, nil
}

// ParseModelShapes reads the flags that set a model's input shapes before
// compiling (benchmark_app's -shape, for Model.Reshape), in any of
// benchmark_app's spellings: NAME=[1,3,224,224], NAME[1,3,224,224] or
// [1,3,224,224] for every input; a dimension may be ? or -1 (dynamic), so
// a shape may fix some dimensions only. An unknown input suggests the
// nearest name.
func ParseModelShapes(flagName string, m *graph.Model, specs []string) (map[string]graph.PartialShape, error) {
	out := map[string]graph.PartialShape{}
	var names []string
	for _, p := range m.Parameters {
		names = append(names, p.Name)
	}
	for _, spec := range specs {
		name, dims := "", spec
		if k, v, ok := strings.Cut(spec, "="); ok {
			name, dims = k, v
		} else if i := strings.IndexByte(spec, '['); i > 0 {
			name, dims = spec[:i], spec[i:]
		}
		ps, err := graph.ParsePartialShape(dims)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flagName, spec, err)
		}
		if name == "" {
			for _, n := range names {
				out[n] = ps
			}
			continue
		}
		if m.Parameter(name) == nil {
			return nil, fmt.Errorf("%s %s: model has no input %q%s (inputs: %s)", flagName, spec, name, suggest.DidYouMean(name, names), InputNames(m))
		}
		out[name] = ps
	}
	return out, nil
}

// DefaultShape fixes dynamic dimensions of an input for random data: 1 for
// every unknown dimension.
func DefaultShape(p graph.PartialShape) tensor.Shape {
	if !p.RankKnown {
		return tensor.Shape{1}
	}
	s := make(tensor.Shape, len(p.Dims))
	for i, d := range p.Dims {
		s[i] = d.Size
		if !d.IsStatic() {
			s[i] = 1
		}
	}
	return s
}

// RandomTensor returns seeded random data of type t and shape s: floats in
// [-1, 1], integers in 0..9 (safe as indices into small axes), booleans
// from the sign.
func RandomTensor(t tensor.ElementType, s tensor.Shape, seed uint32) (*tensor.Tensor, error) {
	n := int(s.NumElements())
	vals := seeded.Float32s(seed, n, -1, 1)
	f := make([]float64, n)
	for i, v := range vals {
		switch {
		case t == tensor.Bool:
			if v > 0 {
				f[i] = 1
			}
		case t.IsInteger():
			f[i] = float64(int((v + 1) * 5))
		default:
			f[i] = float64(v)
		}
	}
	return tensor.FromFloat64s(t, s, f)
}

// RandomInputs returns seeded random data for every input of m: input i gets
// seed+i, and the shape from shapes or DefaultShape.
func RandomInputs(m *graph.Model, shapes map[string]tensor.Shape, seed uint32) (map[string]*tensor.Tensor, error) {
	out := map[string]*tensor.Tensor{}
	for i, p := range m.Parameters {
		sh, ok := shapes[p.Name]
		if !ok {
			sh = DefaultShape(p.Outputs[0].Shape)
		}
		t, err := RandomTensor(p.Outputs[0].Type, sh, seed+uint32(i))
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", p.Name, err)
		}
		out[p.Name] = t
	}
	return out, nil
}

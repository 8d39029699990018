package quantize

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/cliutil"
	"github.com/clinfer/clinfer/internal/npy"
	"github.com/clinfer/clinfer/internal/sentinel"
	"github.com/clinfer/clinfer/tensor"
)

// LoadSamples reads calibration samples for m from dir: for a model with
// one input, every .npy file in dir is one sample of it; for several
// inputs, every subdirectory of dir is one sample holding <input>.npy for
// each input. Files and directories are taken in name order; float data
// is converted to the input's type.
func LoadSamples(dir string, m *graph.Model) ([]map[string]*tensor.Tensor, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var out []map[string]*tensor.Tensor
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		switch {
		case len(m.Parameters) == 1 && !e.IsDir() && strings.HasSuffix(e.Name(), ".npy"):
			p := m.Parameters[0]
			t, err := readInput(path, p)
			if err != nil {
				return nil, err
			}
			out = append(out, map[string]*tensor.Tensor{p.Name: t})
		case len(m.Parameters) > 1 && e.IsDir():
			s := map[string]*tensor.Tensor{}
			for _, p := range m.Parameters {
				t, err := readInput(filepath.Join(path, p.Name+".npy"), p)
				if err != nil {
					return nil, err
				}
				s[p.Name] = t
			}
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		what := ".npy files"
		if len(m.Parameters) > 1 {
			what = "sample directories (one <input>.npy per input)"
		}
		return nil, fmt.Errorf("%s: no %s: %w", dir, what, ErrNoSamples)
	}
	return out, nil
}

// readInput reads one input's sample, converted to its type.
func readInput(path string, p *graph.Node) (*tensor.Tensor, error) {
	t, err := npy.ReadFile(path)
	if err != nil {
		return nil, err
	}
	want := p.Outputs[0].Type
	if t.Type() != want {
		if !t.Type().IsFloat() || !want.IsFloat() {
			return nil, sentinel.Errorf(sentinel.ErrInvalidArgument, "%s holds %v, input %q wants %v", path, t.Type(), p.Name, want)
		}
		if t, err = t.Convert(want); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if !p.Outputs[0].Shape.Compatible(t.Shape()) {
		return nil, sentinel.Errorf(sentinel.ErrInvalidArgument, "%s: shape %v does not fit input %q %v", path, t.Shape(), p.Name, p.Outputs[0].Shape)
	}
	return t, nil
}

// RandomSamples returns n seeded random samples for m (floats uniform in
// [-1, 1]): sample i's input j gets seed+i*len(inputs)+j, the shape from
// shapes or, for an input with dynamic dimensions, 1 for each.
func RandomSamples(m *graph.Model, shapes map[string]tensor.Shape, n int, seed uint32) ([]map[string]*tensor.Tensor, error) {
	var out []map[string]*tensor.Tensor
	for i := range n {
		s, err := cliutil.RandomInputs(m, shapes, seed+uint32(i*len(m.Parameters)))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

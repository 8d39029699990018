package hetero

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
)

// dumpDot writes the affinity graph and every subgraph to dir as Graphviz
// files: MODEL_affinity.dot and MODEL_subgraphN_DEVICE.dot.
func dumpDot(dir string, model *graph.Model, subs []*subgraph) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return driver.Errorf(driver.ErrInvalidArgument, "hetero: %s=%q: %w", KeyDumpGraphDot, dir, err)
	}
	base := fileSafe(model.Name)
	if base == "" {
		base = "model"
	}
	write := func(name string, m *graph.Model) error {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			return driver.Errorf(driver.ErrInvalidArgument, "hetero: %s: %w", KeyDumpGraphDot, err)
		}
		werr := m.WriteDot(f)
		cerr := f.Close()
		if werr != nil || cerr != nil {
			return driver.Errorf(driver.ErrInvalidArgument, "hetero: %s: writing %s: %v", KeyDumpGraphDot, path, firstErr(werr, cerr))
		}
		return nil
	}
	if err := write(base+"_affinity.dot", model); err != nil {
		return err
	}
	for _, sg := range subs {
		if err := write(fmt.Sprintf("%s_%s_%s.dot", base, sg.name, fileSafe(sg.device)), sg.model); err != nil {
			return err
		}
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// fileSafe keeps letters, digits, '.', '-' and '_' of s, replacing the rest
// with '_'.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}

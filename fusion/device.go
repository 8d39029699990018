package fusion

import (
	"context"
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
)

// ForDevice is what a device's CompileModel calls: it clones m and runs the
// standard pipeline on the clone under the device configuration cfg
// (DISABLE_TRANSFORMATIONS, DISABLED_TRANSFORMATIONS, DUMP_GRAPHS_DIR),
// folding constants with eval. It returns m itself, untouched, when
// transformations are disabled or when m does not pass shape inference (so
// the device reports its own error for the model). Pipeline errors wrap
// driver.ErrInvalidArgument and name the model and the pass. Each of with
// adjusts the options read from cfg with what only the device knows (the
// GPU's Options.Chains).
func ForDevice(ctx context.Context, m *graph.Model, cfg *driver.Properties, eval Evaluator, with ...func(*Options)) (*graph.Model, *Report, error) {
	opts, err := OptionsFromProperties(cfg)
	if err != nil {
		return nil, nil, driver.Errorf(driver.ErrInvalidArgument, "fusion: model %q: %w", m.Name, err)
	}
	for _, f := range with {
		f(&opts)
	}
	if opts.DisableAll {
		return m, nil, nil
	}
	tm := m.Clone()
	if err := tm.InferShapes(); err != nil {
		return m, nil, nil
	}
	opts.Eval = eval
	rep, err := Default().Run(ctx, tm, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("fusion: model %q: %w", m.Name, err)
		}
		return nil, nil, driver.Errorf(driver.ErrInvalidArgument, "fusion: model %q: %w", m.Name, err)
	}
	return tm, rep, nil
}

// QueryForDevice is what a device's QueryModel calls: it runs the same
// passes as ForDevice and answers, in the names of m's nodes (Constants,
// Parameters and Results included), which nodes the device runs, given
// supported, the device's test for one node of the transformed graph.
func QueryForDevice(ctx context.Context, m *graph.Model, cfg *driver.Properties, eval Evaluator, supported func(*graph.Node) bool) (map[string]bool, error) {
	tm, _, err := ForDevice(ctx, m, cfg, eval)
	if err != nil {
		return nil, err
	}
	return QuerySupported(m, tm, supported)
}

package cpufallback

import (
	"context"
	"fmt"
	"io"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
)

// graphSection is the blob section holding the transformed graph.
const graphSection = "graph"

// Interface checks.
var (
	_ plugin.Exporter = (*CompiledModel)(nil)
	_ plugin.Importer = (*Plugin)(nil)
)

// Export writes the compiled model: the shared blob header (device,
// DEVICE_ARCHITECTURE, configuration, ports) and the transformed graph with
// its weights, from which ImportModel rebuilds the plan without running the
// fusion passes again.
func (c *CompiledModel) Export(w io.Writer) error {
	enc, err := c.core.ExportGraph(c.model)
	if err != nil {
		return err
	}
	return plugin.WriteBlob(w, &plugin.Blob{
		Header:   c.core.Header(DeviceName, deviceArchitecture(), plugin.ExportConfig(c.core.Props())),
		Sections: []plugin.BlobSection{{Name: graphSection, Data: enc}},
	})
}

// ImportModel rebuilds a compiled model that CompiledModel.Export wrote. A
// blob of another format version or CPU architecture is an error wrapping
// plugin.ErrIncompatible that names both values; a truncated or damaged one
// wraps plugin.ErrCorrupt. props override the exported configuration. The
// imported model reports LOADED_FROM_CACHE=YES.
func (p *Plugin) ImportModel(ctx context.Context, r io.Reader, props map[string]string) (cm plugin.CompiledModel, err error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cpu: import: %w", err)
	}
	blob, err := plugin.ReadBlob(r, DeviceName, deviceArchitecture())
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	data, ok := blob.Section(graphSection)
	if !ok {
		return nil, plugin.Errorf(plugin.ErrCorrupt, "cpu: import: the compiled model has no %q section", graphSection)
	}
	m := &graph.Model{}
	if err := m.UnmarshalBinary(data); err != nil {
		return nil, plugin.Errorf(plugin.ErrCorrupt, "cpu: import: %w", err)
	}
	cfg, err := plugin.ImportConfig(p.core.Props(), blob.Header, props)
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	// The graph passed its checksum, but a crafted blob can still hold a
	// graph no compiler produced; building its plan must not panic.
	defer func() {
		if r := recover(); r != nil {
			cm, err = nil, plugin.Errorf(plugin.ErrCorrupt, "cpu: import model %q: bad graph: %v", m.Name, r)
		}
	}()
	c, err := compile(ctx, p, m, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("cpu: import: %w", ctx.Err())
		}
		return nil, plugin.Errorf(plugin.ErrCorrupt, "cpu: import: %w", err)
	}
	if err := plugin.CheckPorts("input", blob.Header.Inputs, c.core.Inputs()); err != nil {
		return nil, fmt.Errorf("cpu: %w", errorsJoinClose(err, c))
	}
	if err := plugin.CheckPorts("output", blob.Header.Outputs, c.core.Outputs()); err != nil {
		return nil, fmt.Errorf("cpu: %w", errorsJoinClose(err, c))
	}
	c.core.SetProps(c.core.Props().Extend(plugin.ReadOnlySpec(plugin.KeyLoadedFromCache, "YES")))
	return c, nil
}

// errorsJoinClose closes a half-built compiled model and keeps err first.
func errorsJoinClose(err error, c *CompiledModel) error {
	if cerr := c.Close(); cerr != nil {
		return fmt.Errorf("%w (closing: %v)", err, cerr)
	}
	return err
}

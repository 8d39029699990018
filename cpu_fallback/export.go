package cpufallback

import (
	"context"
	"fmt"
	"io"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
)

// graphSection is the blob section holding the transformed graph.
const graphSection = "graph"

// Interface checks.
var (
	_ driver.Exporter = (*CompiledModel)(nil)
	_ driver.Importer = (*Plugin)(nil)
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
	return driver.WriteBlob(w, &driver.Blob{
		Header:   c.core.Header(DeviceName, deviceArchitecture(), driver.ExportConfig(c.core.Props())),
		Sections: []driver.BlobSection{{Name: graphSection, Data: enc}},
	})
}

// ImportModel rebuilds a compiled model that CompiledModel.Export wrote. A
// blob of another format version or CPU architecture is an error wrapping
// driver.ErrIncompatible that names both values; a truncated or damaged one
// wraps driver.ErrCorrupt. props override the exported configuration. The
// imported model reports LOADED_FROM_CACHE=YES.
func (p *Plugin) ImportModel(ctx context.Context, r io.Reader, props map[string]string) (cm driver.CompiledModel, err error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cpu: import: %w", err)
	}
	blob, err := driver.ReadBlob(r, DeviceName, deviceArchitecture())
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	data, ok := blob.Section(graphSection)
	if !ok {
		return nil, driver.Errorf(driver.ErrCorrupt, "cpu: import: the compiled model has no %q section", graphSection)
	}
	m := &graph.Model{}
	if err := m.UnmarshalBinary(data); err != nil {
		return nil, driver.Errorf(driver.ErrCorrupt, "cpu: import: %w", err)
	}
	cfg, err := driver.ImportConfig(p.core.Props(), blob.Header, props)
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	// The graph passed its checksum, but a crafted blob can still hold a
	// graph no compiler produced; building its plan must not panic.
	defer func() {
		if r := recover(); r != nil {
			cm, err = nil, driver.Errorf(driver.ErrCorrupt, "cpu: import model %q: bad graph: %v", m.Name, r)
		}
	}()
	c, err := compile(ctx, p, m, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("cpu: import: %w", ctx.Err())
		}
		return nil, driver.Errorf(driver.ErrCorrupt, "cpu: import: %w", err)
	}
	if err := driver.CheckPorts("input", blob.Header.Inputs, c.core.Inputs()); err != nil {
		return nil, fmt.Errorf("cpu: %w", errorsJoinClose(err, c))
	}
	if err := driver.CheckPorts("output", blob.Header.Outputs, c.core.Outputs()); err != nil {
		return nil, fmt.Errorf("cpu: %w", errorsJoinClose(err, c))
	}
	c.core.SetProps(c.core.Props().Extend(driver.ReadOnlySpec(driver.KeyLoadedFromCache, "YES")))
	return c, nil
}

// errorsJoinClose closes a half-built compiled model and keeps err first.
func errorsJoinClose(err error, c *CompiledModel) error {
	if cerr := c.Close(); cerr != nil {
		return fmt.Errorf("%w (closing: %v)", err, cerr)
	}
	return err
}

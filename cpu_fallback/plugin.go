package cpufallback

import (
	"context"
	"fmt"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
)

func init() {
	driver.Register(DeviceName, func() (driver.Plugin, error) { return New() })
}

// Plugin is the CPU device. It is safe for concurrent use.
type Plugin struct {
	core      driver.PluginCore      // properties, closed
	executors driver.ExecutorManager // shared by compiled models; see stages.go
}

// Interface checks.
var (
	_ driver.Plugin  = (*Plugin)(nil)
	_ driver.Querier = (*Plugin)(nil)
)

// New returns the CPU device. It cannot fail on a host that runs Go; the
// error is there for the driver.Factory contract.
func New() (*Plugin, error) {
	p := &Plugin{}
	p.core.Init("cpu", DeviceName, driver.NewProperties(propertySpecs(p)...))
	return p, nil
}

// Name returns "CPU".
func (p *Plugin) Name() string { return DeviceName }

// Property returns a device property.
func (p *Plugin) Property(key string) (string, error) { return p.core.Property(key) }

// SetProperties sets read-write properties, all or none.
func (p *Plugin) SetProperties(props map[string]string) error { return p.core.SetProperties(props) }

// Close marks the device closed; later calls fail with driver.ErrClosed.
// Compiled models stay usable (they own what they need).
func (p *Plugin) Close() error {
	p.core.MarkClosed()
	return p.executors.Close()
}

func (p *Plugin) check() error { return p.core.Check() }

// config returns a copy of the device configuration overridden by props.
func (p *Plugin) config(props map[string]string) (*driver.Properties, error) {
	cfg := p.core.Props().Clone()
	if err := cfg.Set(props); err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	return cfg, nil
}

// supports reports whether the device runs nodes of this op type.
func (p *Plugin) supports(n *graph.Node) bool {
	switch n.OpType {
	case graph.OpParameter, graph.OpConstant, graph.OpResult:
		return n.Domain == ""
	}
	// A node with bodies runs when every node of its bodies does.
	return ref.Supports(n) && n.BodiesAll(p.supports)
}

// CompileModel compiles a clone of m; see the package documentation.
func (p *Plugin) CompileModel(ctx context.Context, m *graph.Model, props map[string]string) (driver.CompiledModel, error) {
	if err := p.core.Start(ctx, "compile", m); err != nil {
		return nil, err
	}
	cfg, err := p.config(props)
	if err != nil {
		return nil, err
	}
	// The fusion passes run on a clone unless DISABLE_TRANSFORMATIONS=YES.
	tm, _, err := fusion.ForDevice(ctx, m, cfg, ref.Evaluate)
	if err != nil {
		return nil, fmt.Errorf("cpu: compile: %w", err)
	}
	return compile(ctx, p, tm, cfg)
}

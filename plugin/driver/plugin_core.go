package driver

import (
	"context"
	"fmt"
	"sync"

	"github.com/clinfer/clinfer/graph"
)

// PluginCore is the part of a device plugin every device shares: its
// properties and whether it is closed, with the same checks and messages
// on every device. A device keeps one in an unexported field, calls Init
// in its constructor, forwards Property and SetProperties to it and marks
// it closed in its Close. It is safe for concurrent use.
type PluginCore struct {
	prefix, name string
	props        *Properties
	closed       closedFlag
}

// Init sets the device's name ("CPU"), its properties and the prefix of
// the error messages ("cpu").
func (c *PluginCore) Init(prefix, name string, props *Properties) {
	c.prefix, c.name, c.props = prefix, name, props
}

// Props returns the device's properties.
func (c *PluginCore) Props() *Properties { return c.props }

// Property returns a device property; it fails with ErrClosed once the
// device is closed.
func (c *PluginCore) Property(key string) (string, error) {
	return property(c.prefix, c.Check, c.props, key)
}

// property is the Property of a device or compiled model: check (closed),
// then the value of key in props, errors prefixed "prefix: ".
func property(prefix string, check func() error, props *Properties, key string) (string, error) {
	if err := check(); err != nil {
		return "", err
	}
	v, err := props.Get(key)
	if err != nil {
		return "", prefixed(prefix, err)
	}
	return v, nil
}

// SetProperties sets read-write properties, all or none; it fails with
// ErrClosed once the device is closed.
func (c *PluginCore) SetProperties(props map[string]string) error {
	if err := c.Check(); err != nil {
		return err
	}
	if err := c.props.Set(props); err != nil {
		return prefixed(c.prefix, err)
	}
	return nil
}

// Check returns an error wrapping ErrClosed once the device is closed.
func (c *PluginCore) Check() error {
	if c.closed.get() {
		return fmt.Errorf("%s: device %s: %w", c.prefix, c.name, ErrClosed)
	}
	return nil
}

// MarkClosed marks the device closed and reports whether it was open, so
// that a device's Close releases its resources once.
func (c *PluginCore) MarkClosed() bool { return c.closed.mark() }

// closedFlag is a closed state safe for concurrent use.
type closedFlag struct {
	mu     sync.Mutex
	closed bool
}

func (f *closedFlag) get() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// mark sets the flag and reports whether it was clear.
func (f *closedFlag) mark() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	was := !f.closed
	f.closed = true
	return was
}

// Start begins a device call on a model (what: "compile", "query"): it
// fails once the device is closed, then as CheckModelCall does.
func (c *PluginCore) Start(ctx context.Context, what string, m *graph.Model) error {
	if err := c.Check(); err != nil {
		return err
	}
	return CheckModelCall(ctx, c.prefix, what, m)
}

// CheckModelCall is how every device's CompileModel and QueryModel start:
// ctx's error once it is done, and an error wrapping ErrInvalidArgument
// for a nil model, each prefixed "prefix: what: ".
func CheckModelCall(ctx context.Context, prefix, what string, m *graph.Model) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %s: %w", prefix, what, err)
	}
	if m == nil {
		return errorf(ErrInvalidArgument, "%s: %s: nil model", prefix, what)
	}
	return nil
}

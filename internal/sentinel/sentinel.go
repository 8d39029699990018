// Package sentinel holds the sentinel errors of the user API
// (plugin.ErrNotFound, ErrInvalidArgument, ...), defined here, beneath
// every package, so that packages below the plugin API (graph's
// Model.Reshape and its input-shape errors) can match them too:
// plugin/driver re-exports each as its own.
//
// Where it sits in the data flow of DESIGN.md: beneath everything; only
// error identities live here.
package sentinel

import (
	"errors"
	"fmt"
)

// The sentinels; see plugin/driver for what each means.
var (
	ErrNotFound          = errors.New("plugin: not found")
	ErrNotImplemented    = errors.New("plugin: not implemented")
	ErrInvalidArgument   = errors.New("plugin: invalid argument")
	ErrDevice            = errors.New("plugin: device error")
	ErrUnsupported       = errors.New("plugin: unsupported")
	ErrBusy              = errors.New("plugin: request busy")
	ErrClosed            = errors.New("plugin: closed")
	ErrResourceExhausted = errors.New("plugin: resource exhausted")
)

// Errorf returns an error with the formatted message that wraps s for
// errors.Is, without repeating s's text in the message; a %w verb in
// format wraps that operand as well.
func Errorf(s error, format string, args ...any) error {
	return &wrapped{err: fmt.Errorf(format, args...), sentinel: s}
}

// wrapped is Errorf's error: its message is its own, and errors.Is matches
// both the sentinel and whatever the message wrapped with %w.
type wrapped struct {
	err      error
	sentinel error
}

func (e *wrapped) Error() string   { return e.err.Error() }
func (e *wrapped) Unwrap() []error { return []error{e.sentinel, e.err} }

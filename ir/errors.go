package ir

import (
	"errors"
	"fmt"
)

// Sentinel errors; every error the package returns wraps one of them (or
// an os error for an unreadable file), so callers can use errors.Is.
var (
	// ErrInvalidModel is wrapped by errors about malformed XML, broken
	// edges, bad dimensions or attribute values, and graphs that make no
	// sense (cycles, a port with two producers).
	ErrInvalidModel = errors.New("ir: invalid model")
	// ErrUnsupportedOp is wrapped by errors about an op type and opset
	// version the reader cannot map onto clinfer's op set.
	ErrUnsupportedOp = errors.New("ir: unsupported op")
	// ErrUnsupportedAttribute is wrapped by errors about an attribute
	// value whose meaning the op set cannot express.
	ErrUnsupportedAttribute = errors.New("ir: unsupported attribute")
	// ErrUnsupportedType is wrapped by errors about an element type
	// clinfer has no tensor type for (u1, nf4...).
	ErrUnsupportedType = errors.New("ir: unsupported element type")
	// ErrWeights is wrapped by errors about the weights (.bin): missing,
	// too short for a constant, or a constant's size that does not match
	// its type and shape.
	ErrWeights = errors.New("ir: bad weights")
)

// LayerError is an error about one layer of an IR file: it names the
// layer's id, name, type and opset version, the way the file spells them.
type LayerError struct {
	ID, Name, Type, Version string
	Err                     error
}

// Error implements error.
func (e *LayerError) Error() string {
	return fmt.Sprintf("ir: layer id=%s %q (%s, %s): %v", e.ID, e.Name, e.Type, e.Version, e.Err)
}

// Unwrap returns the underlying error.
func (e *LayerError) Unwrap() error { return e.Err }

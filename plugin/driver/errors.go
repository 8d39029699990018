package driver

import (
	"strings"

	sentinelpkg "github.com/clinfer/clinfer/internal/sentinel"
)

// errorf formats an error that wraps sentinel (and any %w operand).
func errorf(sentinel error, format string, args ...any) error {
	return sentinelpkg.Errorf(sentinel, format, args...)
}

// Errorf returns an error with the formatted message that wraps sentinel for
// errors.Is, without repeating the sentinel's text in the message. Devices
// use it so their errors read "cpu: ..." yet match driver.ErrInvalidArgument.
// A %w verb in format wraps that operand as well.
func Errorf(sentinel error, format string, args ...any) error {
	return sentinelpkg.Errorf(sentinel, format, args...)
}

// prefixed puts a device's prefix ("cpu") before err, in place of the
// "plugin: " that this package's own messages start with, so a device's
// error reads "cpu: unknown property X", not "cpu: plugin: unknown
// property X". errors.Is and errors.As see err.
func prefixed(prefix string, err error) error {
	return &prefixedError{msg: prefix + ": " + strings.TrimPrefix(err.Error(), "plugin: "), err: err}
}

type prefixedError struct {
	msg string
	err error
}

// Error returns the message with the device's prefix.
func (e *prefixedError) Error() string { return e.msg }

// Unwrap returns the error the prefix was put on.
func (e *prefixedError) Unwrap() error { return e.err }

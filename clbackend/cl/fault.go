package cl

import "github.com/clinfer/clinfer/internal/faultinject"

// injected returns the failure internal/faultinject planned for the OpenCL
// call op, or nil: tests make the Nth call of the binding fail to prove
// that every failure path returns an error, releases what it made and
// leaves the device usable.
func injected(op string) error {
	if st, ok := faultinject.Check(op); ok {
		return newError(op, st)
	}
	return nil
}

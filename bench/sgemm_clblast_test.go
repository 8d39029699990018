//go:build clblast && cgo && !noopencl

// Keep in sync with sgemm_noclblast_test.go.

package bench

import (
	"errors"

	"github.com/clinfer/clinfer/clbackend/cl"
)

// clblastSGEMM runs CLBlast's row-major Sgemm on the same device and
// buffers as clinferSGEMM.
var clblastSGEMM sgemmRunner = func(e *sgemmEnv) (func() error, func() error, error) {
	n := e.n
	run := func() error {
		ev, err := cl.CLBlastSgemm(e.q, false, false, n, n, n, 1, e.a, 0, n, e.b, 0, n, 0, e.c, 0, n)
		if err != nil {
			return err
		}
		return errors.Join(ev.Wait(), ev.Close())
	}
	return run, func() error { return nil }, nil
}

//go:build cgo && !noopencl

package cl_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/internal/faultinject"
)

// TestTransferCallbackFailure fails the completion callback that unpins
// the Go memory of a non-blocking write: the binding waits for the
// transfer instead, so the write still succeeds and lands.
func TestTransferCallbackFailure(t *testing.T) {
	e := newEnv(t, 0)
	const n = 64
	buf := e.buffer(t, cl.MemReadWrite, n*4)
	faultinject.ArmMatching("clSetEventCallback", 1, int32(cl.ErrOutOfResources))
	ev(t)(cl.EnqueueWriteSlice(e.q, buf, false, 0, seq(n, 2), nil))
	_, hit := faultinject.Disarm()
	require.Equal(t, "clSetEventCallback", hit, "the write set a callback")
	out := make([]float32, n)
	ev(t)(cl.EnqueueReadSlice(e.q, buf, true, 0, out, nil))
	assert.Equal(t, seq(n, 2), out)
}

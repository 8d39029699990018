//go:build !cgo || noopencl

package cl_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
)

func TestBuiltWithoutOpenCL(t *testing.T) {
	assert.False(t, cl.Enabled)
	ps, err := cl.GetPlatforms()
	assert.Nil(t, ps)
	require.ErrorIs(t, err, cl.ErrNotBuilt)
	assert.EqualError(t, err, "clGetPlatformIDs: cl: built without OpenCL (rebuild with CGO_ENABLED=1 and without -tags noopencl)")
	assert.NoError(t, cl.WaitForEvents(nil), "an empty wait list needs no OpenCL")
	assert.Equal(t, map[string]int{"Context": 0, "CommandQueue": 0, "CommandBuffer": 0, "MemObject": 0, "Program": 0, "Kernel": 0, "Event": 0}, cl.LiveObjects())
}

package sysmem

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPhysical(t *testing.T) {
	n := Physical()
	assert.GreaterOrEqual(t, n, int64(256<<20), "at least 256 MiB")
	assert.Equal(t, n, Physical(), "read once")
}

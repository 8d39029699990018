package faultinject

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestArmCheckDisarm(t *testing.T) {
	_, ok := Check("clFinish")
	assert.False(t, ok, "unarmed: nothing fails")
	Arm(3, -5)
	for i, op := range []string{"a", "b", "c", "d"} {
		st, ok := Check(op)
		assert.Equal(t, i == 2, ok, "call %d", i+1)
		if ok {
			assert.Equal(t, int32(-5), st)
		}
	}
	n, failed := Disarm()
	assert.Equal(t, int64(4), n)
	assert.Equal(t, "c", failed)
	_, ok = Check("e")
	assert.False(t, ok, "disarmed")

	Arm(0, -5)
	for range 7 {
		_, ok := Check("x")
		assert.False(t, ok, "n = 0 only counts")
	}
	n, failed = Disarm()
	assert.Equal(t, int64(7), n)
	assert.Empty(t, failed)
}

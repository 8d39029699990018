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

func TestArmMatchingAndRandom(t *testing.T) {
	ArmMatching("clEnqueueNDRangeKernel", 2, -5)
	for i, op := range []string{"clFinish", "clEnqueueNDRangeKernel", "clSetKernelArg", "clEnqueueNDRangeKernel", "clEnqueueNDRangeKernel"} {
		_, ok := Check(op)
		assert.Equal(t, i == 3, ok, "call %d (%s): the second launch fails", i+1, op)
	}
	n, failed := Disarm()
	assert.Equal(t, int64(3), n, "only launches are counted")
	assert.Equal(t, "clEnqueueNDRangeKernel", failed)

	run := func() (fails int64, pattern []bool) {
		ArmRandom(42, 0.25, -5)
		for range 1000 {
			_, ok := Check("x")
			pattern = append(pattern, ok)
		}
		fails = Failures()
		Disarm()
		return fails, pattern
	}
	f1, p1 := run()
	f2, p2 := run()
	assert.InDelta(t, 250, f1, 60, "about p of the calls fail")
	assert.Equal(t, f1, f2)
	assert.Equal(t, p1, p2, "the same seed fails the same calls")
}

func TestTrace(t *testing.T) {
	Trace()
	for _, op := range []string{"clCreateBuffer", "clFinish", "clCreateBuffer"} {
		_, ok := Check(op)
		assert.False(t, ok, "tracing fails nothing")
	}
	n, failed := Disarm()
	assert.Equal(t, int64(3), n)
	assert.Empty(t, failed)
	assert.Equal(t, []string{"clCreateBuffer", "clFinish", "clCreateBuffer"}, Ops())
	Arm(1, -5)
	Check("clFinish")
	Disarm()
	assert.Empty(t, Ops(), "Arm ends the trace")
}

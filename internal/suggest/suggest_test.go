package suggest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClosest(t *testing.T) {
	cands := []string{"GPU", "CPU", "HETERO", "AUTO", "BATCH"}
	cases := []struct{ in, want string }{
		{"gpu", "GPU"},
		{"GUP", "GPU"},
		{"HETRO", "HETERO"},
		{"x", ""},
		{"NPU", "GPU"},
		{"SOMETHINGELSE", ""},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, Closest(tc.in, cands), tc.in)
	}
	assert.Equal(t, "x", Closest("X", []string{"y", "x"}), "case differs only")
	assert.Equal(t, "; did you mean x?", DidYouMean("X", []string{"x"}))
	assert.Empty(t, DidYouMean("x", []string{"x"}), "a candidate itself")
	assert.Empty(t, DidYouMean("zzzzzz", []string{"x"}))
}

package clbackend

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/clinfer/clinfer/graph"
)

// TestPostDefinesOf: the build options that fix a post-op table name its
// count and kinds, and only for tables post_ops.clh can take that way.
func TestPostDefinesOf(t *testing.T) {
	for _, c := range []struct {
		name  string
		table []int64
		want  string
	}{
		{"none", []int64{0, 0}, " -DPOST_N=0"},
		{"hardswish_linear", []int64{2, postCodes[graph.PostHardSwish], postCodes[graph.PostLinear], 0}, " -DPOST_N=2 -DPOST_K0=3 -DPOST_K1=10"},
		{"sum_relu_dense", []int64{2, 0, 1, -1}, " -DPOST_N=2 -DPOST_K0=0 -DPOST_K1=1"},
		{"four", []int64{4, 0, 1, 2, 3, 0}, " -DPOST_N=4 -DPOST_K0=0 -DPOST_K1=1 -DPOST_K2=2 -DPOST_K3=3"},
		{"five_read_at_run_time", []int64{5, 0, 1, 2, 3, 4, 0}, ""},
		{"truncated", []int64{3, 1}, ""},
		{"empty", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, postDefinesOf(c.table)) })
	}
}

package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMedian(t *testing.T) {
	cases := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tc := range cases {
		v := append([]float64(nil), tc.in...)
		assert.InDelta(t, tc.want, Median(v), 1e-12, "Median(%v)", tc.in)
		assert.Equal(t, tc.in, v, "Median must not reorder its argument")
	}
}

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/tensor"
)

func TestParseShape(t *testing.T) {
	cases := []struct {
		in   string
		want tensor.Shape
		ok   bool
	}{
		{"1x3x640x640", tensor.Shape{1, 3, 640, 640}, true},
		{"7", tensor.Shape{7}, true},
		{"1x0x2", nil, false},
		{"1x-3", nil, false},
		{"", nil, false},
		{"1,3,640,640", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseShape(tc.in)
			if !tc.ok {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.in)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.in, formatShape(got))
		})
	}
}

// TestCheck: a run that did not measure its state is an error.
func TestCheck(t *testing.T) {
	cases := []struct {
		state string
		r     result
		ok    bool
	}{
		{"cold", result{Loaded: "NO", SourceBuilds: 17}, true},
		{"cold", result{Loaded: "NO", SourceBuilds: 3, BinaryLoads: 14}, false},
		{"program-cache", result{Loaded: "NO", BinaryLoads: 17}, true},
		{"program-cache", result{Loaded: "NO", SourceBuilds: 1, BinaryLoads: 16}, false},
		{"model-cache", result{Loaded: "YES"}, true},
		{"model-cache", result{Loaded: "NO"}, false},
		{"export", result{Loaded: "NO", SourceBuilds: 17, BlobBytes: 4 << 20}, true},
		{"export", result{Loaded: "NO", SourceBuilds: 17}, false},
	}
	for _, tc := range cases {
		err := check(tc.state, tc.r)
		if tc.ok {
			assert.NoError(t, err, "%s %+v", tc.state, tc.r)
		} else {
			assert.Error(t, err, "%s %+v", tc.state, tc.r)
		}
	}
}

package clbackend

import (
	"slices"

	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
)

// exampleCases are the examples of op's row (graph.OpSpec.Examples) as
// lowerCases; names picks some of them (all when empty).
func exampleCases(op string, names ...string) []lowerCase {
	s, _ := graph.Lookup(op)
	var out []lowerCase
	for _, ex := range s.Examples {
		if len(names) > 0 && !slices.Contains(names, ex.Name) {
			continue
		}
		out = append(out, lowerCase{op + "_" + ex.Name, func(g *caseGen) *graph.Model {
			m, err := ex.Build(op)
			require.NoError(g.t, err)
			return m
		}})
	}
	return out
}

// postprocessVariantCases are the variantCases of the families of
// kernels/variant_tables_postprocess.go: examples of their ops' rows.
func postprocessVariantCases() map[string][]lowerCase {
	return map[string][]lowerCase{
		"roi_align":   exampleCases("RoiAlign"),
		"nms":         exampleCases("NonMaxSuppression"),
		"scan":        append(exampleCases("NonZero", "bool"), exampleCases("Unique", "axis0_unsorted")...),
		"fft":         append(exampleCases("DFT", "real_pow2", "bluestein_inverse"), exampleCases("STFT", "window")...),
		"grid_sample": exampleCases("GridSample", "linear_zeros", "cubic_reflection", "linear_reflection_aligned_3d"),
	}
}

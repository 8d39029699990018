package kernels_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/kernels"
)

// TestKernelSignatures parses the signature of every catalogue entry's
// entry point: the argument list each kernel declares once, which the GPU
// lowerings and the launch specs are checked against.
func TestKernelSignatures(t *testing.T) {
	for _, k := range kernels.All() {
		t.Run(k.Name, func(t *testing.T) {
			args, err := k.Args("")
			require.NoError(t, err)
			require.NotEmpty(t, args)
			for _, a := range args {
				assert.NotEmpty(t, a.Name)
				assert.NotEmpty(t, a.Type, "argument %s", a.Name)
			}
		})
	}
}

func TestCheckArgs(t *testing.T) {
	buf := kernels.Buffer{}
	pool := kernels.MustLookup("avg_pool")
	indices := kernels.MustLookup("max_pool_indices")
	for _, c := range []struct {
		name    string
		k       kernels.Kernel
		defines string
		args    []any
		want    string // "" for a match
	}{
		{"match", pool, "", []any{buf, buf, uint64(4), buf}, ""},
		{"ifdef selects parameters", indices, "", []any{buf, buf, buf, int32(1), uint64(4), buf}, ""},
		{"count", pool, "", []any{buf, buf, uint64(4)}, "kernel avg_pool (pool in pool.cl) takes 4 arguments (TS* x, TS* out, ulong n, int* m), the launch passes 3"},
		{"scalar for buffer", pool, "", []any{buf, uint64(1), uint64(4), buf}, "argument 1 (TS* out) is a buffer, the launch passes a uint64"},
		{"buffer for scalar", pool, "", []any{buf, buf, buf, buf}, "argument 2 (ulong n) is a scalar, the launch passes a buffer"},
		{"scalar type", pool, "-DHALF", []any{buf, buf, int64(4), buf}, "kernel avg_pool (pool in pool.cl with -DHALF): argument 2 (ulong n) takes a Go uint64, the launch passes a int64"},
		{"macro pointer", kernels.MustLookup("cast"), "-DSRC_HALF", []any{buf, buf, uint64(3)}, ""},
		{"float scalar", kernels.MustLookup("relu"), "", []any{buf, buf, uint64(3), float32(0), float64(0)}, "argument 4 (float p1) takes a Go float32, the launch passes a float64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := kernels.CheckArgs(c.k, c.defines, c.args)
			if c.want == "" {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, kernels.ErrArgs)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

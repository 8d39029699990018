package kernels_test

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/kernels"
)

// TestCatalogue checks that every entry names an existing file and a
// __kernel of that file, and that every file is used by some entry.
func TestCatalogue(t *testing.T) {
	all := kernels.All()
	require.NotEmpty(t, all)
	require.True(t, slices.IsSortedFunc(all, func(a, b kernels.Kernel) int { return strings.Compare(a.Name, b.Name) }), "catalogue must be sorted by name")
	used := map[string]bool{}
	for _, k := range all {
		t.Run(k.Name, func(t *testing.T) {
			src, err := k.Source()
			require.NoError(t, err)
			entry := regexp.MustCompile(`__kernel\s+void\s+` + regexp.QuoteMeta(k.Entry) + `\s*\(`)
			assert.Regexp(t, entry, src, "%s has no __kernel %s", k.File, k.Entry)
			got, err := kernels.Lookup(k.Name)
			require.NoError(t, err)
			assert.Equal(t, k, got)
		})
		used[k.File] = true
	}
	files := kernels.Files()
	assert.Subset(t, files, []string{"movement_copy.cl", "eltwise_unary.cl", "eltwise_binary.cl"})
	for _, f := range files {
		assert.True(t, used[f], "%s is in no catalogue entry", f)
	}
}

// TestSourceRules checks the house rules every .cl file must follow: the
// work-size contract is stated in the leading comment, every kernel is
// bounds-checked, and nothing beyond OpenCL C 1.2 is asked for.
func TestSourceRules(t *testing.T) {
	guardRe := regexp.MustCompile(`if \((gid >= n|[^;{}]*>=[^;{}]*)\) return;`)
	kernelRe := regexp.MustCompile(`__kernel\s+void\s+(\w+)\s*\(`)
	for _, f := range kernels.Files() {
		t.Run(f, func(t *testing.T) {
			src, err := kernels.Source(f)
			require.NoError(t, err)
			header := src[:strings.Index(src, "\n\n")]
			assert.True(t, strings.HasPrefix(src, "// "+f), "%s must start with a comment naming the file", f)
			assert.Contains(t, header, "Work-size contract", "%s must state its work-size contract at the top", f)
			kernelsIn := kernelRe.FindAllStringIndex(src, -1)
			require.NotEmpty(t, kernelsIn, "%s has no __kernel", f)
			for i, loc := range kernelsIn {
				end := len(src)
				if i+1 < len(kernelsIn) {
					end = kernelsIn[i+1][0]
				}
				body := src[loc[0]:end]
				if strings.Contains(body, "barrier(") {
					// Work-group kernels (gemm_sgemm.cl) cannot return early: every
					// item must reach every barrier, so they guard each load
					// and store instead and say so in their contract.
					assert.NotContains(t, body, "return", "kernel at offset %d of %s uses barriers and must not return early", loc[0], f)
					assert.Contains(t, header, "No item returns early", "%s must state how its barrier kernel is bounds-checked", f)
					continue
				}
				// One-dimensional kernels guard their item with the
				// range; N-D kernels (register-blocked conv and GEMM)
				// guard every dimension in one early return.
				assert.Regexp(t, guardRe, body, "kernel at offset %d of %s is not bounds-checked: it needs `if (gid >= n) return;` or an early `if (... >= ...) return;` on its ids", loc[0], f)
			}
			for _, banned := range []string{"#pragma OPENCL EXTENSION cl_khr_fp64", "__generic", "work_group_reduce", "printf("} {
				assert.NotContains(t, src, banned, "%s uses %q, which is not portable OpenCL C 1.2", f, banned)
			}
		})
	}
}

func TestLookupUnknown(t *testing.T) {
	_, err := kernels.Lookup("no_such_kernel")
	require.Error(t, err)
	assert.ErrorIs(t, err, kernels.ErrUnknown)
	assert.Contains(t, err.Error(), "no_such_kernel")
	assert.Contains(t, err.Error(), "relu", "the error lists the known kernels")
	_, err = kernels.Source("nope.cl")
	assert.ErrorIs(t, err, kernels.ErrUnknown)
	assert.Panics(t, func() { kernels.MustLookup("no_such_kernel") })
}

// TestSourceExpandsIncludes checks that Source replaces an include of an
// embedded header by the header's text, with #line directives that keep
// the file's own line numbers after it.
func TestSourceExpandsIncludes(t *testing.T) {
	src, err := kernels.Source("movement_strided_copy.cl")
	require.NoError(t, err)
	assert.Contains(t, src, "#line 1 \"nd_index.clh\"\n// nd_index.clh:")
	assert.Contains(t, src, "long2 nd_offsets2(")
	// The line after the include is the file's line 20.
	assert.Regexp(t, "#line 20 \"movement_strided_copy.cl\"\n\n#ifndef T\n", src)
	for _, f := range kernels.Files() {
		src, err := kernels.Source(f)
		require.NoError(t, err)
		assert.NotRegexp(t, `(?m)^#include "[^"]*\.clh"`, src, "%s keeps an include", f)
	}
}

// TestBuildOnOpenCL builds every catalogue entry with its options on the
// first OpenCL device and creates its entry point, so a syntax error or a
// missing macro fails here with the build log.
func TestBuildOnOpenCL(t *testing.T) {
	dev := firstDevice(t)
	ctx, err := cl.CreateContext([]*cl.Device{dev})
	require.NoError(t, err)
	defer func() { assert.NoError(t, ctx.Close()) }()
	for _, k := range kernels.All() {
		t.Run(k.Name, func(t *testing.T) {
			src, err := k.Source()
			require.NoError(t, err)
			prog, err := ctx.CreateProgramWithSource([]string{src})
			require.NoError(t, err)
			defer func() { assert.NoError(t, prog.Close()) }()
			require.NoError(t, prog.BuildProgram(nil, k.Options+" -cl-std=CL1.2 -Werror"), "building %s with %q", k.File, k.Options)
			kern, err := prog.CreateKernel(k.Entry)
			require.NoError(t, err)
			assert.NoError(t, kern.Close())
		})
	}
	t.Run("MissingOptionFails", func(t *testing.T) {
		src, err := kernels.MustLookup("relu").Source()
		require.NoError(t, err)
		prog, err := ctx.CreateProgramWithSource([]string{src})
		require.NoError(t, err)
		defer func() { assert.NoError(t, prog.Close()) }()
		err = prog.BuildProgram(nil, "")
		var be *cl.BuildError
		require.True(t, errors.As(err, &be), "building without -DUNARY_OP should fail with a BuildError, got %v", err)
		assert.Contains(t, be.Log(), "UNARY_OP")
	})
}

// firstDevice returns the first OpenCL device, or fails the test saying
// how to get one.
func firstDevice(t *testing.T) *cl.Device {
	t.Helper()
	if !cl.Enabled {
		t.Skip("built without OpenCL (CGO_ENABLED=0 or -tags noopencl): rebuild with cgo to build the kernels")
	}
	ps, err := cl.GetPlatforms()
	require.NoError(t, err, "no OpenCL platform: "+cl.InstallHint)
	for _, p := range ps {
		ds, err := p.GetDevices(cl.DeviceTypeAll)
		if err == nil && len(ds) > 0 {
			return ds[0]
		}
	}
	require.FailNow(t, "no OpenCL device: "+cl.InstallHint)
	return nil
}

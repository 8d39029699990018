package kernels_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/internal/clcheck"
	"github.com/clinfer/clinfer/kernels"
)

// envRequireClang turns a missing clang into a failure (make test).
const envRequireClang = "CLINFER_REQUIRE_CLANG"

// build is one program of the portability matrix: a catalogue entry and
// the extra options a lowering or a variant adds.
type build struct {
	k     kernels.Kernel
	extra string
}

func (b build) options() string { return strings.Join(strings.Fields(b.k.Options+" "+b.extra), " ") }

// usesHalf reports whether k's source takes -DHALF (half.clh's storage
// macros).
func usesHalf(t *testing.T, k kernels.Kernel) bool {
	src, err := k.Source()
	require.NoError(t, err)
	return strings.Contains(src, `#line 1 "half.clh"`)
}

// matrixBuilds returns every program the catalogue and the variant tables
// make for a device with limits lim: each entry with its own options, each
// declared variant that fits lim on every entry of its entry point, and
// each of those again with -DHALF where the kernel takes it, and the
// default SGEMM tiling where it fits; each (file, options) once.
func matrixBuilds(t *testing.T, lim kernels.Limits) []build {
	seen := map[string]bool{}
	var out []build
	add := func(k kernels.Kernel, extra string) {
		b := build{k, extra}
		key := k.File + "|" + b.options()
		if !seen[key] {
			seen[key] = true
			out = append(out, b)
		}
	}
	half := map[string]bool{}
	for _, k := range kernels.All() {
		half[k.Name] = usesHalf(t, k)
		add(k, "")
		if half[k.Name] {
			add(k, "-DHALF")
		}
	}
	for _, f := range kernels.Families() {
		for _, v := range f.Variants(lim) {
			for _, k := range kernels.All() {
				if k.Entry != v.Entry() {
					continue
				}
				add(k, v.Defines())
				if half[k.Name] {
					add(k, v.Defines()+" -DHALF")
				}
			}
		}
	}
	// The SGEMM tiling the benchmarks launch, where it fits.
	if kernels.DefaultSGEMMTiling.Fits(lim) == "" {
		add(kernels.MustLookup("sgemm"), kernels.DefaultSGEMMTiling.Options())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].k.Name+out[i].extra < out[j].k.Name+out[j].extra })
	return out
}

// TestPortabilityMatrix builds every catalogue entry with every option set
// the variant tables give it (each vector width, blocking, work group,
// HALF) for the LLVM CPU targets x86-64, haswell and skylake-avx512 with
// clang and -Werror: what a target's POCL device would plan (its vector
// width caps the variants) must build there without a warning. A target
// builds the option sets the narrower one before it could not plan; the
// others built there, which implies here. The
// option sets the GPU lowerings emit are built the same way by
// clbackend's TestLoweringOptionsBuildEverywhere.
func TestPortabilityMatrix(t *testing.T) {
	t.Parallel() // clang processes, beside TestCatalogueKernels (see there)
	if !cl.Enabled {
		// Nothing here needs OpenCL, but make test runs the cgo build's
		// tests too: one run of the matrix is enough.
		t.Skip("built without OpenCL: the cgo build of this test (go test ./kernels/) builds the matrix")
	}
	clang, err := clcheck.Clang()
	if err != nil {
		if os.Getenv(envRequireClang) != "" {
			require.NoError(t, err)
		}
		t.Skipf("%v; %s=1 makes this a failure", err, envRequireClang)
	}
	// Each target builds what the one before it could not plan
	// (clcheck.Targets: wider registers never add a diagnostic).
	before := map[string]bool{}
	for _, tg := range clcheck.Targets {
		all := matrixBuilds(t, tg.Limits)
		require.NotEmpty(t, all)
		var builds []build
		for _, b := range all {
			if !before[b.k.File+"|"+b.options()] {
				builds = append(builds, b)
			}
		}
		before = map[string]bool{}
		for _, b := range all {
			before[b.k.File+"|"+b.options()] = true
		}
		t.Run(tg.CPU, func(t *testing.T) {
			errs := buildAll(clang, tg.CPU, builds)
			for _, err := range errs {
				assert.NoError(t, err)
			}
			t.Logf("%s: %d of the %d programs a device there plans built with -Werror (the others on the narrower target)", tg.CPU, len(builds), len(all))
		})
	}
}

// buildAll builds every program with clang for cpu, a worker per CPU, and
// returns the failures.
func buildAll(clang, cpu string, builds []build) []error {
	jobs := make(chan build)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range jobs {
				src, err := b.k.Source()
				if err == nil {
					err = clcheck.Build(context.Background(), clang, cpu, fmt.Sprintf("%s (%s)", b.k.Name, b.k.File), src, b.options())
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, b := range builds {
		jobs <- b
	}
	close(jobs)
	wg.Wait()
	return errs
}

// TestMatrixWidths checks the matrix's premise: the vector widths the
// variant tables declare wider than 4 are refused on a target whose POCL
// device prefers narrower vectors, so x86-64 builds only VW 4 and haswell
// up to 8.
func TestMatrixWidths(t *testing.T) {
	for _, tg := range clcheck.Targets {
		widest := 0
		for _, f := range kernels.Families() {
			for _, v := range f.Variants(tg.Limits) {
				widest = max(widest, v.Get("VW"))
			}
		}
		assert.Equal(t, max(tg.Limits.VectorWidth, kernels.MinVectorWidth), widest, "target %s", tg.CPU)
	}
}

// TestMatrixCatchesABIChange checks the checker: fused_gemm with 16-wide
// vectors changes the vector call ABI on haswell (no AVX-512), and the
// build must fail there while it passes on skylake-avx512.
func TestMatrixCatchesABIChange(t *testing.T) {
	clang, err := clcheck.Clang()
	if err != nil {
		if os.Getenv(envRequireClang) != "" {
			require.NoError(t, err)
		}
		t.Skipf("%v; %s=1 makes this a failure", err, envRequireClang)
	}
	k := kernels.MustLookup("fused_gemm")
	src, err := k.Source()
	require.NoError(t, err)
	err = clcheck.Build(context.Background(), clang, "haswell", k.Name, src, "-DVW=16")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "changes the ABI")
	assert.NoError(t, clcheck.Build(context.Background(), clang, "skylake-avx512", k.Name, src, "-DVW=16"))
}

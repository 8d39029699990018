package clbackend

import (
	"context"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/internal/clcheck"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/plugin/driver"
)

// vwRe finds the vector width a program is built with: -DVW, or
// max_pool2d_2x2's -DPV.
var vwRe = regexp.MustCompile(`-D(?:VW|PV)=(\d+)`)

// TestLoweringOptionsBuildEverywhere records every (kernel, build options)
// the GPU lowerings emit for the cases of lowerCases, on f32 and on f16
// activations, and builds each with clang for the LLVM CPU targets x86-64,
// haswell and skylake-avx512 with -Werror (internal/clcheck): the option
// sets of the element types, windows and post-op forms, next to the
// variant tables' own that kernels' TestPortabilityMatrix builds. A
// program whose vector width this device chose above a target's is left
// out for that target: the planner there picks at most its width; one the
// narrower target before it built is left out too (clcheck.Targets).
func TestLoweringOptionsBuildEverywhere(t *testing.T) {
	clang, err := clcheck.Clang()
	if err != nil {
		if os.Getenv("CLINFER_REQUIRE_CLANG") != "" {
			require.NoError(t, err)
		}
		t.Skipf("%v; CLINFER_REQUIRE_CLANG=1 makes this a failure", err)
	}
	t.Setenv(EnvEmulateFP16, "1")
	gpu := newGPU(t)
	type program struct {
		k    kernels.Kernel
		opts string
	}
	var mu sync.Mutex
	seen := map[string]program{}
	optionRecorder = func(k kernels.Kernel, opts string) {
		mu.Lock()
		defer mu.Unlock()
		seen[k.File+"|"+opts] = program{k, opts}
	}
	t.Cleanup(func() { optionRecorder = nil })
	for op, cs := range lowerCases() {
		for ci, c := range cs {
			m, _ := c.instance(t, op, ci)
			for _, precision := range []string{"f32", "f16"} {
				cm, err := gpu.CompileModel(context.Background(), m, map[string]string{
					driver.KeyDisableTransformations: "YES", driver.KeyInferencePrecisionHint: precision})
				require.NoError(t, err, "%s/%s on %s", op, c.name, precision)
				require.NoError(t, cm.Close())
			}
		}
	}
	optionRecorder = nil
	var progs []program
	for _, p := range seen {
		progs = append(progs, p)
	}
	sort.Slice(progs, func(i, j int) bool { return progs[i].k.Name+progs[i].opts < progs[j].k.Name+progs[j].opts })
	require.NotEmpty(t, progs)
	for ti, tg := range clcheck.Targets {
		t.Run(tg.CPU, func(t *testing.T) {
			jobs := make(chan program)
			var wg sync.WaitGroup
			built := 0
			for range runtime.GOMAXPROCS(0) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for p := range jobs {
						src, err := p.k.Source()
						if err == nil {
							err = clcheck.Build(context.Background(), clang, tg.CPU, p.k.Name+" ("+p.k.File+")", src, p.opts)
						}
						mu.Lock()
						assert.NoError(t, err)
						built++
						mu.Unlock()
					}
				}()
			}
			for _, p := range progs {
				vw := 0
				if m := vwRe.FindStringSubmatch(p.opts); m != nil {
					vw, _ = strconv.Atoi(m[1])
				}
				// Past the target's width, or built on the narrower
				// target before (clcheck.New).
				if tg.Limits.VectorFits(vw) != "" || !clcheck.New(ti, vw) {
					continue
				}
				jobs <- p
			}
			close(jobs)
			wg.Wait()
			t.Logf("%s: %d of the %d programs the lowerings emitted built with -Werror (the others past its width, or on the narrower target)", tg.CPU, built, len(progs))
		})
	}
}

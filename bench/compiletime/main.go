package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clinfer/clinfer/bench"
	"github.com/clinfer/clinfer/clbackend" // registers the "GPU" device
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"

	_ "github.com/clinfer/clinfer/cpu_fallback" // registers the "CPU" device
	_ "github.com/clinfer/clinfer/hetero"       // registers the "HETERO" device
)

// defaultModel is PP-OCR det, which `make models` fetches.
const defaultModel = "ch_PP-OCRv4_det_infer.onnx"

// states are the cache states, in the order a run measures them; -export
// adds "export": a compilation without CACHE_DIR and the Export after it.
var states = []string{"cold", "program-cache", "model-cache"}

// result is what a child process reports about one compilation, and the
// Export of the compiled model after it.
type result struct {
	Millis       float64 `json:"ms"`
	Loaded       string  `json:"loaded_from_cache"`
	SourceBuilds int64   `json:"source_builds"`
	BinaryLoads  int64   `json:"binary_loads"`
	PlanRestored bool    `json:"plan_restored"`
	ExportMillis float64 `json:"export_ms"`
	// CloseMillis is how long Close took after a compilation with
	// CACHE_DIR: the wait for what a device writes there after
	// CompileModel returned (the GPU's binaries and the model cache's
	// blob, see driver.BackgroundRunner).
	CloseMillis float64 `json:"close_ms"`
	BlobBytes   int64   `json:"blob_bytes"`
}

type shapeList []tensor.Shape

func (s *shapeList) String() string {
	var parts []string
	for _, sh := range *s {
		parts = append(parts, formatShape(sh))
	}
	return strings.Join(parts, ",")
}

func (s *shapeList) Set(v string) error {
	sh, err := parseShape(v)
	if err != nil {
		return err
	}
	*s = append(*s, sh)
	return nil
}

func parseShape(v string) (tensor.Shape, error) {
	var sh tensor.Shape
	for _, f := range strings.Split(v, "x") {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad shape %q: want dims like 1x3x640x640", v)
		}
		sh = append(sh, n)
	}
	return sh, nil
}

func formatShape(s tensor.Shape) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.FormatInt(d, 10)
	}
	return strings.Join(parts, "x")
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "compiletime:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("compiletime", flag.ContinueOnError)
	model := fs.String("model", "", "ONNX model (default: PP-OCR det from the model cache, see `make models`)")
	device := fs.String("device", "GPU", "device to compile on")
	runs := fs.Int("runs", 3, "runs of each state per shape")
	child := fs.String("child", "", "internal: compile once with this CACHE_DIR (\"-\": none, and export) and print the result as JSON")
	mode := fs.String("cache_mode", driver.CacheModeOptimizeSpeed, "CACHE_MODE of the compilations on devices that have it: OPTIMIZE_SPEED (binaries in CACHE_DIR and the blob) or OPTIMIZE_SIZE (the graph only: no program-cache state)")
	export := fs.Bool("export", false, "also time CompiledModel.Export after a compilation without CACHE_DIR (the export state), and report the blob's size")
	cpuprofile := fs.String("cpuprofile", "", "with -child: write a CPU profile of the compilation to this file")
	noExport := fs.Bool("no_export", false, "with -child -: compile without CACHE_DIR and do not export (the compile's time alone)")
	driverCaches := fs.Bool("driver_caches", false, "keep the drivers' kernel caches on: every run gets a fresh POCL_CACHE_DIR, filled by one compilation before the measured ones (clinfer's caches cold, POCL's warm)")
	var shapes shapeList
	fs.Var(&shapes, "shape", "input shape to fix before compiling, e.g. 1x3x640x640 (repeatable; default 1x3x640x640 and 1x3x320x320)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *model == "" {
		p, err := conformance.ModelPath(defaultModel)
		if err != nil {
			return fmt.Errorf("%w (run `make models` or `bash scripts/fetch-models.sh`)", err)
		}
		*model = p
	}
	if len(shapes) == 0 {
		shapes = shapeList{{1, 3, 640, 640}, {1, 3, 320, 320}}
	}
	if *child != "" {
		if len(shapes) != 1 {
			return errors.New("-child takes exactly one -shape")
		}
		r, err := compileOnce(*model, shapes[0], *device, *child, *mode, *cpuprofile, !*noExport)
		if err != nil {
			return err
		}
		return json.NewEncoder(out).Encode(r)
	}
	if *runs < 1 {
		return fmt.Errorf("-runs %d: want at least 1", *runs)
	}
	measured := states
	switch *mode {
	case driver.CacheModeOptimizeSpeed:
	case driver.CacheModeOptimizeSize:
		measured = []string{"cold", "model-cache"} // no binaries in CACHE_DIR
	default:
		return fmt.Errorf("-cache_mode %q: want %s or %s", *mode, driver.CacheModeOptimizeSpeed, driver.CacheModeOptimizeSize)
	}
	if *export {
		measured = append(slices.Clip(measured), "export")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	caches := "with POCL_KERNEL_CACHE=0 CUDA_CACHE_DISABLE=1"
	if *driverCaches {
		caches = "with the drivers' kernel caches on (a fresh POCL_CACHE_DIR per run, filled by one compilation first)"
	}
	fmt.Fprintf(out, "model %s on %s, CACHE_MODE %s, %d runs per state, each compilation in a fresh process %s\n", filepath.Base(*model), *device, *mode, *runs, caches)
	for _, sh := range shapes {
		times := map[string][]float64{}
		var sizes, cached []int64
		for i := range *runs {
			dir, err := os.MkdirTemp("", "clinfer-compiletime-*")
			if err != nil {
				return err
			}
			env := bench.DriverCachesOff
			if *driverCaches {
				env = []string{"POCL_CACHE_DIR=" + filepath.Join(dir, "pocl")}
				if _, err := spawn(self, *model, sh, *device, filepath.Join(dir, "fill"), *mode, env); err != nil {
					os.RemoveAll(dir)
					return fmt.Errorf("%s filling the driver's cache, run %d: %w", formatShape(sh), i+1, err)
				}
			}
			cacheDir := filepath.Join(dir, "cache")
			for _, state := range measured {
				if state == "program-cache" {
					// Keep the program binaries, drop the model blob.
					blobs, _ := filepath.Glob(filepath.Join(cacheDir, "*.blob"))
					if len(blobs) != 1 {
						os.RemoveAll(dir)
						return fmt.Errorf("after the cold compilation CACHE_DIR holds %d model blobs, want 1", len(blobs))
					}
					if err := os.Remove(blobs[0]); err != nil {
						return err
					}
				}
				arg := cacheDir
				if state == "export" {
					arg = "-"
				}
				r, err := spawn(self, *model, sh, *device, arg, *mode, env)
				if err != nil {
					os.RemoveAll(dir)
					return fmt.Errorf("%s %s run %d: %w", formatShape(sh), state, i+1, err)
				}
				if err := check(state, r); err != nil {
					os.RemoveAll(dir)
					return fmt.Errorf("%s %s run %d: %w", formatShape(sh), state, i+1, err)
				}
				if state == "export" {
					fmt.Fprintf(out, "%s\t%-13s\trun %d\t%9.1f ms\tcompile %.1f ms, blob %d bytes\n",
						formatShape(sh), state, i+1, r.ExportMillis, r.Millis, r.BlobBytes)
					times[state] = append(times[state], r.ExportMillis)
					sizes = append(sizes, r.BlobBytes)
					continue
				}
				fmt.Fprintf(out, "%s\t%-13s\trun %d\t%9.1f ms\tLOADED_FROM_CACHE=%s source_builds=%d binary_loads=%d plan_restored=%v close=%.1f ms\n",
					formatShape(sh), state, i+1, r.Millis, r.Loaded, r.SourceBuilds, r.BinaryLoads, r.PlanRestored, r.CloseMillis)
				times[state] = append(times[state], r.Millis)
				if state == "cold" {
					// The blob the model cache keeps (a device may leave
					// out of it what only a compile needs).
					if blobs, _ := filepath.Glob(filepath.Join(cacheDir, "*.blob")); len(blobs) == 1 {
						if st, err := os.Stat(blobs[0]); err == nil {
							cached = append(cached, st.Size())
						}
					}
				}
			}
			os.RemoveAll(dir)
		}
		for _, state := range measured {
			fmt.Fprintf(out, "%s\t%-13s\tmedian\t%9.1f ms\n", formatShape(sh), state, bench.Median(times[state]))
		}
		if *export {
			fmt.Fprintf(out, "%s\t%-13s\tblob sizes %v bytes\n", formatShape(sh), "export", sizes)
		}
		if len(cached) > 0 {
			fmt.Fprintf(out, "%s\t%-13s\tCACHE_DIR blob sizes %v bytes\n", formatShape(sh), "cold", cached)
		}
	}
	return nil
}

// check makes sure each state measured what it says: the cold compilation
// built programs from source and loaded none, the warm program cache
// loaded binaries and built none, the model cache imported the blob.
func check(state string, r result) error {
	switch state {
	case "cold":
		if r.Loaded != "NO" || r.BinaryLoads != 0 {
			return fmt.Errorf("not cold: %+v", r)
		}
	case "program-cache":
		if r.Loaded != "NO" || r.SourceBuilds != 0 {
			return fmt.Errorf("the program cache did not serve every program: %+v", r)
		}
	case "export":
		if r.Loaded != "NO" || r.BlobBytes == 0 {
			return fmt.Errorf("not a compilation and its export: %+v", r)
		}
	case "model-cache":
		if r.Loaded != "YES" {
			return fmt.Errorf("not loaded from the model cache: %+v", r)
		}
	}
	return nil
}

// spawn runs one compilation in a fresh process with env added.
func spawn(self, model string, sh tensor.Shape, device, dir, mode string, env []string) (result, error) {
	cmd := exec.Command(self, "-child", dir, "-model", model, "-device", device, "-shape", formatShape(sh), "-cache_mode", mode)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return result{}, err
	}
	var r result
	if err := json.Unmarshal(b, &r); err != nil {
		return result{}, fmt.Errorf("child output %q: %w", b, err)
	}
	return r, nil
}

// compileOnce reads the model, fixes its only input to sh and times
// Core.CompileModel with CACHE_DIR dir and CACHE_MODE mode; with dir "-",
// without CACHE_DIR, and then (export: unless -no_export) the compiled
// model's Export.
func compileOnce(model string, sh tensor.Shape, device, dir, mode, cpuprofile string, export bool) (result, error) {
	m, err := onnx.ReadFile(model)
	if err != nil {
		return result{}, err
	}
	if len(m.Parameters) != 1 {
		return result{}, fmt.Errorf("model %s has %d inputs, want 1", model, len(m.Parameters))
	}
	m.Parameters[0].Outputs[0].Shape = graph.StaticShape(sh)
	core := driver.NewCore()
	defer core.Close()
	ctx := context.Background()
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return result{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return result{}, err
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	props := map[string]string{}
	if dir != "-" {
		props[driver.KeyCacheDir] = dir
	}
	if _, err := core.Property(device, driver.KeyCacheMode); err == nil {
		props[driver.KeyCacheMode] = mode
	}
	cm, err := core.CompileModel(ctx, m, device, props)
	d := time.Since(start)
	if err != nil {
		return result{}, err
	}
	closed := false
	defer func() {
		if !closed {
			cm.Close()
		}
	}()
	r := result{Millis: float64(d.Microseconds()) / 1000}
	if r.Loaded, err = cm.Property(driver.KeyLoadedFromCache); err != nil {
		return result{}, err
	}
	if p, err := core.Plugin(device); err == nil {
		if gpu, ok := p.(interface{ ProgramCacheStats() clbackend.CacheStats }); ok {
			s := gpu.ProgramCacheStats()
			r.SourceBuilds, r.BinaryLoads, r.PlanRestored = s.SourceBuilds, s.BinaryLoads, s.PlansRestored > 0
		}
	}
	if dir != "-" {
		start := time.Now()
		closed = true
		if err := cm.Close(); err != nil {
			return result{}, err
		}
		r.CloseMillis = float64(time.Since(start).Microseconds()) / 1000
	}
	if ex, ok := cm.(driver.Exporter); ok && dir == "-" && export {
		var n countWriter
		start := time.Now()
		if err := ex.Export(&n); err != nil {
			return result{}, err
		}
		r.ExportMillis, r.BlobBytes = float64(time.Since(start).Microseconds())/1000, int64(n)
	}
	return r, nil
}

// countWriter counts the bytes written to it.
type countWriter int64

func (c *countWriter) Write(b []byte) (int, error) {
	*c += countWriter(len(b))
	return len(b), nil
}

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clinfer/clinfer/clbackend/tune"
)

// ppocr are the PP-OCR models the bundle benchmarks, at the input sizes
// the OCR pipeline feeds them (the names match bench/ppocr_test.go's).
var ppocr = []struct {
	name, file, shape string
}{
	{"cls_1x3x48x192", "ch_ppocr_mobile_v2.0_cls_infer.onnx", "[1,3,48,192]"},
	{"det_1x3x320x320", "ch_PP-OCRv4_det_infer.onnx", "[1,3,320,320]"},
	{"det_1x3x640x640", "ch_PP-OCRv4_det_infer.onnx", "[1,3,640,640]"},
}

// benchmarkJSON is the part of cmd/benchmark's -json report the device
// report keeps.
type benchmarkJSON struct {
	ThroughputFPS float64 `json:"throughput_fps"`
	LatencyMS     struct {
		Median float64 `json:"median"`
	} `json:"latency_ms"`
	FirstInferenceMS float64 `json:"first_inference_ms"`
	CompileMS        float64 `json:"compile_ms"`
	Count            int     `json:"count"`
	NIReq            int     `json:"nireq"`
}

// benchSteps are the benchmark steps of a device.
func (r *runner) benchSteps() []step {
	q := r.opts.quick
	t := r.timeout(5*time.Minute, 2*time.Minute)
	var steps []step
	for _, m := range ppocr {
		for _, mode := range []string{"latency", "throughput"} {
			jsonName := fmt.Sprintf("bench-%s-%s-%d.json", m.name, mode, len(steps))
			args := []string{"bin/benchmark", "-m", filepath.Join(".cache", "models", m.file), "-d", "GPU",
				"-shape", "x=" + m.shape, "-hint", mode}
			if mode == "latency" {
				args = append(args, "-api", "sync")
			}
			if q {
				args = append(args, "-niter", "3")
			} else {
				args = append(args, "-t", "5")
			}
			jsonPath := filepath.Join(r.opts.out, "logs", jsonName)
			args = append(args, "-json", jsonPath)
			name, mode := m.name, mode
			steps = append(steps, step{
				name: "bench-" + name + "-" + mode, argv: args, timeout: t,
				bench: func(d *DeviceReport, _ string) {
					b, err := os.ReadFile(jsonPath)
					if err != nil {
						return
					}
					var j benchmarkJSON
					if json.Unmarshal(b, &j) != nil {
						return
					}
					mb := d.Bench.model(name)
					if mode == "latency" {
						mb.LatencyMS = j.LatencyMS.Median
						mb.FirstMS = j.FirstInferenceMS
						mb.CompileMS = j.CompileMS
					} else {
						mb.ThroughputFPS = j.ThroughputFPS
						mb.Requests = j.NIReq
					}
				},
			})
		}
	}
	sgemm := "^BenchmarkSGEMM$/.*/^clinfer"
	benchtime := "5x"
	if q {
		sgemm = "^BenchmarkSGEMM$/^(256x256x256|512x512x512)$/^clinfer$"
		benchtime = "2x"
	}
	steps = append(steps,
		step{name: "bench-sgemm", dir: "bench", timeout: t,
			argv:  []string{"bench/bench.test", "-test.run", "^$", "-test.bench", sgemm, "-test.benchtime", benchtime},
			bench: func(d *DeviceReport, out string) { d.Bench.SGEMM = sgemmFigures(parseBench(out)) }},
		step{name: "bench-copy-launch", dir: "bench", timeout: t,
			argv: []string{"bench/bench.test", "-test.run", "^$", "-test.bench", "^Benchmark(Copy|Launch)$", "-test.benchtime", map[bool]string{true: "3x", false: "20x"}[q]},
			bench: func(d *DeviceReport, out string) {
				d.Bench.CopyGBs, d.Bench.LaunchUS = copyLaunchFigures(parseBench(out))
			}},
	)
	steps = append(steps, r.tuneSteps(t)...)
	model, file, shape := "PP-OCR det", ppocr[1].file, "1x3x640x640"
	if q {
		// Each compilation of bench/compiletime is cold (no kernel
		// cache): PP-OCR det 320 ran past the 2-minute step limit on a
		// busy 2-core POCL (pthread-skylake-avx512, load 13), cls took
		// 86 s, the wake-word head 11 s.
		model, file, shape = quickTune.name, quickTune.file, "1x25x96"
	}
	steps = append(steps, step{name: "bench-compile-time", timeout: t,
		argv: []string{"bin/compiletime", "-model", filepath.Join(".cache", "models", file), "-device", "GPU", "-shape", shape, "-runs", "1"},
		bench: func(d *DeviceReport, out string) {
			d.Bench.Compile = compileFigures(out)
			for i := range d.Bench.Compile {
				d.Bench.Compile[i].Model = model
			}
		}})
	return steps
}

// tuneJSON is the part of cmd/tune's -json report the device report keeps.
type tuneJSON struct {
	Mode        string  `json:"mode"`
	TuneSeconds float64 `json:"tune_seconds"`
	BeforeMs    float64 `json:"before_ms"`
	AfterMs     float64 `json:"after_ms"`
	Tuned       int     `json:"tuned"`
	Recorded    int     `json:"recorded"`
}

// quickTune is the model --quick compiles (bench/compiletime): the
// hello_deepa wake-word head (static shapes, input 1x25x96). PP-OCR det 320
// ran past the 2-minute step limit and cls took 86 s cold on a busy 2-core
// POCL (pthread-skylake-avx512, load 13), the wake-word head 11 s.
var quickTune = struct{ name, file, shape string }{"hello_deepa", "hello_deepa.onnx", ""}

// quickTuneModel is the model --quick tunes: ONNX's pytorch-converted
// Conv2d case from the bundle's onnx-testdata (one convolution with a
// variant choice, tuned in about 3 s on POCL). A tuning pass builds every
// candidate variant, so its time is the driver's cold compiles: cls took
// 412 s on a busy POCL, and the wake-word heads have had no kernel choice
// to tune since FuseFCLayerNormRelu, so tuning them checked nothing.
var quickTuneModel = tuneModel{"Conv2d", filepath.Join("onnx-testdata", "pytorch-converted", "test_Conv2d", "model.onnx"), ""}

// tuneModel is a model a tuning step tunes: its name in the report, its
// file relative to the bundle, and its input shape (cmd/tune -shape).
type tuneModel struct{ name, path, input string }

// tuneModels are the models the exhaustive tuning steps tune, the first
// (det 640) being the one whose before and after the report shows.
var tuneModels = []tuneModel{
	{"det_1x3x640x640", filepath.Join(".cache", "models", "ch_PP-OCRv4_det_infer.onnx"), "x=[1,3,640,640]"},
	{"det_1x3x320x320", filepath.Join(".cache", "models", "ch_PP-OCRv4_det_infer.onnx"), "x=[1,3,320,320]"},
	{"cls_1x3x48x192", filepath.Join(".cache", "models", "ch_ppocr_mobile_v2.0_cls_infer.onnx"), "x=[1,3,48,192]"},
	{"rec_1x3x48x320", filepath.Join(".cache", "models", "ch_PP-OCRv4_rec_infer.onnx"), "x=[1,3,48,320]"},
}

// tuneSteps are the tuning passes (cmd/tune) of a device into a tuning
// cache of the run's own, each also writing the device's shipped tuning
// database into OUTDIR/tuning (`make tuning-db REPORT=OUTDIR` copies it
// into kernels/tuning): with -tune fast one FAST pass of PP-OCR det 640
// (quickTuneModel with -quick), with -tune exhaustive EXHAUSTIVE passes of every
// model of tuneModels. The first pass's latency before (heuristics) and
// after (tuned kernels) goes into the report.
func (r *runner) tuneSteps(t time.Duration) []step {
	// cmd/tune's own rounds (-runs, at least tune.MinRounds) confirm the
	// choices in the model and time it.
	models := tuneModels[:1]
	if r.opts.quick {
		models = []tuneModel{quickTuneModel}
	}
	if r.opts.tune == "exhaustive" {
		models = tuneModels
	}
	var steps []step
	for i, m := range models {
		jsonPath := filepath.Join(r.opts.out, "logs", "tune-"+m.name+".json")
		argv := []string{"bin/tune", "-m", m.path, "-d", "GPU"}
		if m.input != "" {
			argv = append(argv, "-shape", m.input)
		}
		s := step{name: "tune-" + r.opts.tune + "-" + m.name, timeout: t,
			argv: append(argv, "-mode", r.opts.tune, "-cache_dir", filepath.Join(r.opts.out, "tune-cache"), "-json", jsonPath,
				"-ship", filepath.Join(r.opts.out, "tuning"))}
		if i == 0 {
			name := m.name
			s.bench = func(d *DeviceReport, _ string) {
				b, err := os.ReadFile(jsonPath)
				if err != nil {
					return
				}
				var j tuneJSON
				if json.Unmarshal(b, &j) != nil || j.AfterMs <= 0 {
					return
				}
				d.Bench.Tune = &TuneBench{Model: name, Mode: j.Mode, Seconds: j.TuneSeconds, BeforeMS: j.BeforeMs, AfterMS: j.AfterMs, Choices: j.Tuned + j.Recorded}
				d.Tuning = fmt.Sprintf("%s on %s: %d kernel choices in %.1f s; latency %.2f ms with the heuristics, %.2f ms tuned (%.2fx)",
					j.Mode, name, j.Tuned+j.Recorded, j.TuneSeconds, j.BeforeMs, j.AfterMs, j.BeforeMs/j.AfterMs)
			}
		}
		steps = append(steps, s)
	}
	return steps
}

// model returns the figures of the named model benchmark, adding them.
func (b *Benchmarks) model(name string) *ModelBench {
	for i := range b.Models {
		if b.Models[i].Name == name {
			return &b.Models[i]
		}
	}
	b.Models = append(b.Models, ModelBench{Name: name})
	return &b.Models[len(b.Models)-1]
}

// sgemmFigures reads BenchmarkSGEMM/NxNxN/impl's gflops.
func sgemmFigures(res map[string]map[string]float64) []SGEMMBench {
	var out []SGEMMBench
	for name, m := range res {
		parts := strings.Split(name, "/")
		if len(parts) != 3 || parts[0] != "BenchmarkSGEMM" {
			continue
		}
		n, err := strconv.Atoi(strings.SplitN(parts[1], "x", 2)[0])
		if err != nil {
			continue
		}
		out = append(out, SGEMMBench{N: n, Impl: parts[2], GFLOPS: m["gflops"], MS: m["ms/gemm"]})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].N != out[j].N {
			return out[i].N < out[j].N
		}
		return out[i].Impl < out[j].Impl
	})
	return out
}

// copyLaunchFigures reads BenchmarkCopy's GB/s and BenchmarkLaunch's
// µs/launch.
func copyLaunchFigures(res map[string]map[string]float64) (map[string]float64, map[string]float64) {
	cp, la := map[string]float64{}, map[string]float64{}
	for name, m := range res {
		switch {
		case strings.HasPrefix(name, "BenchmarkCopy/"):
			cp[strings.ReplaceAll(strings.TrimPrefix(name, "BenchmarkCopy/"), "/", " ")] = m["GB/s"]
		case strings.HasPrefix(name, "BenchmarkLaunch/"):
			la[strings.TrimPrefix(name, "BenchmarkLaunch/")] = m["µs/launch"]
		}
	}
	return cp, la
}

// compileFigures reads bench/compiletime's median lines ("1x3x640x640
// cold median 1234.5 ms").
func compileFigures(out string) []CompileBench {
	byShape := map[string]*CompileBench{}
	var order []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 5 || f[2] != "median" || f[4] != "ms" {
			continue
		}
		v, err := strconv.ParseFloat(f[3], 64)
		if err != nil {
			continue
		}
		c, ok := byShape[f[0]]
		if !ok {
			c = &CompileBench{Shape: f[0]}
			byShape[f[0]] = c
			order = append(order, f[0])
		}
		switch f[1] {
		case "cold":
			c.ColdMS = v
		case "program-cache":
			c.ProgramCacheMS = v
		case "model-cache":
			c.ModelCacheMS = v
		}
	}
	out2 := make([]CompileBench, 0, len(order))
	for _, s := range order {
		out2 = append(out2, *byShape[s])
	}
	return out2
}

// copyTuningDBs copies the shipped tuning databases a run wrote
// (from/tuning/*.json) into dir, each checked first (format, declared
// variants, its name that of the device it was made on), and says what it
// wrote.
func copyTuningDBs(from, dir string, out io.Writer) error {
	if from == "" {
		return fmt.Errorf("-tuning-db needs -from REPORT_DIR (a device bundle run's output)")
	}
	files, err := filepath.Glob(filepath.Join(from, "tuning", "*.json"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no shipped tuning databases in %s (a run of this bundle's run.sh writes them there)", filepath.Join(from, "tuning"))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		db, err := tune.ParseShipped(b)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if want := tune.ShippedName(db.Name, db.Vendor); filepath.Base(f) != want {
			return fmt.Errorf("%s holds the database of %s (%s), which is named %s", f, db.Name, db.Vendor, want)
		}
		dst := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(out, "devicereport: %s: %d records of %s (%s)\n", dst, len(db.Entries), db.Name, db.Source)
	}
	return nil
}

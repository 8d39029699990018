package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Report is report.json: what ran where and every figure.
type Report struct {
	// Format is the version of this layout.
	Format int `json:"format"`
	// Bundle identifies the build (the BUNDLE file: commit and date).
	Bundle  string  `json:"bundle"`
	Started string  `json:"started"`
	Seconds float64 `json:"seconds"`
	Quick   bool    `json:"quick"`
	Host    Host    `json:"host"`
	// Platforms are the OpenCL platforms clinfo found.
	Platforms []Platform `json:"platforms"`
	// Machine are the suites that cover every device at once.
	Machine []Suite        `json:"machine_suites"`
	Devices []DeviceReport `json:"devices"`
	// Complete is false while the run goes on (and in the report of a run
	// that was cut short).
	Complete bool `json:"complete"`
	Passed   bool `json:"passed"`
}

// Host is the machine.
type Host struct {
	Name   string `json:"name"`
	OS     string `json:"os"`
	Kernel string `json:"kernel"`
	CPU    string `json:"cpu"`
	CPUs   int    `json:"cpus"`
}

// Platform is one OpenCL platform.
type Platform struct {
	Name    string `json:"name"`
	Vendor  string `json:"vendor"`
	Version string `json:"version"`
}

// DeviceReport is one device: its facts, its suites and its benchmarks.
type DeviceReport struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	Vendor         string   `json:"vendor"`
	Type           string   `json:"type"`
	Platform       string   `json:"platform"`
	Driver         string   `json:"driver"`
	Version        string   `json:"opencl_version"`
	CVersion       string   `json:"opencl_c_version"`
	ComputeUnits   int      `json:"compute_units"`
	ClockMHz       int      `json:"clock_mhz"`
	GlobalMemBytes int64    `json:"global_mem_bytes"`
	MaxWorkGroup   int      `json:"max_work_group_size"`
	HasFP16        bool     `json:"cl_khr_fp16"`
	HasFP64        bool     `json:"cl_khr_fp64"`
	Extensions     []string `json:"extensions"`
	Suites         []Suite  `json:"suites"`
	Parity         string   `json:"onnx_parity"`
	// ONNX is the ONNX backend suite on this device alone (the step's
	// counts include the CPU suite it runs for the parity check).
	ONNX   *Counts    `json:"onnx_gpu,omitempty"`
	F16    string     `json:"f16_mode"`
	Tuning string     `json:"tuning"`
	Bench  Benchmarks `json:"benchmarks"`
}

// Suite is one step's outcome: test counts for a test suite, or only the
// error for a benchmark.
type Suite struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	Passed  int    `json:"passed"`
	Failed  int    `json:"failed"`
	Skipped int    `json:"skipped"`
	// Listed counts the tests a -list-suites run listed (none ran).
	Listed  int      `json:"listed,omitempty"`
	Failing []string `json:"failing,omitempty"`
	Error   string   `json:"error,omitempty"`
	Seconds float64  `json:"seconds"`
	Log     string   `json:"log"`

	output string
}

// Counts are passed, failed and skipped cases.
type Counts struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
}

// ok reports whether the step passed.
func (s Suite) ok() bool { return s.Error == "" && s.Failed == 0 }

// Benchmarks are a device's figures.
type Benchmarks struct {
	Models   []ModelBench       `json:"models"`
	SGEMM    []SGEMMBench       `json:"sgemm"`
	CopyGBs  map[string]float64 `json:"copy_gb_per_s"`
	LaunchUS map[string]float64 `json:"launch_us"`
	Compile  []CompileBench     `json:"compile"`
	// Tune is the FAST tuning pass (cmd/tune), when it ran.
	Tune *TuneBench `json:"tune,omitempty"`
}

// TuneBench is a tuning pass of one model: its mode, wall time, kernel
// choices, and the model's median latency before (heuristics) and after.
type TuneBench struct {
	Model    string  `json:"model"`
	Mode     string  `json:"mode"`
	Seconds  float64 `json:"seconds"`
	Choices  int     `json:"choices"`
	BeforeMS float64 `json:"before_ms"`
	AfterMS  float64 `json:"after_ms"`
}

// ModelBench is one PP-OCR model: median latency (sync, LATENCY hint),
// throughput (async, THROUGHPUT hint), first inference and compile time.
type ModelBench struct {
	Name          string  `json:"name"`
	LatencyMS     float64 `json:"latency_ms"`
	ThroughputFPS float64 `json:"throughput_fps"`
	Requests      int     `json:"throughput_requests"`
	FirstMS       float64 `json:"first_inference_ms"`
	CompileMS     float64 `json:"compile_ms"`
}

// SGEMMBench is one square SGEMM size.
type SGEMMBench struct {
	N      int     `json:"n"`
	Impl   string  `json:"impl"`
	GFLOPS float64 `json:"gflops"`
	MS     float64 `json:"ms"`
}

// CompileBench is compile time of a model (PP-OCR det; --quick: the
// hello_deepa wake-word head), each in a fresh process: cold, with the
// program binaries cached, and from the model cache.
type CompileBench struct {
	// Model is the model compiled (empty in reports before it was
	// recorded: PP-OCR det).
	Model          string  `json:"model,omitempty"`
	Shape          string  `json:"shape"`
	ColdMS         float64 `json:"cold_ms"`
	ProgramCacheMS float64 `json:"program_cache_ms"`
	ModelCacheMS   float64 `json:"model_cache_ms"`
}

// clinfoJSON is the part of cmd/clinfo -json the report reads.
type clinfoJSON struct {
	Platforms []struct {
		Name    string `json:"name"`
		Vendor  string `json:"vendor"`
		Version string `json:"version"`
		Devices []struct {
			Name         string   `json:"name"`
			Vendor       string   `json:"vendor"`
			Type         string   `json:"type"`
			Version      string   `json:"version"`
			Driver       string   `json:"driverVersion"`
			CVersion     string   `json:"openclCVersion"`
			ComputeUnits int      `json:"maxComputeUnits"`
			ClockMHz     int      `json:"maxClockFrequencyMHz"`
			GlobalMem    int64    `json:"globalMemSize"`
			MaxWorkGroup int      `json:"maxWorkGroupSize"`
			FP16         bool     `json:"fp16"`
			FP64         bool     `json:"fp64"`
			Extensions   []string `json:"extensions"`
			Clinfer      *struct {
				Device string `json:"device"`
			} `json:"clinfer"`
		} `json:"devices"`
	} `json:"platforms"`
}

func (c clinfoJSON) platforms() []Platform {
	var out []Platform
	for _, p := range c.Platforms {
		out = append(out, Platform{Name: p.Name, Vendor: p.Vendor, Version: p.Version})
	}
	return out
}

// devices are the devices clinfer uses, in its DEVICE_ID order.
func (c clinfoJSON) devices() []DeviceReport {
	var out []DeviceReport
	for _, p := range c.Platforms {
		for _, d := range p.Devices {
			if d.Clinfer == nil || d.Clinfer.Device == "" {
				continue
			}
			out = append(out, DeviceReport{
				ID: d.Clinfer.Device, Name: d.Name, Vendor: d.Vendor, Type: d.Type, Platform: p.Name,
				Driver: d.Driver, Version: d.Version, CVersion: d.CVersion, ComputeUnits: d.ComputeUnits,
				ClockMHz: d.ClockMHz, GlobalMemBytes: d.GlobalMem, MaxWorkGroup: d.MaxWorkGroup,
				HasFP16: d.FP16, HasFP64: d.FP64, Extensions: d.Extensions,
				Tuning: "not run",
			})
		}
	}
	slices.SortFunc(out, func(a, b DeviceReport) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// passed reports whether every step passed.
func (r *Report) passed() bool { return len(r.failures()) == 0 }

// failures names each step that failed.
func (r *Report) failures() []string {
	var out []string
	for _, s := range r.Machine {
		if !s.ok() {
			out = append(out, s.Name)
		}
	}
	for _, d := range r.Devices {
		for _, s := range d.Suites {
			if !s.ok() {
				out = append(out, d.ID+" "+s.Name)
			}
		}
	}
	return out
}

// write writes report.json and report.md.
func (r *runner) write() error {
	b, err := json.MarshalIndent(r.rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.opts.out, "report.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.opts.out, "report.md"), []byte(r.rep.markdown()), 0o644)
}

// markdown is report.md.
func (r *Report) markdown() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	title := "clinfer device report"
	if len(r.Devices) > 0 {
		title += ": " + r.Devices[0].Name
	}
	w("# %s\n\n", title)
	verdict := "**every suite passed**"
	if !r.Complete {
		verdict = "**INCOMPLETE** (the run was cut short or is still going; the steps below are those that ran)"
		if f := r.failures(); len(f) > 0 {
			verdict += "; failed: " + strings.Join(f, ", ")
		}
	} else if !r.Passed {
		verdict = "**FAILED**: " + strings.Join(r.failures(), ", ")
	}
	w("%s. Bundle %s; started %s, %.0f s%s.\n\n", verdict, orDash(r.Bundle), r.Started, r.Seconds, map[bool]string{true: ", `--quick`"}[r.Quick])
	w("Host: %s, %s (%d CPUs), Linux %s.\n\n", orDash(r.Host.Name), orDash(r.Host.CPU), r.Host.CPUs, orDash(r.Host.Kernel))
	w("OpenCL platforms:\n\n")
	for _, p := range r.Platforms {
		w("* %s (%s): %s\n", p.Name, p.Vendor, p.Version)
	}
	w("\n")
	if len(r.Machine) > 0 {
		w("## Suites over every device\n\n")
		suiteTable(&b, r.Machine)
	}
	for _, d := range r.Devices {
		w("## %s: %s\n\n", d.ID, d.Name)
		w("| fact | value |\n|---|---|\n")
		w("| type | %s |\n| vendor | %s |\n| platform | %s |\n| driver | %s |\n| OpenCL | %s |\n| OpenCL C | %s |\n",
			d.Type, d.Vendor, d.Platform, d.Driver, d.Version, d.CVersion)
		w("| compute units | %d at %d MHz |\n| global memory | %.1f GiB |\n| max work-group size | %d |\n",
			d.ComputeUnits, d.ClockMHz, float64(d.GlobalMemBytes)/(1<<30), d.MaxWorkGroup)
		onnx := "-"
		if c := d.ONNX; c != nil {
			onnx = fmt.Sprintf("%d passed, %d failed, %d skipped (unsupported op or type, or excluded)", c.Passed, c.Failed, c.Skipped)
		}
		w("| cl_khr_fp16 / cl_khr_fp64 | %s / %s |\n| f16 tests | %s |\n| ONNX backend suite on the device | %s |\n| ONNX parity | %s |\n| tuning | %s |\n\n",
			yesNo(d.HasFP16), yesNo(d.HasFP64), orDash(d.F16), onnx, orDash(d.Parity), d.Tuning)
		w("Extensions: %s\n\n", strings.Join(d.Extensions, " "))
		w("### Suites\n\n")
		suiteTable(&b, d.Suites)
		w("### Benchmarks\n\n")
		if len(d.Bench.Models) > 0 {
			w("| PP-OCR model | latency (ms, median, sync) | throughput (FPS) | requests | first inference (ms) | compile (ms) |\n|---|---|---|---|---|---|\n")
			for _, m := range d.Bench.Models {
				w("| %s | %s | %s | %d | %s | %s |\n", m.Name, num(m.LatencyMS), num(m.ThroughputFPS), m.Requests, num(m.FirstMS), num(m.CompileMS))
			}
			w("\n")
		}
		if len(d.Bench.SGEMM) > 0 {
			w("| SGEMM n | kernel | GFLOPS | ms |\n|---|---|---|---|\n")
			for _, s := range d.Bench.SGEMM {
				w("| %d | %s | %s | %s |\n", s.N, s.Impl, num(s.GFLOPS), num(s.MS))
			}
			w("\n")
		}
		if len(d.Bench.CopyGBs) > 0 {
			w("| copy | GB/s |\n|---|---|\n")
			for _, k := range sortedKeys(d.Bench.CopyGBs) {
				w("| %s | %s |\n", k, num(d.Bench.CopyGBs[k]))
			}
			w("\n")
		}
		if len(d.Bench.LaunchUS) > 0 {
			w("| kernel launch | µs per launch |\n|---|---|\n")
			for _, k := range sortedKeys(d.Bench.LaunchUS) {
				w("| %s | %s |\n", k, num(d.Bench.LaunchUS[k]))
			}
			w("\n")
		}
		if len(d.Bench.Compile) > 0 {
			model := cmp.Or(d.Bench.Compile[0].Model, "PP-OCR det")
			w("| compile %s | cold (ms) | program cache (ms) | model cache (ms) |\n|---|---|---|---|\n", model)
			for _, c := range d.Bench.Compile {
				w("| %s | %s | %s | %s |\n", c.Shape, num(c.ColdMS), num(c.ProgramCacheMS), num(c.ModelCacheMS))
			}
			w("\n")
		}
	}
	return b.String()
}

// suiteTable writes the suites as a table, then the failing cases.
func suiteTable(b *strings.Builder, ss []Suite) {
	fmt.Fprintf(b, "| step | result | passed | failed | skipped | seconds | log |\n|---|---|---|---|---|---|---|\n")
	for _, s := range ss {
		res := "ok"
		if !s.ok() {
			res = "**FAIL**"
			if s.Error != "" {
				res += ": " + strings.ReplaceAll(firstLine(s.Error), "|", "/")
			}
		}
		counts := [3]string{"", "", ""}
		if s.Listed > 0 && s.ok() {
			res = fmt.Sprintf("listed %d tests, not run", s.Listed)
		}
		if s.Passed+s.Failed+s.Skipped > 0 {
			counts = [3]string{fmt.Sprint(s.Passed), fmt.Sprint(s.Failed), fmt.Sprint(s.Skipped)}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %.0f | `%s` |\n", s.Name, res, counts[0], counts[1], counts[2], s.Seconds, s.Log)
	}
	b.WriteString("\n")
	for _, s := range ss {
		if len(s.Failing) == 0 {
			continue
		}
		fmt.Fprintf(b, "Failing in %s:\n\n", s.Name)
		for _, f := range s.Failing {
			fmt.Fprintf(b, "* `%s`\n", f)
		}
		b.WriteString("\n")
	}
}

func num(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sortedKeys(m map[string]float64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

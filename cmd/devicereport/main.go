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
	"runtime"
	"slices"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the command-line flags.
type options struct {
	bundle, out, devices string
	quick                bool
	// listSuites lists each test suite's tests instead of running them.
	listSuites     bool
	maxStep        time.Duration
	matrix, readme string
	check          bool
	// tune is the tuning mode of the tuning steps (fast, exhaustive);
	// tuningDB and from: copy a run's shipped databases into the
	// repository instead of running.
	tune, tuningDB, from string
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("devicereport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.bundle, "bundle", "", "the unpacked device bundle (run.sh passes it)")
	fs.StringVar(&o.out, "out", "", "directory for report.md, report.json and the logs")
	fs.StringVar(&o.devices, "devices", "", "comma-separated clinfer device ids to test (default: every OpenCL device, GPU.0, GPU.1, ...)")
	fs.DurationVar(&o.maxStep, "max-step", 0, "cap every step's time limit (e.g. 4m on a lent machine with little time); 0: the defaults")
	fs.BoolVar(&o.quick, "quick", false, "a short pass of every step (CI): subsets of the suites, one short run per benchmark")
	fs.BoolVar(&o.listSuites, "list-suites", false, "list each test suite's tests (-test.list) instead of running them, for a machine whose `go test` ran them on this device already (make test's bundle check); the benchmarks run")
	fs.StringVar(&o.matrix, "matrix", "", "regenerate the README's device matrix from the reports (*.json) in this directory instead")
	fs.StringVar(&o.readme, "readme", "README.md", "with -matrix: the README to update")
	fs.BoolVar(&o.check, "check", false, "with -matrix: fail if the README's matrix is stale instead of writing it")
	fs.StringVar(&o.tune, "tune", "fast", "tuning mode of the tuning steps: fast (PP-OCR det 640, or 320 with -quick) or exhaustive (det 640 and 320, cls and rec); each writes the device's shipped tuning database into OUTDIR/tuning")
	fs.StringVar(&o.tuningDB, "tuning-db", "", "copy the shipped tuning databases of the run in -from (OUTDIR/tuning/*.json) into this directory (kernels/tuning) instead, checking each")
	fs.StringVar(&o.from, "from", "", "with -tuning-db: the report directory of a device bundle run")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.tuningDB != "" {
		if err := copyTuningDBs(o.from, o.tuningDB, stdout); err != nil {
			fmt.Fprintln(stderr, "devicereport:", err)
			return 1
		}
		return 0
	}
	if o.tune != "fast" && o.tune != "exhaustive" {
		fmt.Fprintf(stderr, "devicereport: -tune %q: want fast or exhaustive\n", o.tune)
		return 2
	}
	if o.matrix != "" {
		if err := updateMatrix(o.matrix, o.readme, o.check, stdout); err != nil {
			fmt.Fprintln(stderr, "devicereport:", err)
			return 1
		}
		return 0
	}
	if o.bundle == "" || o.out == "" {
		fmt.Fprintln(stderr, "devicereport: -bundle and -out are required (run.sh sets them; see -h)")
		return 2
	}
	r := &runner{opts: o, log: stdout}
	code, err := r.run(context.Background())
	if err != nil {
		fmt.Fprintln(stderr, "devicereport:", err)
	}
	return code
}

// runner runs the steps and collects the report.
type runner struct {
	opts  options
	log   io.Writer
	step  int
	steps int
	rep   Report
}

// errNoDevice is returned when clinfo finds no OpenCL device.
var errNoDevice = errors.New("no OpenCL device")

func (r *runner) run(ctx context.Context) (int, error) {
	start := time.Now()
	if err := os.MkdirAll(filepath.Join(r.opts.out, "logs"), 0o755); err != nil {
		return 1, err
	}
	r.rep = Report{
		Format:  1,
		Started: start.UTC().Format(time.RFC3339),
		Quick:   r.opts.quick,
		Host:    hostInfo(),
	}
	if b, err := os.ReadFile(filepath.Join(r.opts.bundle, "BUNDLE")); err == nil {
		r.rep.Bundle = strings.TrimSpace(string(b))
	}
	devs, err := r.clinfo(ctx)
	if err != nil {
		code := 1
		if errors.Is(err, errNoDevice) {
			code = 2
		}
		return code, err
	}
	if r.opts.devices != "" {
		want := strings.Split(r.opts.devices, ",")
		var keep []DeviceReport
		for _, d := range devs {
			if slices.Contains(want, d.ID) {
				keep = append(keep, d)
			}
		}
		if len(keep) == 0 {
			return 2, fmt.Errorf("-devices %s names none of the devices (%s)", r.opts.devices, deviceIDs(devs))
		}
		devs = keep
	}
	machine := r.machineSteps()
	r.steps = len(machine) + len(devs)*len(r.deviceSteps(DeviceReport{}))
	fmt.Fprintf(r.log, "devicereport: %d device(s): %s; %d steps%s\n", len(devs), deviceIDs(devs), r.steps, map[bool]string{true: " (quick)"}[r.opts.quick])
	// The report is rewritten after every step, marked incomplete until
	// the end, so a run cut short still leaves what it measured.
	r.rep.Devices = devs
	for i := range r.rep.Devices {
		d := &r.rep.Devices[i]
		for _, s := range r.deviceSteps(*d) {
			res := r.runStep(ctx, s, d.ID)
			if s.bench != nil && res.Error == "" {
				s.bench(d, res.output)
			}
			if s.after != nil {
				s.after(d, res)
			}
			res.output = ""
			d.Suites = append(d.Suites, res)
			r.checkpoint(start)
		}
	}
	for _, s := range machine {
		r.rep.Machine = append(r.rep.Machine, r.runStep(ctx, s, ""))
		r.checkpoint(start)
	}
	r.rep.Complete = true
	r.checkpoint(start)
	if err := r.write(); err != nil {
		return 1, err
	}
	verdict := "every suite passed"
	if !r.rep.Passed {
		verdict = "FAILED: " + strings.Join(r.rep.failures(), "; ")
	}
	fmt.Fprintf(r.log, "devicereport: %s in %.0f s; report in %s\n", verdict, r.rep.Seconds, filepath.Join(r.opts.out, "report.md"))
	if !r.rep.Passed {
		return 1, nil
	}
	return 0, nil
}

// checkpoint updates the totals and rewrites the report.
func (r *runner) checkpoint(start time.Time) {
	r.rep.Seconds = time.Since(start).Seconds()
	r.rep.Passed = r.rep.Complete && r.rep.passed()
	if err := r.write(); err != nil {
		fmt.Fprintf(r.log, "devicereport: writing the report: %v\n", err)
	}
}

// step is one command the runner runs: a test suite (parsed as `go test
// -v` output) or a benchmark (its output handed to bench).
type step struct {
	name    string
	dir     string // relative to the bundle
	argv    []string
	env     []string
	timeout time.Duration
	// tests: the output is `go test -v` output to count.
	tests bool
	// list: the output is a -test.list listing to count (-list-suites).
	list bool
	// bench, when set, reads figures from the output of a step that
	// succeeded.
	bench func(d *DeviceReport, out string)
	// after, when set, looks at the finished step (notes, f16 mode).
	after func(d *DeviceReport, s Suite)
}

// runStep runs s with CLINFER_GPU_DEVICE=device (when device is set) and
// returns its result; the output goes to logs/<device>-<name>.log.
func (r *runner) runStep(ctx context.Context, s step, device string) Suite {
	r.step++
	label := s.name
	if device != "" {
		label = device + " " + s.name
	}
	fmt.Fprintf(r.log, "[%d/%d] %s ...\n", r.step, r.steps, label)
	res := Suite{Name: s.name, Command: strings.Join(s.argv, " ")}
	logName := strings.ReplaceAll(strings.TrimPrefix(label, " "), " ", "-") + ".log"
	res.Log = filepath.Join("logs", logName)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	argv0 := filepath.Join(r.opts.bundle, s.argv[0])
	cmd := exec.CommandContext(ctx, argv0, s.argv[1:]...)
	cmd.Dir = filepath.Join(r.opts.bundle, s.dir)
	cmd.Env = append(os.Environ(),
		"CLINFER_MODELS="+filepath.Join(r.opts.bundle, ".cache", "models"),
		"CLINFER_ONNX_TESTDATA="+filepath.Join(r.opts.bundle, "onnx-testdata"),
	)
	if device != "" {
		cmd.Env = append(cmd.Env, "CLINFER_GPU_DEVICE="+device)
	}
	cmd.Env = append(cmd.Env, s.env...)
	cmd.WaitDelay = 10 * time.Second
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	res.Seconds = time.Since(t0).Seconds()
	res.output = string(out)
	if werr := os.WriteFile(filepath.Join(r.opts.out, res.Log), out, 0o644); werr != nil && err == nil {
		err = werr
	}
	if s.tests {
		tr := parseTestOutput(res.output)
		res.Passed, res.Failed, res.Skipped, res.Failing = tr.counts()
		if res.Passed+res.Failed+res.Skipped == 0 && err == nil {
			err = errors.New("ran no tests")
		}
	}
	if s.list {
		res.Listed = countListed(res.output)
		if res.Listed == 0 && err == nil {
			err = errors.New("listed no tests")
		}
	}
	if ctx.Err() == context.DeadlineExceeded {
		res.Error = fmt.Sprintf("timed out after %v", s.timeout)
	} else if err != nil {
		res.Error = err.Error()
		if tail := lastLines(res.output, 3); tail != "" && res.Failed == 0 {
			res.Error += ": " + tail
		}
	}
	status := "ok"
	switch {
	case res.Error != "" || res.Failed > 0:
		status = "FAIL"
		if res.Error != "" {
			status += " (" + firstLine(res.Error) + ")"
		}
	}
	if s.list {
		fmt.Fprintf(r.log, "[%d/%d] %s: %s: %d tests listed (not run: -list-suites) in %.0f s\n", r.step, r.steps, label, status, res.Listed, res.Seconds)
	} else if s.tests {
		fmt.Fprintf(r.log, "[%d/%d] %s: %s: %d passed, %d failed, %d skipped in %.0f s\n", r.step, r.steps, label, status, res.Passed, res.Failed, res.Skipped, res.Seconds)
		for i, f := range res.Failing {
			if i == 10 {
				fmt.Fprintf(r.log, "    ... and %d more (see %s)\n", len(res.Failing)-10, res.Log)
				break
			}
			fmt.Fprintf(r.log, "    failed: %s\n", f)
		}
	} else {
		fmt.Fprintf(r.log, "[%d/%d] %s: %s in %.0f s\n", r.step, r.steps, label, status, res.Seconds)
	}
	return res
}

// machineSteps are the suites that cover every device at once: the cl
// binding's tests and the kernel catalogue's (each builds on every
// device).
func (r *runner) machineSteps() []step {
	t := r.timeout(5*time.Minute, 2*time.Minute)
	// The kernel catalogue launches every declared variant that fits the
	// device (its limits, as the planner reads them) of every kernel: as long as a package suite (8 min with
	// --quick: 2.5 min on a quiet 2-core skylake-avx512 POCL).
	tk := r.timeout(12*time.Minute, 8*time.Minute)
	return r.listed([]step{
		{name: "cl-binding", dir: "clbackend/cl", argv: []string{"clbackend/cl/cl.test", "-test.v", "-test.count=1", "-test.timeout=" + t.String()}, tests: true, timeout: t + 15*time.Second},
		{name: "kernels", dir: "kernels", argv: []string{"kernels/kernels.test", "-test.v", "-test.count=1", "-test.timeout=" + tk.String()}, tests: true, timeout: tk + 15*time.Second},
	})
}

// listed turns the test suites among steps into listings with
// -list-suites: each test binary runs (it starts, finds its data and
// lists its tests) but runs no test; the other steps are kept.
func (r *runner) listed(steps []step) []step {
	if !r.opts.listSuites {
		return steps
	}
	for i, s := range steps {
		if s.tests {
			steps[i] = step{name: s.name, dir: s.dir, argv: []string{s.argv[0], "-test.list", "."}, env: s.env, list: true, timeout: time.Minute}
		}
	}
	return steps
}

// countListed counts the test names a -test.list run printed.
func countListed(out string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		for _, p := range []string{"Test", "Example", "Benchmark", "Fuzz"} {
			if strings.HasPrefix(l, p) {
				n++
				break
			}
		}
	}
	return n
}

// timeout is full, or quick with -quick, at most -max-step.
func (r *runner) timeout(full, quick time.Duration) time.Duration {
	t := full
	if r.opts.quick {
		t = quick
	}
	if m := r.opts.maxStep; m > 0 && t > m {
		t = m
	}
	return t
}

// deviceSteps are the steps run on each device.
func (r *runner) deviceSteps(d DeviceReport) []step {
	q := r.opts.quick
	t := r.timeout(12*time.Minute, 4*time.Minute)
	gotest := func(name, pkg, run string, env ...string) step {
		argv := []string{pkg + "/" + filepath.Base(pkg) + ".test", "-test.v", "-test.count=1", "-test.timeout=" + t.String()}
		if run != "" {
			argv = append(argv, "-test.run", run)
		}
		return step{name: name, dir: pkg, argv: argv, env: env, tests: true, timeout: t + 15*time.Second}
	}
	onnxRun := "^TestONNXBackend(CPU|GPU)$"
	if q {
		// A slice of each directory; parity needs the whole suite.
		onnxRun = "^TestONNXBackend(CPU|GPU)$/^(node|simple|pytorch-converted|pytorch-operator)$/^test_(relu|conv|add|matmul|Conv2d|PReLU|softmax)"
	}
	lowerRun := ""
	if q {
		lowerRun = "^(TestLoweringsMatchCPU|TestHalfLoweringsMatchCPU|TestRegisterBlockedKernels|TestKernelFusionsOnGPU|TestSuites)$"
	}
	realRun := "^(TestRealModelsGPU|TestActivationPlanDetGPU)$"
	if q {
		realRun = "^TestRealModelsGPU$/^(cls|hello_deepa)$"
	}
	heteroRun := "^(TestHetero.*|TestRealModelsHETERO.*)$"
	if q {
		heteroRun = "^(TestHeteroSuites|TestHeteroOpTheGPUDoesNotSupport)$"
	}
	halfRun := "^TestRealModelsGPUHalf$"
	if q {
		halfRun = "^TestRealModelsGPUHalf$/^cls$"
	}
	steps := []step{
		gotest("real-models", "tests", realRun),
		gotest("onnx-backend", "tests", onnxRun, "CONFORMANCE_SUMMARY="+filepath.Join(r.opts.out, "logs", d.ID+"-conformance-{device}.txt")),
		gotest("f16", "tests", halfRun),
		gotest("hetero", "tests", heteroRun),
		gotest("lowering", "clbackend", lowerRun),
	}
	steps[1].after = func(d *DeviceReport, s Suite) {
		d.Parity = parity(s.output, q)
		d.ONNX = deviceCounts(parseTestOutput(s.output), "TestONNXBackendGPU/")
	}
	steps[2].after = func(d *DeviceReport, s Suite) { d.F16 = f16Mode(s.output) }
	if r.opts.listSuites {
		steps[1].after, steps[2].after = nil, nil
	}
	steps = append(r.listed(steps), r.benchSteps()...)
	return steps
}

// deviceCounts counts the leaf results under prefix, the summary subtest
// aside.
func deviceCounts(r testResults, prefix string) *Counts {
	var c Counts
	for _, n := range r.leaves() {
		if !strings.HasPrefix(n, prefix) || strings.HasSuffix(n, "/summary") {
			continue
		}
		switch r[n] {
		case "PASS":
			c.Passed++
		case "FAIL":
			c.Failed++
		case "SKIP":
			c.Skipped++
		}
	}
	return &c
}

// parity reads what tests' TestMain said about CPU/GPU parity.
func parity(out string, quick bool) string {
	switch {
	case strings.Contains(out, "CPU and GPU pass the same cases"):
		return "CPU and GPU pass the same cases"
	case strings.Contains(out, "--- FAIL: CPU/GPU parity"):
		return "FAILED: " + lastLines(out[strings.Index(out, "--- FAIL: CPU/GPU parity"):], 3)
	case quick:
		return "not checked (--quick runs part of the suite)"
	}
	return "not checked"
}

// f16Mode reads the f16 test's "f16 mode: ..." log line.
func f16Mode(out string) string {
	i := strings.Index(out, "f16 mode: ")
	if i < 0 {
		return "unknown"
	}
	return firstLine(out[i+len("f16 mode: "):])
}

// clinfo runs bin/clinfo -json, keeps its output and returns the devices
// clinfer sees.
func (r *runner) clinfo(ctx context.Context) ([]DeviceReport, error) {
	fmt.Fprintln(r.log, "devicereport: clinfo -json")
	cmd := exec.CommandContext(ctx, filepath.Join(r.opts.bundle, "bin", "clinfo"), "-json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	_ = os.WriteFile(filepath.Join(r.opts.out, "clinfo.json"), out, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: clinfo -json: %v: %s", errNoDevice, err, strings.TrimSpace(stderr.String()))
	}
	var ci clinfoJSON
	if err := json.Unmarshal(out, &ci); err != nil {
		return nil, fmt.Errorf("clinfo -json: %w", err)
	}
	r.rep.Platforms = ci.platforms()
	devs := ci.devices()
	if len(devs) == 0 {
		return nil, fmt.Errorf("%w: clinfo found %d platform(s) and no device clinfer can use (see %s)", errNoDevice, len(ci.Platforms), filepath.Join(r.opts.out, "clinfo.json"))
	}
	return devs, nil
}

func deviceIDs(ds []DeviceReport) string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return strings.Join(ids, ", ")
}

// hostInfo describes the machine the report comes from.
func hostInfo() Host {
	h := Host{OS: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU()}
	h.Name, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return h
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// lastLines returns the last n non-empty lines of s, joined by " | ".
func lastLines(s string, n int) string {
	var keep []string
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append([]string{l}, keep...)
		}
	}
	return strings.Join(keep, " | ")
}

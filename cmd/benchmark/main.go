package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clinfer/clinfer/internal/cliutil"
	"github.com/clinfer/clinfer/plugin/driver"

	_ "github.com/clinfer/clinfer/clbackend"    // registers "GPU"
	_ "github.com/clinfer/clinfer/cpu_fallback" // registers "CPU"
	_ "github.com/clinfer/clinfer/hetero"       // registers "HETERO"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, isTerminal(os.Stdout))
	if errors.Is(err, flag.ErrHelp) {
		fs, _ := newFlagSet()
		fs.SetOutput(os.Stderr)
		fmt.Fprintln(os.Stderr, "usage: benchmark [flags]")
		fs.PrintDefaults()
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchmark:", oneLine(err))
		os.Exit(1)
	}
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// oneLine keeps an error message on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

type options struct {
	model, device, hint, api string
	nireq, niter             int
	nstreams                 string
	seconds                  float64
	shapes, dataShapes       cliutil.ListFlag
	reshapes, props          cliutil.ListFlag
	precision, cacheDir      string
	pc                       bool
	jsonPath, tracePath      string
	seed                     uint
	values                   cliutil.ListFlag // -value: inputs of a constant value
	stateful                 string           // -stateful: MAKE_STATEFUL pairs
	ort                      bool             // -ort: ONNX Runtime beside (stream.go)
}

// newFlagSet defines the flags; errors are not printed (run returns them
// as one line).
func newFlagSet() (*flag.FlagSet, *options) {
	var o options
	fs := flag.NewFlagSet("benchmark", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.model, "m", "", "model file: ONNX, or OpenVINO IR (.xml, its weights from the .bin beside it) (default: the embedded default model)")
	fs.StringVar(&o.device, "d", "CPU", "device: CPU, GPU, GPU.1, HETERO:GPU,CPU, AUTO, AUTO:GPU,CPU, BATCH:GPU(4)")
	fs.StringVar(&o.hint, "hint", "throughput", "performance hint: throughput, latency, cumulative_throughput (ctput, for AUTO) or none (leave PERFORMANCE_HINT alone)")
	fs.StringVar(&o.api, "api", "async", "async (nireq requests in flight) or sync (one request in a loop)")
	fs.IntVar(&o.nireq, "nireq", 0, "number of requests (async); 0: the device's OPTIMAL_NUMBER_OF_INFER_REQUESTS")
	fs.StringVar(&o.nstreams, "nstreams", "", "NUM_STREAMS: a number or AUTO (default: what the hint picks)")
	fs.Float64Var(&o.seconds, "t", 0, "run for this many seconds (default 10 when -niter is not given)")
	fs.IntVar(&o.niter, "niter", 0, "run this many inferences (after the first)")
	fs.Var(&o.shapes, "shape", "set an input's shape in the model before compiling (Model.Reshape, as benchmark_app's -shape), so devices plan it (and BATCH can batch it) at compile time; the data takes it too: NAME=[1,3,48,192], NAME=[1,3,?,?] for some dimensions, or [1,3,48,192] for every input (repeatable)")
	fs.Var(&o.dataShapes, "data_shape", "set only the shape of an input's random data, for its dynamic dimensions; the model keeps them dynamic: NAME=[1,3,48,192] (repeatable)")
	fs.Var(&o.reshapes, "reshape", "the old spelling of -shape")
	fs.StringVar(&o.precision, "infer_precision", "", "INFERENCE_PRECISION_HINT: f32, f16 or bf16")
	fs.StringVar(&o.cacheDir, "cache_dir", "", "CACHE_DIR: directory compiled models are cached in")
	fs.Var(&o.props, "p", "device property KEY=VALUE (repeatable), e.g. -p ENABLE_PROFILING=YES")
	fs.BoolVar(&o.pc, "pc", false, "print per-layer performance counters (sets ENABLE_PROFILING=YES)")
	fs.StringVar(&o.jsonPath, "json", "", "write the results as JSON to this file")
	fs.StringVar(&o.tracePath, "trace", "", "write a Chrome trace of the requests' stages to this file")
	fs.UintVar(&o.seed, "seed", 1, "seed for random inputs")
	fs.Var(&o.values, "value", "fill an input with one value instead of random data: NAME=VALUE, e.g. -value sr=16000 (repeatable)")
	fs.StringVar(&o.stateful, "stateful", "", "MAKE_STATEFUL: state input:output pairs kept in the requests (a streaming model's state), e.g. state:stateN")
	fs.BoolVar(&o.ort, "ort", false, "also time ONNX Runtime (scripts/ortref/bench.js under node, make models) on the same model, shapes, values and states, and print the ratio")
	return fs, &o
}

func parseFlags(args []string) (*options, error) {
	fs, o := newFlagSet()
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags go before arguments; see -h)", fs.Arg(0))
	}
	switch o.hint {
	case "throughput", "latency", "cumulative_throughput", "none":
	case "ctput":
		o.hint = "cumulative_throughput"
	default:
		return nil, fmt.Errorf("-hint %q: want throughput, latency, cumulative_throughput or none", o.hint)
	}
	switch o.api {
	case "async", "sync":
	default:
		return nil, fmt.Errorf("-api %q: want async or sync", o.api)
	}
	if o.nireq < 0 {
		return nil, fmt.Errorf("-nireq %d: want 0 (the device's choice) or more", o.nireq)
	}
	if o.niter < 0 {
		return nil, fmt.Errorf("-niter %d: want 0 (use -t) or more", o.niter)
	}
	if o.seconds < 0 {
		return nil, fmt.Errorf("-t %g: want a positive number of seconds", o.seconds)
	}
	if o.niter == 0 && o.seconds == 0 {
		o.seconds = 10
	}
	return o, nil
}

// Latency is the latency summary of the JSON report, in milliseconds.
type Latency struct {
	Median float64 `json:"median"`
	Avg    float64 `json:"avg"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
}

// Report is the JSON report (-json).
type Report struct {
	Device        string  `json:"device"`
	Model         string  `json:"model"`
	API           string  `json:"api"`
	Hint          string  `json:"hint"`
	NIReq         int     `json:"nireq"`
	NStreams      int     `json:"nstreams"`
	Count         int     `json:"count"`
	DurationMS    float64 `json:"duration_ms"`
	ThroughputFPS float64 `json:"throughput_fps"`
	// ORT is ONNX Runtime's run beside clinfer's (-ort).
	ORT              *ORTResult `json:"ort,omitempty"`
	LatencyMS        Latency    `json:"latency_ms"`
	FirstInferenceMS float64    `json:"first_inference_ms"`
	CompileMS        float64    `json:"compile_ms"`
	// FirstResultMS is the time from the start of CompileModel to the end
	// of the first inference.
	FirstResultMS float64 `json:"first_result_ms"`
	// DeviceTimeline is when each device started serving (AUTO).
	DeviceTimeline []TimelineEntry `json:"device_timeline,omitempty"`
	// DeviceInferences counts the timed inferences per device (AUTO).
	DeviceInferences map[string]int `json:"device_inferences,omitempty"`
}

func run(ctx context.Context, args []string, out io.Writer, terminal bool) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	if _, _, _, err := driver.ParseDeviceName(o.device); err != nil {
		return fmt.Errorf("-d: %w", err)
	}
	props, err := cliutil.Props("-p", o.props)
	if err != nil {
		return err
	}
	switch o.hint {
	case "throughput":
		props[driver.KeyPerformanceHint] = driver.HintThroughput.String()
	case "latency":
		props[driver.KeyPerformanceHint] = driver.HintLatency.String()
	case "cumulative_throughput":
		props[driver.KeyPerformanceHint] = driver.HintCumulativeThroughput.String()
	}
	if o.nstreams != "" {
		props[driver.KeyNumStreams] = o.nstreams
	}
	if o.precision != "" {
		props[driver.KeyInferencePrecisionHint] = o.precision
	}
	if o.cacheDir != "" {
		props[driver.KeyCacheDir] = o.cacheDir
	}
	if o.pc {
		props[driver.KeyEnableProfiling] = "YES"
	}
	if o.stateful != "" {
		props[driver.KeyMakeStateful] = o.stateful
	}

	m, modelName, err := cliutil.ReadModel(o.model)
	if err != nil {
		return err
	}
	// -shape is the model's shape (Model.Reshape); -data_shape only the
	// data's, for dimensions the model leaves dynamic.
	reshape, err := cliutil.ParseModelShapes("-shape", m, append(append(cliutil.ListFlag(nil), o.shapes...), o.reshapes...))
	if err != nil {
		return err
	}
	if len(reshape) > 0 {
		if err := m.Reshape(reshape); err != nil {
			return fmt.Errorf("-shape: %w", err)
		}
	}
	shapes, err := cliutil.ParseShapesFlag("-data_shape", m, o.dataShapes)
	if err != nil {
		return err
	}
	inputs, err := cliutil.RandomInputs(m, shapes, uint32(o.seed))
	if err != nil {
		return err
	}
	if err := setValues(inputs, o.values); err != nil {
		return err
	}

	core := driver.NewCore()
	defer core.Close()
	t0 := time.Now()
	cm, err := core.CompileModel(ctx, m, o.device, props)
	if err != nil {
		return err
	}
	defer cm.Close()
	compileTime := time.Since(t0)
	all := inputs
	inputs = modelInputs(inputs, cm) // a stateful model's states are its requests'

	nireq := o.nireq
	if o.api == "sync" {
		nireq = 1
	} else if nireq == 0 {
		nireq = 1
		if v, err := cm.Property(driver.KeyOptimalNumberOfInferRequests); err == nil {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				nireq = n
			}
		}
	}
	var tracer *driver.Tracer
	var opts []driver.AsyncOption
	if o.tracePath != "" {
		tracer = driver.NewTracer(0)
		opts = append(opts, driver.WithTracer(tracer))
	}
	newRequest := func() (*driver.AsyncInferRequest, error) {
		r, err := driver.CreateAsyncInferRequest(cm, opts...)
		if err != nil {
			return nil, err
		}
		for name, t := range inputs {
			if err := r.SetTensor(name, t); err != nil {
				return nil, errors.Join(err, r.Close())
			}
		}
		return r, nil
	}
	// The other requests are made after the warm-up, so that a BATCH
	// device does not hold the lone warm-up inference for company that
	// could come (AUTO_BATCH_TIMEOUT).
	reqs := make([]*driver.AsyncInferRequest, 1, nireq)
	if reqs[0], err = newRequest(); err != nil {
		return err
	}
	defer func() {
		for _, r := range reqs {
			r.Close()
		}
	}()
	nstreams := reqs[0].Streams()
	if v, err := cm.Property(driver.KeyNumStreams); err == nil {
		if n, err := strconv.Atoi(v); err == nil && n > 0 && nstreams == 0 {
			nstreams = n
		}
	}

	fmt.Fprintf(out, "model      %s (%s)\n", modelName, m.Name)
	for _, p := range m.Parameters {
		fmt.Fprintf(out, "input      %-20s %v\n", p.Name, inputs[p.Name])
	}
	execDevices, _ := cm.Property(driver.KeyExecutionDevices)
	fmt.Fprintf(out, "device     %s (execution devices: %s), api %s, nireq %d, nstreams %d, compile %v\n",
		o.device, execDevices, o.api, nireq, nstreams, compileTime.Round(time.Microsecond))

	// The first inference (warm-up) is reported on its own.
	t1 := time.Now()
	if err := reqs[0].Infer(ctx); err != nil {
		return err
	}
	first := time.Since(t1)
	firstResult := time.Since(t0)
	firstLog := &deviceLog{}
	firstLog.add(reqs[0])
	for len(reqs) < nireq {
		r, err := newRequest()
		if err != nil {
			return err
		}
		reqs = append(reqs, r)
	}
	if tracer != nil {
		tracer.Reset()
	}

	budget := time.Duration(o.seconds * float64(time.Second))
	prog := newProgress(out, terminal, o.niter, budget)
	var lat []time.Duration
	var elapsed time.Duration
	devLog := &deviceLog{}
	if o.api == "sync" {
		lat, elapsed, err = runSync(ctx, reqs[0], o.niter, budget, prog, devLog)
	} else {
		lat, elapsed, err = runAsync(ctx, reqs, o.niter, budget, prog, devLog)
	}
	prog.finish()
	if err != nil {
		return err
	}

	rep := Report{Device: o.device, Model: modelName, API: o.api, Hint: o.hint, NIReq: nireq, NStreams: nstreams,
		Count: len(lat), DurationMS: ms(elapsed), LatencyMS: summarize(lat),
		FirstInferenceMS: ms(first), CompileMS: ms(compileTime), FirstResultMS: ms(firstResult),
		DeviceTimeline: timeline(cm), DeviceInferences: devLog.snapshot()}
	if elapsed > 0 {
		rep.ThroughputFPS = float64(len(lat)) / elapsed.Seconds()
	}
	fmt.Fprintf(out, "count      %d inferences in %.2f ms\n", rep.Count, rep.DurationMS)
	fmt.Fprintf(out, "latency    median %.3f ms, avg %.3f, min %.3f, max %.3f, p90 %.3f, p99 %.3f\n",
		rep.LatencyMS.Median, rep.LatencyMS.Avg, rep.LatencyMS.Min, rep.LatencyMS.Max, rep.LatencyMS.P90, rep.LatencyMS.P99)
	fmt.Fprintf(out, "first      %.3f ms", rep.FirstInferenceMS)
	if on := firstLog.snapshot(); on != nil {
		fmt.Fprintf(out, " (on %s)", describeCounts(on))
	}
	fmt.Fprintf(out, ", first result %.3f ms after CompileModel started", rep.FirstResultMS)
	fmt.Fprintln(out)
	fmt.Fprintf(out, "throughput %.2f FPS\n", rep.ThroughputFPS)
	if o.ort {
		if rep.ORT, err = compareORT(ctx, out, o, all, rep.LatencyMS.Median); err != nil {
			return err
		}
	}
	if len(rep.DeviceTimeline) > 0 {
		fmt.Fprintf(out, "devices    %s (since compile start); inferences: %s\n", describeTimeline(rep.DeviceTimeline), describeCounts(rep.DeviceInferences))
	}
	if line := batchLine(cm); line != "" {
		fmt.Fprintf(out, "batching   %s\n", line)
	}

	if o.pc {
		printCounters(out, reqs[0].ProfilingInfo())
	}
	if tracer != nil {
		for _, s := range tracer.Summary() {
			fmt.Fprintf(out, "stage      %-12s on %-16s %6d runs, mean %.3f ms\n", s.Stage, s.Executor, s.Count, ms(s.Mean))
		}
		if err := writeFile(o.tracePath, tracer.WriteChromeTrace); err != nil {
			return err
		}
		fmt.Fprintf(out, "trace      %s (%d events", o.tracePath, len(tracer.Events()))
		if d := tracer.Dropped(); d > 0 {
			fmt.Fprintf(out, ", %d dropped", d)
		}
		fmt.Fprintln(out, ")")
	}
	if o.jsonPath != "" {
		err := writeFile(o.jsonPath, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(rep)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// writeFile creates path and writes it with f.
func writeFile(path string, f func(io.Writer) error) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f(file); err != nil {
		file.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return file.Close()
}

// done reports whether a run that has started n inferences since start is
// over.
func done(n, niter int, start time.Time, budget time.Duration) bool {
	if niter > 0 {
		return n >= niter
	}
	return time.Since(start) >= budget
}

func runSync(ctx context.Context, r *driver.AsyncInferRequest, niter int, budget time.Duration, prog *progress, devs *deviceLog) ([]time.Duration, time.Duration, error) {
	var lat []time.Duration
	start := time.Now()
	for !done(len(lat), niter, start, budget) {
		t := time.Now()
		if err := r.Infer(ctx); err != nil {
			return nil, 0, err
		}
		lat = append(lat, time.Since(t))
		devs.add(r)
		prog.add()
	}
	return lat, time.Since(start), nil
}

// runAsync keeps every request busy: each callback records the latency and
// restarts its request until the budget is spent.
func runAsync(ctx context.Context, reqs []*driver.AsyncInferRequest, niter int, budget time.Duration, prog *progress, devs *deviceLog) ([]time.Duration, time.Duration, error) {
	var (
		mu      sync.Mutex
		lat     []time.Duration
		errs    []error
		started atomic.Int64
		chains  sync.WaitGroup
		lastEnd time.Time
	)
	start := time.Now()
	// claim reserves the next inference, or reports that the budget is
	// spent.
	claim := func() bool {
		if ctx.Err() != nil {
			return false
		}
		if niter > 0 {
			return started.Add(1) <= int64(niter)
		}
		return time.Since(start) < budget
	}
	for _, r := range reqs {
		var t0 time.Time // touched by r's callback and launch, never at once
		launch := func() bool {
			if !claim() {
				return false
			}
			t0 = time.Now()
			if err := r.StartAsync(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return false
			}
			return true
		}
		r.SetCallback(func(err error) {
			now := time.Now()
			mu.Lock()
			if err != nil {
				errs = append(errs, err)
			} else {
				lat = append(lat, now.Sub(t0))
				lastEnd = now
			}
			failed := len(errs) > 0
			mu.Unlock()
			if err == nil {
				devs.add(r)
				prog.add()
			}
			if failed || !launch() {
				chains.Done()
			}
		})
		chains.Add(1)
		if !launch() {
			chains.Done()
		}
	}
	chains.Wait()
	for _, r := range reqs {
		if err := r.Wait(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return nil, 0, err
		}
		r.SetCallback(nil)
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if len(errs) > 0 {
		return nil, 0, errs[0]
	}
	if lastEnd.IsZero() {
		return lat, 0, nil
	}
	return lat, lastEnd.Sub(start), nil
}

// printCounters prints the per-layer performance counters of a request.
func printCounters(out io.Writer, prof []driver.ProfilingInfo) {
	if len(prof) == 0 {
		fmt.Fprintln(out, "performance counters: none (the device reports no profile)")
		return
	}
	fmt.Fprintln(out, "performance counters (last inference of request 1):")
	fmt.Fprintf(out, "  %-30s %-14s %-24s %-10s %12s %12s %10s %8s\n", "node", "type", "exec type", "status", "real µs", "cpu µs", "MB moved", "GB/s")
	var total time.Duration
	for _, p := range prof {
		mb, gbs := "-", "-"
		if p.Bytes > 0 {
			mb = fmt.Sprintf("%.2f", float64(p.Bytes)/1e6)
			if p.RealTime > 0 {
				gbs = fmt.Sprintf("%.1f", float64(p.Bytes)/p.RealTime.Seconds()/1e9)
			}
		}
		fmt.Fprintf(out, "  %-30s %-14s %-24s %-10s %12.1f %12.1f %10s %8s\n", p.NodeName, p.NodeType, p.ExecType, p.Status,
			float64(p.RealTime.Nanoseconds())/1e3, float64(p.CPUTime.Nanoseconds())/1e3, mb, gbs)
		if p.NodeType != "Stage" {
			total += p.RealTime
		}
	}
	fmt.Fprintf(out, "  total of the layers: %.3f ms\n", ms(total))
}

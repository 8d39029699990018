package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/clbackend/tune"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/cliutil"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, isTerminal(os.Stdout))
	if errors.Is(err, flag.ErrHelp) {
		fs, _ := newFlagSet()
		fs.SetOutput(os.Stderr)
		fmt.Fprintln(os.Stderr, "usage: tune -m MODEL.onnx [-d GPU] [-shape NAME=[...]] [-mode fast|exhaustive] [-cache_dir DIR] [flags]")
		fs.PrintDefaults()
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tune:", strings.Join(strings.Fields(err.Error()), " "))
		os.Exit(1)
	}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

type options struct {
	model, device, cacheDir, file, jsonPath, ship string
	mode                                          tune.Mode
	shapes, props                                 cliutil.ListFlag
	runs                                          int
	verbose                                       bool
	seed                                          uint
}

// newFlagSet defines the flags; errors are not printed (run returns them
// as one line).
func newFlagSet() (*flag.FlagSet, *options) {
	o := &options{mode: tune.Fast}
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.model, "m", "", "model file: ONNX, or OpenVINO IR (.xml, its weights from the .bin beside it) (default: the embedded default model)")
	fs.StringVar(&o.device, "d", clbackend.DeviceName, "GPU device: GPU, GPU.1")
	fs.Var(&o.shapes, "shape", "fix an input's dynamic dimensions: NAME=[1,3,640,640] (repeatable); the kernels are tuned for these shapes")
	fs.TextVar(&o.mode, "mode", tune.Fast, "tuning mode: fast (a budgeted subset of each kernel's variants) or exhaustive (all of them)")
	fs.StringVar(&o.cacheDir, "cache_dir", "", "CACHE_DIR the tuning file is kept in (default: clinfer under the user's cache directory)")
	fs.StringVar(&o.file, "tuning_file", "", "GPU_TUNING_FILE: the tuning file itself (instead of one under -cache_dir)")
	fs.IntVar(&o.runs, "runs", 10, "inferences timed before and after tuning (medians)")
	fs.Var(&o.props, "p", "device property KEY=VALUE (repeatable)")
	fs.BoolVar(&o.verbose, "v", false, "verbose: kernel compiler output (LOG_LEVEL=LOG_WARNING) and why candidates were refused")
	fs.StringVar(&o.jsonPath, "json", "", "write the results as JSON to this file")
	fs.UintVar(&o.seed, "seed", 1, "seed for random inputs")
	fs.StringVar(&o.ship, "ship", "", "after tuning, write the device's shipped tuning database (kernels/tuning format, all the records of its tuning file) into this directory")
	return fs, o
}

func parseFlags(args []string) (*options, error) {
	fs, o := newFlagSet()
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags go before arguments; see -h)", fs.Arg(0))
	}
	if o.mode == tune.None {
		return nil, errors.New("-mode none tunes nothing: want fast or exhaustive")
	}
	if o.runs < 1 {
		return nil, fmt.Errorf("-runs %d: want at least 1", o.runs)
	}
	if o.cacheDir == "" && o.file == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("no -cache_dir and no user cache directory (%v): pass -cache_dir", err)
		}
		o.cacheDir = filepath.Join(dir, "clinfer")
	}
	return o, nil
}

// Op is one kernel choice of the JSON report.
type Op struct {
	clbackend.TunedOp
	// Speedup is HeuristicMs / Ms (0 when either is unknown).
	Speedup float64 `json:"speedup"`
}

// Report is the JSON report (-json).
type Report struct {
	Device string `json:"device"`
	Model  string `json:"model"`
	Shapes string `json:"shapes"`
	Mode   string `json:"mode"`
	File   string `json:"tuning_file"`
	// TuneSeconds is the wall time of the tuning compile and inference.
	TuneSeconds float64 `json:"tune_seconds"`
	// BeforeMs and AfterMs are the median latencies of the model with the
	// heuristics and with the tuned kernels.
	BeforeMs float64 `json:"before_ms"`
	AfterMs  float64 `json:"after_ms"`
	// Tuned counts the choices timed in this run, Recorded those read from
	// the tuning file.
	Tuned    int  `json:"tuned"`
	Recorded int  `json:"recorded"`
	Ops      []Op `json:"ops"`
}

func run(ctx context.Context, args []string, out io.Writer, terminal bool) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	m, modelName, err := cliutil.ReadModel(o.model)
	if err != nil {
		return err
	}
	shapes, err := cliutil.ParseShapes(m, o.shapes)
	if err != nil {
		return err
	}
	inputs, err := cliutil.RandomInputs(m, shapes, uint32(o.seed))
	if err != nil {
		return err
	}
	props, err := cliutil.Props("-p", o.props)
	if err != nil {
		return err
	}
	if o.verbose {
		props[driver.KeyLogLevel] = driver.LogWarning.String()
	}
	core := driver.NewCore()
	defer core.Close()
	fmt.Fprintf(out, "model      %s\n", modelName)
	fmt.Fprintf(out, "inputs     %s\n", describe(m, inputs))

	// Before: the heuristics (an empty tuning file, no shipped database,
	// no model cache).
	before := clone(props)
	before[clbackend.KeyTuningMode] = tune.None.String()
	before[clbackend.KeyShippedTuning] = "NO"
	before[clbackend.KeyTuningFile] = filepath.Join(os.TempDir(), fmt.Sprintf("clinfer-tune-none-%d.json", os.Getpid()))
	beforeMs, _, err := timeModel(ctx, core, m, o.device, before, inputs, o.runs, nil)
	if err != nil {
		return fmt.Errorf("before tuning: %w", err)
	}

	// Tuning: the first inference plans the real shapes and times the
	// candidates of every kernel choice without a record in the tuning
	// file.
	tuned := clone(props)
	tuned[clbackend.KeyTuningMode] = o.mode.String()
	// The device's own timings, not the shipped database's choices.
	tuned[clbackend.KeyShippedTuning] = "NO"
	if o.file != "" {
		tuned[clbackend.KeyTuningFile] = o.file
	} else {
		tuned[driver.KeyCacheDir] = o.cacheDir
	}
	bar := newProgress(out, terminal)
	t0 := time.Now()
	afterMs, choices, err := timeModel(ctx, core, m, o.device, tuned, inputs, o.runs, bar.update)
	bar.finish()
	if err != nil {
		return fmt.Errorf("tuning: %w", err)
	}
	rep := Report{Device: o.device, Model: modelName, Shapes: strings.Join(o.shapes, " "), Mode: o.mode.String(),
		TuneSeconds: time.Since(t0).Seconds(), BeforeMs: beforeMs, AfterMs: afterMs}
	rep.File = o.file
	if rep.File == "" {
		rep.File = filepath.Join(o.cacheDir, "clinfer-tuning-<device>.json")
		if g, err := filepath.Glob(filepath.Join(o.cacheDir, "clinfer-tuning-*.json")); err == nil && len(g) == 1 {
			rep.File = g[0]
		}
	}
	for _, c := range choices {
		op := Op{TunedOp: c}
		if c.Ms > 0 && c.HeuristicMs > 0 {
			op.Speedup = c.HeuristicMs / c.Ms
		}
		switch c.Source {
		case "tuned":
			rep.Tuned++
		case "recorded", "shipped":
			rep.Recorded++
		}
		rep.Ops = append(rep.Ops, op)
	}
	printReport(out, rep, o.verbose)
	if o.ship != "" {
		src := fmt.Sprintf("cmd/tune -mode %s -m %s %s (and the earlier records of %s)", strings.ToLower(o.mode.String()), modelName, strings.Join(o.shapes, " "), filepath.Base(rep.File))
		path, err := clbackend.WriteShippedTuning(o.ship, o.device, o.cacheDir, o.file, src)
		switch {
		case err != nil && errors.Is(err, fs.ErrNotExist) && rep.Tuned+rep.Recorded == 0:
			// A model whose plan has no kernel choice (the wake-word heads
			// since FuseFCLayerNormRelu) leaves no tuning file to ship.
			fmt.Fprintf(out, "shipped    nothing: the model has no kernel choice and %s holds no records\n", o.cacheDir)
		case err != nil:
			return fmt.Errorf("-ship: %w", err)
		default:
			fmt.Fprintf(out, "shipped    %s\n", path)
		}
	}
	if o.jsonPath != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.jsonPath, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// describe lists the inputs with their shapes.
func describe(m *graph.Model, ins map[string]*tensor.Tensor) string {
	var parts []string
	for _, p := range m.Parameters {
		if t, ok := ins[p.Name]; ok {
			parts = append(parts, p.Name+t.Shape().String())
		}
	}
	return strings.Join(parts, ", ")
}

// choicer is what a GPU compiled model reports of its kernel choices.
type choicer interface {
	KernelChoices() []clbackend.TunedOp
}

// timeModel compiles m with props, runs one inference (where a model with
// dynamic inputs is planned, and tuned) under progress, then runs more and
// returns their median latency in milliseconds and the kernel choices of
// the plan.
func timeModel(ctx context.Context, core *driver.Core, m *graph.Model, device string, props map[string]string,
	ins map[string]*tensor.Tensor, runs int, progress func(clbackend.TuneProgress)) (float64, []clbackend.TunedOp, error) {
	pctx := ctx
	if progress != nil {
		pctx = clbackend.WithTuneProgress(ctx, progress)
	}
	cm, err := core.CompileModel(pctx, m, device, props)
	if err != nil {
		return 0, nil, err
	}
	defer cm.Close()
	ch, ok := cm.(choicer)
	if !ok {
		return 0, nil, fmt.Errorf("device %s is not a GPU device (its compiled model reports no kernel choices)", device)
	}
	req, err := cm.CreateInferRequest()
	if err != nil {
		return 0, nil, err
	}
	defer req.Close()
	for name, t := range ins {
		if err := req.SetTensor(name, t); err != nil {
			return 0, nil, err
		}
	}
	if err := req.Infer(pctx); err != nil {
		return 0, nil, err
	}
	times := make([]float64, 0, runs)
	for range runs {
		t0 := time.Now()
		if err := req.Infer(ctx); err != nil {
			return 0, nil, err
		}
		times = append(times, float64(time.Since(t0))/1e6)
	}
	return tune.Median(times), ch.KernelChoices(), nil
}

// progress draws the tuning progress: a bar on a terminal, a line per
// tenth of the plan otherwise.
type progress struct {
	out      io.Writer
	terminal bool
	bar      *progressbar.ProgressBar
	last     int
	tuned    int
}

func newProgress(out io.Writer, terminal bool) *progress {
	return &progress{out: out, terminal: terminal}
}

func (p *progress) update(e clbackend.TuneProgress) {
	if e.Tuned {
		p.tuned++
	}
	if p.terminal {
		if p.bar == nil {
			p.bar = progressbar.NewOptions(e.Total, progressbar.OptionSetWriter(p.out), progressbar.OptionSetDescription("tuning"), progressbar.OptionShowCount())
		}
		_ = p.bar.Set(e.Done)
		return
	}
	if step := e.Done * 10 / max(e.Total, 1); step > p.last || e.Done == e.Total {
		p.last = step
		fmt.Fprintf(p.out, "progress   %d/%d nodes planned, %d kernel choices tuned\n", e.Done, e.Total, p.tuned)
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.out)
	}
}

// printReport writes the per-op table and the totals.
func printReport(out io.Writer, rep Report, verbose bool) {
	tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  node\top\tvariant\tsource\tbefore ms\tafter ms\tspeedup")
	for _, op := range rep.Ops {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", op.Node, op.Op, op.Variant, op.Source, ms(op.HeuristicMs), ms(op.Ms), ratio(op.Speedup))
	}
	_ = tw.Flush()
	if verbose {
		var refused []string
		for _, op := range rep.Ops {
			for _, r := range op.Refusals {
				refused = append(refused, "  "+op.Node+": "+r)
			}
		}
		sort.Strings(refused)
		if len(refused) > 0 {
			fmt.Fprintf(out, "refused candidates:\n%s\n", strings.Join(refused, "\n"))
		}
	}
	fmt.Fprintf(out, "tuning     %s: %d kernel choices timed, %d read from %s, in %.1f s\n", rep.Mode, rep.Tuned, rep.Recorded, rep.File, rep.TuneSeconds)
	fmt.Fprintf(out, "latency    before %.3f ms (heuristics), after %.3f ms (tuned): %.2fx (medians)\n", rep.BeforeMs, rep.AfterMs, rep.BeforeMs/rep.AfterMs)
}

func ms(x float64) string {
	if x <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", x)
}

func ratio(x float64) string {
	if x <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", x)
}

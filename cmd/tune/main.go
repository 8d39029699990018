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
	fs.IntVar(&o.runs, "runs", tune.MinRounds, fmt.Sprintf("interleaved rounds (heuristics, then tuned, alternating) that confirm the tuned choices in the model and time it (medians); at least %d", tune.MinRounds))
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
	// InModel is the model-level confirmation of a choice that differs
	// from the heuristics: "kept" (its record ships) or "dropped" (its
	// record keeps the heuristics); empty for the others.
	InModel string `json:"in_model,omitempty"`
	// InModelSpeedup is the heuristics' median device time of the
	// choice's nodes in the model over the variant's.
	InModelSpeedup float64 `json:"in_model_speedup,omitempty"`
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
	// ConfirmSeconds is the wall time of the model-level confirmation.
	ConfirmSeconds float64 `json:"confirm_seconds"`
	// BeforeMs and AfterMs are the median latencies of the model with the
	// heuristics and with the tuned records that ship, in Rounds
	// interleaved rounds (AfterMs is BeforeMs's round when the whole
	// model did not confirm them: the heuristics run); CandidateMs is the
	// median of the records that won per choice, whether the whole model
	// confirmed them or not, and ModelVerdict that comparison.
	BeforeMs     float64 `json:"before_ms"`
	AfterMs      float64 `json:"after_ms"`
	CandidateMs  float64 `json:"candidate_ms"`
	Rounds       int     `json:"rounds"`
	ModelVerdict string  `json:"model_verdict"`
	// Candidates counts the kernel choices (keys) that differed from the
	// heuristics, NodeWins those faster in the model, Kept those whose
	// records ship (NodeWins, or none when the whole model did not
	// confirm them).
	Candidates int `json:"candidates"`
	NodeWins   int `json:"node_wins"`
	Kept       int `json:"kept"`
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
	// no model cache), profiled for the confirmation.
	before := clone(props)
	before[clbackend.KeyTuningMode] = tune.None.String()
	before[clbackend.KeyShippedTuning] = "NO"
	before[clbackend.KeyTuningFile] = filepath.Join(os.TempDir(), fmt.Sprintf("clinfer-tune-none-%d.json", os.Getpid()))
	defer os.Remove(before[clbackend.KeyTuningFile])
	profiled := clone(before)
	profiled[driver.KeyEnableProfiling] = "YES"
	heur, err := openModel(ctx, core, m, o.device, profiled, inputs, nil)
	if err != nil {
		return fmt.Errorf("before tuning: %w", err)
	}
	defer func() { heur.close() }()

	// Tuning: the first inference plans the real shapes and times the
	// candidates of every kernel choice without a record in the tuning
	// file.
	tuned := clone(props)
	tuned[clbackend.KeyTuningMode] = o.mode.String()
	tuned[driver.KeyEnableProfiling] = "YES"
	// The device's own timings, not the shipped database's choices.
	tuned[clbackend.KeyShippedTuning] = "NO"
	if o.file != "" {
		tuned[clbackend.KeyTuningFile] = o.file
	} else {
		tuned[driver.KeyCacheDir] = o.cacheDir
	}
	bar := newProgress(out, terminal)
	t0 := time.Now()
	tr, err := openModel(ctx, core, m, o.device, tuned, inputs, bar.update)
	bar.finish()
	if err != nil {
		return fmt.Errorf("tuning: %w", err)
	}
	defer func() { tr.close() }()
	choices, db := tr.choices(), tr.db()
	rep := Report{Device: o.device, Model: modelName, Shapes: strings.Join(o.shapes, " "), Mode: o.mode.String(),
		TuneSeconds: time.Since(t0).Seconds()}
	rep.File = o.file
	if db != nil && db.Path() != "" {
		rep.File = db.Path()
	}
	if db == nil {
		return fmt.Errorf("tuning: device %s kept no tuning cache", o.device)
	}

	// The model-level confirmation: the tuner's choices against the
	// heuristics in the model, interleaved.
	t1 := time.Now()
	cf := &confirmer{db: db, label: strings.TrimSpace(filepath.Base(modelName) + " " + rep.Shapes), rounds: max(o.runs, tune.MinRounds)}
	if err := heur.calibrate(ctx); err != nil {
		return err
	}
	tr.reps = heur.reps
	won, verdicts, err := cf.nodes(ctx, heur, tr, choices)
	if err != nil {
		return fmt.Errorf("confirming the choices in the model: %w", err)
	}
	rep.Candidates, rep.NodeWins = len(verdicts), len(won)
	if len(won) == 0 {
		// Every record keeps the heuristics: the tuned compile is the
		// heuristics' one; its latency, unprofiled, is both.
		heur.close()
		tr.close()
		if heur, err = openModel(ctx, core, m, o.device, before, inputs, nil); err != nil {
			return err
		}
		if err := heur.calibrate(ctx); err != nil {
			return err
		}
		rep.Rounds = 9
		if rep.BeforeMs, err = heur.median(ctx, rep.Rounds); err != nil {
			return err
		}
		rep.AfterMs, rep.CandidateMs = rep.BeforeMs, rep.BeforeMs
		rep.ModelVerdict = "not run (no choice faster in the model)"
	} else {
		heur.close()
		tr.close()
		if err := confirmModel(ctx, core, m, o.device, before, inputs, cf, won, &rep); err != nil {
			return fmt.Errorf("confirming the whole model: %w", err)
		}
	}
	rep.ConfirmSeconds = time.Since(t1).Seconds()
	for _, c := range choices {
		op := Op{TunedOp: c}
		if c.Ms > 0 && c.HeuristicMs > 0 {
			op.Speedup = c.HeuristicMs / c.Ms
		}
		if v, ok := verdicts[c.Key]; ok {
			op.InModel = "dropped"
			if v.Win && rep.Kept > 0 {
				op.InModel = "kept"
			}
			op.InModelSpeedup = v.HeuristicMs / v.TunedMs
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

// confirmModel runs the whole model with the heuristics (props before)
// against the records that won in its nodes (won: the same props reading
// cf's tuning file), unprofiled, and fills rep's latencies and verdict;
// the records keep the heuristics unless the whole model wins.
func confirmModel(ctx context.Context, core *driver.Core, m *graph.Model, device string, before map[string]string,
	ins map[string]*tensor.Tensor, cf *confirmer, won []string, rep *Report) error {
	heur, err := openModel(ctx, core, m, device, before, ins, nil)
	if err != nil {
		return err
	}
	defer heur.close()
	after := clone(before)
	after[clbackend.KeyTuningFile] = cf.db.Path()
	tr, err := openModel(ctx, core, m, device, after, ins, nil)
	if err != nil {
		return err
	}
	defer tr.close()
	if err := heur.calibrate(ctx); err != nil {
		return err
	}
	tr.reps = heur.reps
	mv, err := cf.model(ctx, heur, tr, won)
	if err != nil {
		return err
	}
	rep.Rounds, rep.Kept = mv.Rounds, len(won)
	rep.BeforeMs, rep.AfterMs, rep.CandidateMs = mv.HeuristicMs, mv.TunedMs, mv.TunedMs
	rep.ModelVerdict = mv.String()
	if !mv.Win {
		rep.Kept, rep.AfterMs = 0, mv.HeuristicMs // the heuristics run
	}
	return nil
}

// choicer is what a GPU compiled model reports of its kernel choices.
type choicer interface {
	KernelChoices() []clbackend.TunedOp
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
	fmt.Fprintln(tw, "  node\top\tvariant\tsource\tbefore ms\tafter ms\tspeedup\tin model")
	for _, op := range rep.Ops {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", op.Node, op.Op, op.Variant, op.Source, ms(op.HeuristicMs), ms(op.Ms), ratio(op.Speedup), inModel(op))
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
	outcome := fmt.Sprintf("the %d ship", rep.Kept)
	switch {
	case rep.NodeWins == 0:
		outcome = "nothing to ship"
	case rep.Kept == 0:
		outcome = fmt.Sprintf("not faster beyond the noise: the %d keep the heuristics", rep.NodeWins)
	}
	fmt.Fprintf(out, "confirm    %d of the choices differ from the heuristics, %d faster in the model; whole model %s: %s; in %.1f s\n",
		rep.Candidates, rep.NodeWins, rep.ModelVerdict, outcome, rep.ConfirmSeconds)
	kept := "tuned"
	if rep.Kept == 0 {
		kept = "no record kept: the heuristics"
	}
	fmt.Fprintf(out, "latency    before %.3f ms (heuristics), after %.3f ms (%s): %.2fx (medians of %d rounds)\n", rep.BeforeMs, rep.AfterMs, kept, rep.BeforeMs/rep.AfterMs, rep.Rounds)
}

// inModel is the table's model-level column: "kept 1.20x", "dropped
// 0.97x", or "-" for a choice that is the heuristics'.
func inModel(op Op) string {
	if op.InModel == "" {
		return "-"
	}
	return op.InModel + " " + ratio(op.InModelSpeedup)
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

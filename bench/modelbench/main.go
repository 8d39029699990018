package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	_ "github.com/clinfer/clinfer/clbackend"    // registers "GPU"
	_ "github.com/clinfer/clinfer/cpu_fallback" // registers "CPU"

	"github.com/clinfer/clinfer/bench"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tests/conformance"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "modelbench:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	seconds, cap     float64
	rounds           int
	models, configs  []string
	jsonPath, readme string
	from             string
	check            bool
}

func parseFlags(args []string) (*options, error) {
	var o options
	var modelList, configList string
	fs := flag.NewFlagSet("modelbench", flag.ContinueOnError)
	fs.Float64Var(&o.seconds, "seconds", 3, "timed seconds per model and configuration, split over the rounds (each round runs at least one inference)")
	fs.Float64Var(&o.cap, "max_seconds", 60, "a configuration of a model whose timed runs reached this many seconds sits out the later rounds (the CPU device on IS-Net medium: about 50 s an inference)")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds: each configuration of a model runs in turn in each, so all share the same minutes' load")
	fs.StringVar(&modelList, "models", "", "comma-separated row keys to run (default: all of "+strings.Join(modelKeys(), ",")+")")
	fs.StringVar(&configList, "configs", strings.Join(configs, ","), "comma-separated configurations: "+strings.Join(configs, ","))
	fs.StringVar(&o.jsonPath, "json", "", "write the run as JSON to this file")
	fs.StringVar(&o.readme, "readme", "", "write the table into this README between its bench-models markers")
	fs.StringVar(&o.from, "from", "", "render this saved run (-json of an earlier run) instead of running")
	fs.BoolVar(&o.check, "check", false, "with -from and -readme: fail when the README's table is not what the saved run renders")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.rounds < 1 || o.seconds < 0 || o.cap <= 0 {
		return nil, fmt.Errorf("-rounds %d -seconds %g -max_seconds %g: want at least 1 round, non-negative seconds and a positive cap", o.rounds, o.seconds, o.cap)
	}
	if o.check && (o.from == "" || o.readme == "") {
		return nil, errors.New("-check needs -from and -readme")
	}
	var err error
	if o.models, err = pick("-models", modelList, modelKeys()); err != nil {
		return nil, err
	}
	if o.configs, err = pick("-configs", configList, configs); err != nil {
		return nil, err
	}
	return &o, nil
}

// pick splits a comma-separated list and checks each item against known
// (empty: all of known).
func pick(flagName, list string, known []string) ([]string, error) {
	if list == "" {
		return known, nil
	}
	var out []string
	for _, k := range strings.Split(list, ",") {
		if !slices.Contains(known, k) {
			return nil, fmt.Errorf("%s: unknown %q (want some of %s)", flagName, k, strings.Join(known, ","))
		}
		out = append(out, k)
	}
	return out, nil
}

func modelKeys() []string {
	keys := make([]string, len(models))
	for i, m := range models {
		keys[i] = m.Key
	}
	return keys
}

func run(ctx context.Context, args []string, out io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	var rep *Report
	if o.from != "" {
		if rep, err = readReport(o.from); err != nil {
			return err
		}
	} else {
		if rep, err = benchmark(ctx, o, out); err != nil {
			return err
		}
		if o.jsonPath != "" {
			if err := writeReport(o.jsonPath, rep); err != nil {
				return err
			}
		}
	}
	table := renderTable(rep)
	fmt.Fprint(out, "\n"+table)
	if o.readme == "" {
		return nil
	}
	if o.check {
		return checkReadme(o.readme, table)
	}
	return writeReadme(o.readme, table)
}

// benchmark runs the rows and configurations o picks.
func benchmark(ctx context.Context, o *options, out io.Writer) (*Report, error) {
	dir, err := conformance.ModelsDir()
	if err != nil {
		return nil, err
	}
	core := driver.NewCore()
	defer core.Close()
	rep := &Report{
		Date:       time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		LoadStart:  bench.LoadAvg(),
		Rounds:     o.rounds,
		Seconds:    o.seconds,
		MaxSeconds: o.cap,
		Configs:    o.configs,
	}
	for _, dev := range []string{"CPU", "GPU"} {
		name, err := core.Property(dev, driver.KeyFullDeviceName)
		if err != nil {
			name = "unavailable: " + err.Error()
		}
		rep.Devices = append(rep.Devices, dev+" = "+name)
	}
	fmt.Fprintf(out, "devices: %s; GOMAXPROCS %d; load average %s\n", strings.Join(rep.Devices, ", "), rep.GOMAXPROCS, rep.LoadStart)
	for _, m := range models {
		if !slices.Contains(o.models, m.Key) {
			continue
		}
		row, err := benchRow(ctx, core, filepath.Join(dir, m.File), m, o, rep, out)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Key, err)
		}
		rep.Rows = append(rep.Rows, row)
	}
	rep.LoadEnd = bench.LoadAvg()
	fmt.Fprintf(out, "load average at the end %s\n", rep.LoadEnd)
	return rep, nil
}

// runner is one configuration of a row, compiled and warmed up.
type runner interface {
	// runFor runs inferences for d (at least one) and returns their times
	// in milliseconds.
	runFor(ctx context.Context, d time.Duration) ([]float64, error)
	Close() error
}

// benchRow compiles every configuration of m, then times them in rounds.
// A configuration that fails to compile or run is reported in its cell
// (Result.Error), so that one unsupported model does not hide the others.
func benchRow(ctx context.Context, core *driver.Core, path string, m benchModel, o *options, rep *Report, out io.Writer) (Row, error) {
	if _, err := os.Stat(path); err != nil {
		return Row{}, fmt.Errorf("%w (run `make models`)", err)
	}
	row := Row{Key: m.Key, Label: m.Label, Model: m.File, Input: inputLabel(m), Results: map[string]*Result{}}
	runners := map[string]runner{}
	defer func() {
		for _, r := range runners {
			r.Close()
		}
	}()
	for _, c := range o.configs {
		res := &Result{}
		row.Results[c] = res
		t0 := time.Now()
		var r runner
		var err error
		if c == cfgORT {
			var ort *ortRunner
			if ort, err = startORT(ctx, path, m); err == nil {
				r = ort
				rep.ORTVersion, rep.ORTThreads = ort.Version, ort.Threads
			}
		} else {
			var cl *clRunner
			if cl, err = compileCL(ctx, core, path, m, c); err == nil {
				r = cl
				res.Choices, res.Shipped = cl.choices, cl.shipped
				res.CompileMS = ms(cl.compile)
			}
		}
		if c == cfgORT {
			res.CompileMS = ms(time.Since(t0)) // session and warm-up
		}
		if err != nil {
			res.Error = oneLine(err)
			fmt.Fprintf(out, "%-18s %-9s error: %s\n", m.Key, c, res.Error)
			continue
		}
		runners[c] = r
	}
	per := time.Duration(o.seconds / float64(o.rounds) * float64(time.Second))
	samples := map[string][]float64{}
	spent := map[string]float64{} // timed ms so far
	for range o.rounds {
		for _, c := range o.configs {
			r := runners[c]
			if r == nil || spent[c] >= o.cap*1000 {
				continue
			}
			t, err := r.runFor(ctx, per)
			if err != nil {
				row.Results[c].Error = oneLine(err)
				fmt.Fprintf(out, "%-18s %-9s error: %s\n", m.Key, c, row.Results[c].Error)
				r.Close()
				delete(runners, c)
				continue
			}
			samples[c] = append(samples[c], t...)
			for _, v := range t {
				spent[c] += v
			}
		}
	}
	for _, c := range o.configs {
		res := row.Results[c]
		if res.Error != "" {
			continue
		}
		res.Runs = len(samples[c])
		res.MedianMS = bench.Median(samples[c])
		fmt.Fprintf(out, "%-18s %-9s median %10.3f ms over %4d runs, compile %8.1f ms%s\n", m.Key, c, res.MedianMS, res.Runs, res.CompileMS, res.shippedNote())
	}
	return row, nil
}

// inputLabel is the row's input as the table shows it: the first
// input's dimensions.
func inputLabel(m benchModel) string {
	_, dims, _ := strings.Cut(m.Inputs[0], "=")
	return dims
}

// ms converts a duration to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// oneLine keeps an error message on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

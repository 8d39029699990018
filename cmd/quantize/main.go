package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/clinfer/clinfer/internal/cliutil"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/quantize"
	"github.com/clinfer/clinfer/tensor"

	_ "github.com/clinfer/clinfer/clbackend" // registers "GPU" (-d GPU calibrates there)
	_ "github.com/clinfer/clinfer/hetero"    // registers "HETERO"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quantize:", err)
		os.Exit(1)
	}
}

// run parses the flags, quantizes the model and writes it.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("quantize", flag.ContinueOnError)
	model := fs.String("m", "", "the float ONNX model (required)")
	output := fs.String("o", "", "the QDQ model to write (required)")
	calib := fs.String("calib", "", "directory of calibration samples (.npy; see the package doc)")
	random := fs.Int("calib-random", 0, "calibrate on this many seeded random samples instead")
	seed := fs.Uint("seed", 1, "seed of -calib-random")
	var shapes cliutil.ListFlag
	fs.Var(&shapes, "shape", "shape of an input's random samples: NAME=[1,3,48,192] (repeatable)")
	acts := fs.String("activations", "u8", "type of the quantized activations: u8 or i8")
	method := fs.String("method", "minmax", "calibration: minmax or percentile")
	pct := fs.Float64("percentile", quantize.DefaultPercentile, "the percentile of -method percentile")
	ops := fs.String("op_types", strings.Join(quantize.DefaultOpTypes, ","), "op types to quantize")
	exclude := fs.String("exclude", "", "comma-separated node names to keep in float")
	perTensor := fs.Bool("per_tensor", false, "one weight scale per tensor instead of per output channel")
	device := fs.String("d", "CPU", "device that runs calibration")
	checkIn := fs.String("check", "", "after writing, run the float and the quantized model on -check_device with this .npy input and print their latencies and the agreement of their outputs")
	checkDev := fs.String("check_device", "GPU", "device of -check")
	threshold := fs.Float64("threshold", 0.3, "-check's threshold: the IoU of the output elements above it (PP-OCR det's binarization)")
	iters := fs.Int("iters", 10, "-check's timed runs of each model")
	var checkProps cliutil.ListFlag
	fs.Var(&checkProps, "p", "-check's device property KEY=VALUE for both models (repeatable), e.g. -p GPU_TUNING_MODE=FAST")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags go before arguments; see -h)", fs.Arg(0))
	}
	if *model == "" || *output == "" {
		return errors.New("want -m MODEL -o OUT.onnx and -calib DIR or -calib-random N")
	}
	if (*calib == "") == (*random == 0) {
		return errors.New("want one of -calib DIR and -calib-random N")
	}
	opts := quantize.Options{Percentile: *pct, OpTypes: splitList(*ops), Exclude: splitList(*exclude), PerTensorWeights: *perTensor, Device: *device}
	var err error
	if opts.Activations, err = tensor.ParseElementType(*acts); err != nil {
		return fmt.Errorf("-activations: %w", err)
	}
	if opts.Method, err = quantize.ParseMethod(*method); err != nil {
		return err
	}
	m, name, err := cliutil.ReadModel(*model)
	if err != nil {
		return err
	}
	var samples []map[string]*tensor.Tensor
	if *calib != "" {
		samples, err = quantize.LoadSamples(*calib, m)
	} else {
		var sh map[string]tensor.Shape
		if sh, err = cliutil.ParseShapesFlag("-shape", m, shapes); err == nil {
			samples, err = quantize.RandomSamples(m, sh, *random, uint32(*seed))
		}
	}
	if err != nil {
		return err
	}
	t0 := time.Now()
	q, rep, err := quantize.Model(ctx, m, samples, opts)
	if err != nil {
		return err
	}
	if err := onnx.WriteFile(*output, q); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: %d nodes quantized (weights int8 per %s, activations %v, %s over %d samples on %s) in %.1f s\n",
		name, len(rep.Quantized), map[bool]string{false: "channel", true: "tensor"}[*perTensor], opts.Activations, opts.Method,
		rep.Samples, *device, time.Since(t0).Seconds())
	for _, n := range slices.Sorted(maps.Keys(rep.Float)) {
		fmt.Fprintf(out, "  float: %s (%s)\n", n, rep.Float[n])
	}
	fmt.Fprintf(out, "wrote %s\n", *output)
	if *checkIn != "" {
		props, err := cliutil.Props("-p", checkProps)
		if err != nil {
			return err
		}
		return check(ctx, out, m, q, *checkDev, *checkIn, props, *threshold, max(*iters, 1))
	}
	return nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/npy"
	"github.com/clinfer/clinfer/internal/sentinel"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// checkRun is one model compiled for -check: its request and what its
// runtime model says.
type checkRun struct {
	req   driver.InferRequest
	out   string
	ints  int // convolutions and products computing in u8 or i8 (RUNTIME_PRECISION)
	times []float64
	y     []float32
}

// check compiles the float model f and the quantized one q on device (with
// PERFORMANCE_HINT LATENCY and props), runs
// both on the input in path (a warm-up, then iters runs each, alternating
// so that load changes hit both alike) and prints their median latencies
// and their fastest runs (the figure least disturbed by other load),
// how many convolutions and products of each run in 8-bit integers, and the agreement of their
// first outputs: the IoU of the elements above threshold (PP-OCR det's
// binarized map at 0.3) and the largest difference.
func check(ctx context.Context, out io.Writer, f, q *graph.Model, device, path string, props map[string]string, threshold float64, iters int) error {
	if len(f.Parameters) != 1 {
		return sentinel.Errorf(sentinel.ErrUnsupported, "-check: the model has %d inputs; -check feeds one", len(f.Parameters))
	}
	x, err := npy.ReadFile(path)
	if err != nil {
		return fmt.Errorf("-check: %w", err)
	}
	in := f.Parameters[0].Name
	if x.Type() != tensor.F32 {
		return sentinel.Errorf(sentinel.ErrInvalidArgument, "-check: %s holds %v; input %q takes f32", path, x.Type(), in)
	}
	core := driver.NewCore()
	defer core.Close()
	var runs []*checkRun
	for _, m := range []*graph.Model{f, q} {
		cfg := map[string]string{driver.KeyPerformanceHint: "LATENCY"}
		maps.Copy(cfg, props)
		cm, err := core.CompileModel(ctx, m, device, cfg)
		if err != nil {
			return fmt.Errorf("-check: compiling %s on %s: %w", m.Name, device, err)
		}
		defer cm.Close()
		rm, err := cm.RuntimeModel()
		if err != nil {
			return err
		}
		nodes, err := rm.Nodes()
		if err != nil {
			return err
		}
		r := &checkRun{out: cm.Outputs()[0].Name}
		for _, n := range nodes {
			if p := n.RT.Extra[driver.RuntimePrecision]; graph.IntegerPrecision(n) != tensor.Undefined && (p == "u8" || p == "i8") {
				r.ints++
			}
		}
		if r.req, err = cm.CreateInferRequest(); err != nil {
			return err
		}
		defer r.req.Close()
		if err := r.req.SetTensor(in, x); err != nil {
			return fmt.Errorf("-check: %w", err)
		}
		if err := r.req.Infer(ctx); err != nil { // warm-up
			return err
		}
		y, err := r.req.Tensor(r.out)
		if err != nil {
			return err
		}
		c := y.Contiguous()
		if c.Type() != tensor.F32 {
			return sentinel.Errorf(sentinel.ErrUnsupported, "-check: output %q is %v; -check compares f32 outputs", r.out, c.Type())
		}
		r.y = slices.Clone(c.F32())
		runs = append(runs, r)
	}
	for range iters {
		for _, r := range runs {
			t0 := time.Now()
			if err := r.req.Infer(ctx); err != nil {
				return err
			}
			r.times = append(r.times, float64(time.Since(t0).Microseconds())/1e3)
		}
	}
	a, b := runs[0].y, runs[1].y
	if len(a) != len(b) {
		return sentinel.Errorf(sentinel.ErrInvalidArgument, "-check: outputs of %d and %d elements", len(a), len(b))
	}
	inter, union, maxDiff := 0, 0, 0.0
	for i := range a {
		p, q := float64(a[i]) > threshold, float64(b[i]) > threshold
		if p && q {
			inter++
		}
		if p || q {
			union++
		}
		maxDiff = math.Max(maxDiff, math.Abs(float64(a[i])-float64(b[i])))
	}
	iou := 1.0
	if union > 0 {
		iou = float64(inter) / float64(union)
	}
	mf, mq := median(runs[0].times), median(runs[1].times)
	nf, nq := slices.Min(runs[0].times), slices.Min(runs[1].times)
	fmt.Fprintf(out, "check on %s (%s, %d runs each): f32 %.2f ms, int8 %.2f ms (%.2fx); fastest runs f32 %.2f ms, int8 %.2f ms (%.2fx); convolutions and products in u8/i8: f32 %d, int8 %d\n",
		device, path, iters, mf, mq, mf/mq, nf, nq, nf/nq, runs[0].ints, runs[1].ints)
	fmt.Fprintf(out, "  output %q above %g: IoU %.4f (%d elements above in f32), max |diff| %.4g\n", runs[0].out, threshold, iou,
		count(a, threshold), maxDiff)
	return nil
}

// median is the middle of v (the mean of the two middle values).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// count is how many of v are above t.
func count(v []float32, t float64) int {
	n := 0
	for _, x := range v {
		if float64(x) > t {
			n++
		}
	}
	return n
}

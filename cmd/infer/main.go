package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/cliutil"
	"github.com/clinfer/clinfer/internal/defaultmodel"
	"github.com/clinfer/clinfer/internal/npy"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"

	"github.com/clinfer/clinfer/auto"           // registers "AUTO"
	_ "github.com/clinfer/clinfer/batch"        // registers "BATCH"
	_ "github.com/clinfer/clinfer/clbackend"    // registers "GPU"
	_ "github.com/clinfer/clinfer/cpu_fallback" // registers "CPU"
	_ "github.com/clinfer/clinfer/hetero"       // registers "HETERO"
)

type options struct {
	model    string
	device   string
	inputs   cliutil.ListFlag
	outDir   string
	props    cliutil.ListFlag
	shapes   cliutil.ListFlag
	seed     uint
	warmRuns int
	compare  string
	verbose  bool
	execDot  string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "infer:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*options, error) {
	var o options
	fs := flag.NewFlagSet("infer", flag.ContinueOnError)
	fs.StringVar(&o.model, "m", "", "model file: ONNX, or OpenVINO IR (.xml, its weights from the .bin beside it) (default: the embedded "+defaultmodel.Name+")")
	fs.StringVar(&o.device, "d", "CPU", "device: CPU, GPU, GPU.1, HETERO:GPU,CPU, AUTO, AUTO:GPU,CPU, BATCH:GPU(4)")
	fs.Var(&o.inputs, "i", "input NAME=FILE.npy (repeatable); inputs without one get seeded random data")
	fs.StringVar(&o.outDir, "o", "", "directory for OUTDIR/<output name>.npy (default: print a summary only)")
	fs.Var(&o.props, "p", "device property KEY=VALUE (repeatable), e.g. -p ENABLE_PROFILING=YES")
	fs.Var(&o.shapes, "shape", "fix an input's dynamic dimensions: NAME=[1,3,48,192] (repeatable)")
	fs.UintVar(&o.seed, "seed", 1, "seed for random inputs")
	fs.IntVar(&o.warmRuns, "runs", 1, "number of timed inferences (the first is reported separately)")
	fs.StringVar(&o.compare, "compare", "", "also run the same inputs on this device and print the largest difference per output (e.g. -d GPU -compare CPU)")
	fs.BoolVar(&o.verbose, "v", true, "print the runtime model (what ran where)")
	fs.StringVar(&o.execDot, "exec_graph", "", "write the runtime model (layer type, kernel, execution order, perf counter, original names) as Graphviz dot to this file")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags go before arguments; see -h)", fs.Arg(0))
	}
	if o.warmRuns < 1 {
		return nil, fmt.Errorf("-runs %d: want at least 1", o.warmRuns)
	}
	return &o, nil
}

func run(ctx context.Context, args []string, out io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}

	t0 := time.Now()
	m, modelName, err := cliutil.ReadModel(o.model)
	if err != nil {
		return err
	}
	readTime := time.Since(t0)

	props, err := cliutil.Props("-p", o.props)
	if err != nil {
		return err
	}
	shapes, err := cliutil.ParseShapes(m, o.shapes)
	if err != nil {
		return err
	}

	// Inputs: from files, or seeded random data of the (fixed) input shape.
	inputs := map[string]*tensor.Tensor{}
	sources := map[string]string{}
	for _, spec := range o.inputs {
		k, path, err := cliutil.SplitKV("-i", spec)
		if err != nil {
			return err
		}
		p := m.Parameter(k)
		if p == nil {
			return fmt.Errorf("-i %s: model has no input %q (inputs: %s)", spec, k, cliutil.InputNames(m))
		}
		t, err := npy.ReadFile(path)
		if err != nil {
			return err
		}
		if t.Type() != p.Outputs[0].Type {
			if !t.Type().IsFloat() || !p.Outputs[0].Type.IsFloat() {
				return fmt.Errorf("-i %s: %s holds %v, input %q wants %v", spec, path, t.Type(), k, p.Outputs[0].Type)
			}
			if t, err = t.Convert(p.Outputs[0].Type); err != nil {
				return fmt.Errorf("-i %s: %w", spec, err)
			}
		}
		inputs[k] = t
		sources[k] = path
	}
	random, err := cliutil.RandomInputs(m, shapes, uint32(o.seed))
	if err != nil {
		return err
	}
	for i, p := range m.Parameters {
		if _, ok := inputs[p.Name]; !ok {
			inputs[p.Name] = random[p.Name]
			sources[p.Name] = fmt.Sprintf("random (seed %d)", uint32(o.seed)+uint32(i))
		}
	}

	core := driver.NewCore()
	defer core.Close()
	t1 := time.Now()
	cm, err := core.CompileModel(ctx, m, o.device, props)
	if err != nil {
		return err
	}
	defer cm.Close()
	compileTime := time.Since(t1)

	req, err := cm.CreateInferRequest()
	if err != nil {
		return err
	}
	defer req.Close()
	for name, t := range inputs {
		if err := req.SetTensor(name, t); err != nil {
			return err
		}
	}
	var times []time.Duration
	var ranOn []string // AUTO: the device of each inference
	for r := 0; r < o.warmRuns; r++ {
		t2 := time.Now()
		if err := req.Infer(ctx); err != nil {
			return err
		}
		times = append(times, time.Since(t2))
		if ar, ok := req.(*auto.InferRequest); ok {
			ranOn = append(ranOn, ar.Device())
		}
	}

	execDevices, _ := cm.Property(driver.KeyExecutionDevices)
	fmt.Fprintf(out, "model      %s (%s)\n", modelName, m.Name)
	fmt.Fprintf(out, "device     %s (execution devices: %s)\n", o.device, execDevices)
	if len(ranOn) > 0 {
		fmt.Fprintf(out, "ran on     %s\n", strings.Join(ranOn, ", "))
	}
	for _, p := range m.Parameters {
		fmt.Fprintf(out, "input      %-20s %v <- %s\n", p.Name, inputs[p.Name], sources[p.Name])
	}
	if o.verbose {
		if err := printRuntimeModel(out, cm, execDevices); err != nil {
			return err
		}
	}
	if o.execDot != "" {
		if err := writeExecGraph(o.execDot, cm); err != nil {
			return err
		}
		fmt.Fprintf(out, "exec graph %s\n", o.execDot)
	}
	for _, port := range cm.Outputs() {
		t, err := req.Tensor(port.Name)
		if err != nil {
			return err
		}
		if o.outDir != "" {
			if err := os.MkdirAll(o.outDir, 0o755); err != nil {
				return err
			}
			path := filepath.Join(o.outDir, safeFileName(port.Name)+".npy")
			if err := npy.WriteFile(path, t); err != nil {
				return err
			}
			fmt.Fprintf(out, "output     %-20s %v -> %s\n", port.Name, t, path)
			continue
		}
		fmt.Fprintf(out, "output     %-20s %v %s\n", port.Name, t, summarize(t))
	}
	fmt.Fprintf(out, "timing     read %v, compile %v, first inference %v", round(readTime), round(compileTime), round(times[0]))
	if len(times) > 1 {
		fmt.Fprintf(out, ", median of next %d %v", len(times)-1, round(median(times[1:])))
	}
	fmt.Fprintln(out)
	if o.compare != "" {
		return compareOn(ctx, out, core, m, o.compare, o.device, props, inputs, req, cm.Outputs())
	}
	return nil
}

// compareOn runs the same inputs on a second device and prints, per output,
// the largest absolute difference from the first device's result.
func compareOn(ctx context.Context, out io.Writer, core *driver.Core, m *graph.Model, device, first string, props map[string]string,
	inputs map[string]*tensor.Tensor, firstReq driver.InferRequest, ports []driver.PortInfo) error {
	cm, err := core.CompileModel(ctx, m, device, props)
	if err != nil {
		return fmt.Errorf("-compare %s: %w", device, err)
	}
	defer cm.Close()
	req, err := cm.CreateInferRequest()
	if err != nil {
		return fmt.Errorf("-compare %s: %w", device, err)
	}
	defer req.Close()
	for name, t := range inputs {
		if err := req.SetTensor(name, t); err != nil {
			return fmt.Errorf("-compare %s: %w", device, err)
		}
	}
	if err := req.Infer(ctx); err != nil {
		return fmt.Errorf("-compare %s: %w", device, err)
	}
	for _, port := range ports {
		a, err := firstReq.Tensor(port.Name)
		if err != nil {
			return err
		}
		b, err := req.Tensor(port.Name)
		if err != nil {
			return fmt.Errorf("-compare %s: %w", device, err)
		}
		if !a.Shape().Equal(b.Shape()) {
			return fmt.Errorf("-compare %s: output %q is %v on %s but %v on %s", device, port.Name, a, first, b, device)
		}
		av, bv := a.Float64s(), b.Float64s()
		worst, at := 0.0, 0
		for i := range av {
			if d := math.Abs(av[i] - bv[i]); d > worst || math.IsNaN(d) {
				worst, at = d, i
			}
		}
		fmt.Fprintf(out, "compare    %-20s %s vs %s: largest difference %.3g (element %d)\n", port.Name, first, device, worst, at)
	}
	return nil
}

func summarize(t *tensor.Tensor) string {
	v := t.Float64s()
	if len(v) == 0 {
		return "(empty)"
	}
	lo, hi, sum := v[0], v[0], 0.0
	for _, x := range v {
		lo, hi, sum = min(lo, x), max(hi, x), sum+x
	}
	head := v[:min(len(v), 6)]
	parts := make([]string, len(head))
	for i, x := range head {
		parts[i] = fmt.Sprintf("%.5g", x)
	}
	more := ""
	if len(v) > len(head) {
		more = " ..."
	}
	return fmt.Sprintf("min %.5g max %.5g mean %.5g [%s%s]", lo, hi, sum/float64(len(v)), strings.Join(parts, " "), more)
}

func printRuntimeModel(out io.Writer, cm driver.CompiledModel, device string) error {
	rm, err := cm.RuntimeModel()
	if errors.Is(err, driver.ErrNotImplemented) {
		return nil
	}
	if err != nil {
		return err
	}
	nodes, err := rm.Nodes()
	if err != nil {
		return err
	}
	constants := 0
	for _, n := range nodes {
		if n.OpType == graph.OpConstant {
			constants++
		}
	}
	fmt.Fprintf(out, "runtime model: %d executed nodes (+%d constants), what ran where:\n", len(nodes)-constants, constants)
	fmt.Fprintf(out, "  %-5s %-8s %-22s %-20s %-26s %s\n", "order", "device", "node", "layer type", "implementation", "original names")
	for _, n := range nodes {
		if n.OpType == graph.OpConstant {
			continue
		}
		x := n.RT.Extra
		dev := n.RT.Affinity
		if dev == "" {
			dev = device
		}
		fmt.Fprintf(out, "  %-5s %-8s %-22s %-20s %-26s %s\n", x["EXECUTION_ORDER"], dev, n.Name, x["LAYER_TYPE"], x["IMPL_TYPE"], x["ORIGINAL_NAMES"])
	}
	return nil
}

func safeFileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r == 0 {
			return '_'
		}
		return r
	}, s)
}

func round(d time.Duration) time.Duration {
	if d > time.Millisecond {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}

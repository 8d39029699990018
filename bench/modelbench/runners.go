package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/cliutil"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// parseInput splits "name=AxBxC" ("name=" for a scalar).
func parseInput(spec string) (string, tensor.Shape, error) {
	name, dims, ok := strings.Cut(spec, "=")
	if !ok || name == "" {
		return "", nil, fmt.Errorf("input %q: want name=AxBxC", spec)
	}
	sh := tensor.Shape{}
	if dims == "" {
		return name, sh, nil
	}
	for _, d := range strings.Split(dims, "x") {
		n, err := strconv.ParseInt(d, 10, 64)
		if err != nil || n < 1 {
			return "", nil, fmt.Errorf("input %q: bad dimension %q", spec, d)
		}
		sh = append(sh, n)
	}
	return name, sh, nil
}

// clRunner is a model compiled on a clinfer device, with one request.
type clRunner struct {
	cm  driver.CompiledModel
	req driver.InferRequest
	// choices counts the GPU plan's kernel variant choices, shipped those
	// the shipped tuning database made.
	choices, shipped int
	// compile is CompileModel's time (with the device's warm-up run).
	compile time.Duration
}

// choicer is what a GPU compiled model reports of its kernel choices.
type choicer interface {
	KernelChoices() []clbackend.TunedOp
}

// clProps are the compile properties of a clinfer configuration.
func clProps(cfg string, m benchModel) (device string, props map[string]string) {
	props = map[string]string{driver.KeyPerformanceHint: driver.HintLatency.String()}
	if m.Stateful != "" {
		props[driver.KeyMakeStateful] = m.Stateful
	}
	switch cfg {
	case cfgGPU:
		props[clbackend.KeyShippedTuning] = "NO"
		return "GPU", props
	case cfgGPUTuned:
		return "GPU", props
	}
	return "CPU", props
}

// compileCL reads the model, fixes its inputs to m's shapes, compiles it
// for cfg, binds seeded random inputs (and m's values) and runs the
// warm-up inference.
func compileCL(ctx context.Context, core *driver.Core, path string, m benchModel, cfg string) (_ *clRunner, err error) {
	model, err := onnx.ReadFile(path)
	if err != nil {
		return nil, err
	}
	reshape := map[string]graph.PartialShape{}
	shapes := map[string]tensor.Shape{}
	for _, spec := range m.Inputs {
		name, sh, err := parseInput(spec)
		if err != nil {
			return nil, err
		}
		reshape[name] = graph.StaticShape(sh)
		shapes[name] = sh
	}
	if err := model.Reshape(reshape); err != nil {
		return nil, fmt.Errorf("reshaping to %s: %w", strings.Join(m.Inputs, " "), err)
	}
	inputs, err := cliutil.RandomInputs(model, shapes, 1)
	if err != nil {
		return nil, err
	}
	for _, v := range m.Values {
		name, val, _ := strings.Cut(v, "=")
		val, _, _ = strings.Cut(val, ":")
		f, err := strconv.ParseFloat(val, 64)
		x := inputs[name]
		if err != nil || x == nil {
			return nil, fmt.Errorf("value %q: want name=V:type for an input", v)
		}
		if inputs[name], err = tensor.FromFloat64s(x.Type(), x.Shape(), []float64{f}); err != nil {
			return nil, fmt.Errorf("value %q: %w", v, err)
		}
	}
	device, props := clProps(cfg, m)
	t0 := time.Now()
	cm, err := core.CompileModel(ctx, model, device, props)
	if err != nil {
		return nil, err
	}
	r := &clRunner{cm: cm, compile: time.Since(t0)}
	defer func() {
		if err != nil {
			err = errors.Join(err, r.Close())
		}
	}()
	if r.req, err = cm.CreateInferRequest(); err != nil {
		return nil, err
	}
	for _, p := range cm.Inputs() { // a stateful model's states are its request's
		if err := r.req.SetTensor(p.Name, inputs[p.Name]); err != nil {
			return nil, err
		}
	}
	if err := r.req.Infer(ctx); err != nil {
		return nil, err
	}
	if ch, ok := cm.(choicer); ok {
		for _, c := range ch.KernelChoices() {
			r.choices++
			if c.Source == "shipped" {
				r.shipped++
			}
		}
	}
	return r, nil
}

func (r *clRunner) runFor(ctx context.Context, d time.Duration) ([]float64, error) {
	var times []float64
	start := time.Now()
	for len(times) == 0 || time.Since(start) < d {
		t0 := time.Now()
		if err := r.req.Infer(ctx); err != nil {
			return nil, err
		}
		times = append(times, ms(time.Since(t0)))
	}
	return times, nil
}

// Close releases the request and the compiled model.
func (r *clRunner) Close() error {
	var err error
	if r.req != nil {
		err = r.req.Close()
		r.req = nil
	}
	if r.cm != nil {
		err = errors.Join(err, r.cm.Close())
		r.cm = nil
	}
	return err
}

// ortThreads is ONNX Runtime's intra-op thread count.
const ortThreads = 2

// ortRunner is scripts/ortref/bench.js in --rounds mode: a node process
// holding an ONNX Runtime session, timing the model for the seconds each
// line of its stdin asks.
type ortRunner struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   *bufio.Scanner
	stderr  *lockedBuffer
	version string
	threads int
}

// startORT starts bench.js on the model with m's shapes, values and
// states, and waits for its warm-up.
func startORT(ctx context.Context, path string, m benchModel) (_ *ortRunner, err error) {
	root, err := conformance.RepoRoot()
	if err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node is not installed (make deps): %w", err)
	}
	args := []string{filepath.Join(root, "scripts", "ortref", "bench.js"), "--model", path,
		"--threads", strconv.Itoa(ortThreads), "--warmup", "1", "--rounds"}
	for _, s := range m.Inputs {
		args = append(args, "--shape", s)
	}
	for _, v := range m.Values {
		args = append(args, "--value", v)
	}
	if m.Stateful != "" {
		args = append(args, "--stateful", m.Stateful)
	}
	r := &ortRunner{stderr: &lockedBuffer{}}
	r.cmd = exec.CommandContext(ctx, node, args...)
	r.cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(root, ".cache", "node_modules"))
	r.cmd.Stderr = r.stderr
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	r.lines = bufio.NewScanner(stdout)
	r.lines.Buffer(make([]byte, 1<<20), 64<<20)
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", strings.Join(args, " "), err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, r.Close())
		}
	}()
	var ready struct {
		Ready   bool   `json:"ready"`
		Threads int    `json:"threads"`
		Version string `json:"ort_version"`
	}
	if err := r.read(&ready); err != nil {
		return nil, err
	}
	if !ready.Ready {
		return nil, fmt.Errorf("bench.js did not say it was ready")
	}
	r.version, r.threads = ready.Version, ready.Threads
	return r, nil
}

// read decodes bench.js's next output line into v.
func (r *ortRunner) read(v any) error {
	if !r.lines.Scan() {
		err := r.lines.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("ONNX Runtime (bench.js): %w: %s", err, strings.TrimSpace(r.stderr.String()))
	}
	if err := json.Unmarshal(r.lines.Bytes(), v); err != nil {
		return fmt.Errorf("ONNX Runtime (bench.js): reading %q: %w", r.lines.Text(), err)
	}
	return nil
}

func (r *ortRunner) runFor(_ context.Context, d time.Duration) ([]float64, error) {
	if _, err := fmt.Fprintf(r.stdin, "%g\n", d.Seconds()); err != nil {
		return nil, fmt.Errorf("ONNX Runtime (bench.js): %w: %s", err, strings.TrimSpace(r.stderr.String()))
	}
	var round struct {
		Times []float64 `json:"times_ms"`
	}
	if err := r.read(&round); err != nil {
		return nil, err
	}
	if len(round.Times) == 0 {
		return nil, errors.New("ONNX Runtime (bench.js): a round with no runs")
	}
	return round.Times, nil
}

// Close ends bench.js (the end of its stdin) and waits for it.
func (r *ortRunner) Close() error {
	if r.cmd == nil {
		return nil
	}
	r.stdin.Close()
	err := r.cmd.Wait()
	r.cmd = nil
	if err != nil {
		return fmt.Errorf("ONNX Runtime (bench.js): %w: %s", err, strings.TrimSpace(r.stderr.String()))
	}
	return nil
}

// lockedBuffer is the child's stderr, written by exec's copying goroutine
// and read for error messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// Streaming models (Silero VAD: a chunk, a sample rate, a recurrent
// state): -value fills an input with one value, -stateful keeps the states
// in the requests (MAKE_STATEFUL), and -ort times ONNX Runtime on the same
// run beside clinfer.

// setValues fills the inputs -value names with their value.
func setValues(inputs map[string]*tensor.Tensor, values []string) error {
	for _, kv := range values {
		name, v, ok := strings.Cut(kv, "=")
		x, have := inputs[name]
		if !ok || !have {
			return fmt.Errorf("-value %q: want NAME=VALUE for an input of the model", kv)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("-value %q: %w", kv, err)
		}
		vals := make([]float64, x.NumElements())
		for i := range vals {
			vals[i] = f
		}
		t, err := tensor.FromFloat64s(x.Type(), x.Shape(), vals)
		if err != nil {
			return fmt.Errorf("-value %q: %w", kv, err)
		}
		inputs[name] = t
	}
	return nil
}

// modelInputs keeps the inputs the compiled model has (a stateful model's
// state inputs are its requests').
func modelInputs(inputs map[string]*tensor.Tensor, cm driver.CompiledModel) map[string]*tensor.Tensor {
	out := map[string]*tensor.Tensor{}
	for _, p := range cm.Inputs() {
		if t, ok := inputs[p.Name]; ok {
			out[p.Name] = t
		}
	}
	return out
}

// ORTResult is ONNX Runtime's latency on the same model and inputs.
type ORTResult struct {
	MedianMS float64 `json:"median_ms"`
	P90MS    float64 `json:"p90_ms"`
	MinMS    float64 `json:"min_ms"`
	Iters    int     `json:"iters"`
	Threads  int     `json:"threads"`
	Version  string  `json:"ort_version"`
	// Ratio is clinfer's median over ONNX Runtime's.
	Ratio float64 `json:"ratio"`
}

// compareORT runs scripts/ortref/bench.js on the model with the inputs'
// shapes (and -value values, -stateful states fed back) and prints its
// latency beside clinfer's median.
func compareORT(ctx context.Context, out io.Writer, o *options, inputs map[string]*tensor.Tensor, median float64) (*ORTResult, error) {
	root, err := conformance.RepoRoot()
	if err != nil {
		return nil, fmt.Errorf("-ort: %w", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("-ort: node is not installed (make deps): %w", err)
	}
	iters := o.niter
	if iters == 0 {
		iters = 200
	}
	args := []string{filepath.Join(root, "scripts", "ortref", "bench.js"), "--model", o.model, "--iters", strconv.Itoa(iters), "--threads", "1"}
	names := make([]string, 0, len(inputs))
	for name := range inputs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var dims []string
		for _, d := range inputs[name].Shape() {
			dims = append(dims, strconv.FormatInt(d, 10))
		}
		args = append(args, "--shape", name+"="+strings.Join(dims, "x"))
	}
	for _, kv := range o.values {
		name, _, _ := strings.Cut(kv, "=")
		args = append(args, "--value", kv+":"+ortType(inputs[name].Type()))
	}
	if o.stateful != "" {
		args = append(args, "--stateful", o.stateful)
	}
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(root, ".cache", "node_modules"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("-ort: %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	var r ORTResult
	if err := json.Unmarshal(bytes.TrimSpace(b), &r); err != nil {
		return nil, fmt.Errorf("-ort: reading %q: %w", b, err)
	}
	if r.MedianMS > 0 {
		r.Ratio = median / r.MedianMS
	}
	fmt.Fprintf(out, "ort        median %.3f ms, min %.3f, p90 %.3f (ONNX Runtime %s CPU, %d thread, %d runs): clinfer/ORT %.2fx\n",
		r.MedianMS, r.MinMS, r.P90MS, r.Version, r.Threads, r.Iters, r.Ratio)
	return &r, nil
}

// ortType is bench.js's name for an element type.
func ortType(t tensor.ElementType) string {
	switch t {
	case tensor.I64:
		return "int64"
	case tensor.I32:
		return "int32"
	}
	return "float32"
}

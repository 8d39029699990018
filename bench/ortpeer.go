package bench

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
)

// ORTSpec is the model an ORTPeer times and how its inputs are filled, in
// scripts/ortref/bench.js's terms.
type ORTSpec struct {
	// Root is the repository root (scripts/ortref, .cache/node_modules).
	Root string
	// Model is the model file.
	Model string
	// Inputs are "name=AxBxC" shapes ("name=" for a scalar), one per input.
	Inputs []string
	// Values fill inputs with one value: "name=V[:int64|int32|float32]".
	Values []string
	// Stateful pairs state inputs with the outputs fed back into them
	// ("state:stateN"), as MAKE_STATEFUL keeps them in a clinfer request.
	Stateful string
	// Threads is ONNX Runtime's intra-op thread count.
	Threads int
}

// ORTPeer is scripts/ortref/bench.js in --rounds mode: a node process
// holding an ONNX Runtime session, timing the model for the seconds each
// call of RunFor asks, so a Go benchmark can interleave its own timings
// with ONNX Runtime's in one run. Each time is one awaited session.run
// with the inputs already made (the outputs come back as new tensors).
type ORTPeer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr *lockedBuffer
	// Version and Threads are what bench.js reports of its session.
	Version string
	Threads int
}

// StartORT starts bench.js on spec's model and waits for its warm-up. The
// process ends with ctx or Close.
func StartORT(ctx context.Context, spec ORTSpec) (_ *ORTPeer, err error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node is not installed (make deps): %w", err)
	}
	args := []string{filepath.Join(spec.Root, "scripts", "ortref", "bench.js"), "--model", spec.Model,
		"--threads", strconv.Itoa(max(spec.Threads, 1)), "--warmup", "1", "--rounds"}
	for _, s := range spec.Inputs {
		args = append(args, "--shape", s)
	}
	for _, v := range spec.Values {
		args = append(args, "--value", v)
	}
	if spec.Stateful != "" {
		args = append(args, "--stateful", spec.Stateful)
	}
	r := &ORTPeer{stderr: &lockedBuffer{}}
	r.cmd = exec.CommandContext(ctx, node, args...)
	r.cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(spec.Root, ".cache", "node_modules"))
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
	r.Version, r.Threads = ready.Version, ready.Threads
	return r, nil
}

// read decodes bench.js's next output line into v.
func (r *ORTPeer) read(v any) error {
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

// RunFor has bench.js run the model for d (at least once) and returns the
// time of each run in ms.
func (r *ORTPeer) RunFor(d time.Duration) ([]float64, error) {
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
func (r *ORTPeer) Close() error {
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

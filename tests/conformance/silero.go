package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// VADSignal is the synthetic audio of the streaming voice-activity tests,
// the Go twin of scripts/ortref/signal.js (bit-identical): a 125 Hz pulse
// train through a two-pole resonator in blocks 10..27 of every 40 blocks
// of 20 ms, over uniform noise of amplitude 0.02 (seeded) everywhere.
func VADSignal(seed uint32, sr, n int) []float32 {
	noise := seeded.Float32s(seed, n, -1, 1)
	period, block := sr/125, sr/50
	out := make([]float32, n)
	var y1, y2 float64
	for i := range out {
		c := i / block % 40
		e := 0.0
		if c >= 10 && c < 28 && i%period == 0 {
			e = 1
		}
		// Each product rounded on its own, as JavaScript does (no fused
		// multiply-add).
		y := e + float64(1.7*y1) - float64(0.81*y2)
		y2, y1 = y1, y
		out[i] = float32(float64(0.1*y) + float64(0.02*float64(noise[i])))
	}
	return out
}

// SileroTolerance is how far clinfer's speech probabilities may be from
// ONNX Runtime's over a stream, and its final states relative to their
// size (v4's LSTM cell states grow to hundreds, where float32 steps are
// 3e-5).
const SileroTolerance = 1e-4

// SileroState is one state input of a Silero model and the output that
// carries it to the next chunk.
type SileroState struct {
	Input  string  `json:"input"`
	Output string  `json:"output"`
	Shape  []int64 `json:"shape"`
}

// SileroCase is one tests/testdata/silero/<name>.json: a Silero VAD model
// streamed over Chunks chunks of VADSignal(Seed, SR, ...), with the speech
// probability ONNX Runtime gave for each chunk and its final states
// (written by scripts/ortref/silero_refs.js).
type SileroCase struct {
	Name        string               `json:"-"`
	Model       string               `json:"model"`
	Version     int                  `json:"version"`
	SR          int                  `json:"sr"`
	Chunk       int                  `json:"chunk"`
	Chunks      int                  `json:"chunks"`
	Seed        uint32               `json:"seed"`
	States      []SileroState        `json:"states"`
	Probs       []float32            `json:"probs"`
	FinalStates map[string][]float32 `json:"final_states"`
	ORTVersion  string               `json:"ort_version"`
}

// StatePairs is the MAKE_STATEFUL value of the case's model: its state
// inputs and outputs, "input:output,...".
func (c *SileroCase) StatePairs() string {
	var pairs []string
	for _, s := range c.States {
		pairs = append(pairs, s.Input+":"+s.Output)
	}
	return strings.Join(pairs, ",")
}

// SileroCases reads every case under tests/testdata/silero, sorted by
// name.
func SileroCases() ([]*SileroCase, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(root, "tests", "testdata", "silero", "*.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("conformance: no Silero cases under tests/testdata/silero: run `make refs`")
	}
	sort.Strings(files)
	var out []*SileroCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		c := &SileroCase{Name: strings.TrimSuffix(filepath.Base(f), ".json")}
		if err := json.Unmarshal(b, c); err != nil {
			return nil, fmt.Errorf("conformance: %s: %w", f, err)
		}
		if len(c.Probs) != c.Chunks || c.Chunk <= 0 || len(c.States) == 0 {
			return nil, fmt.Errorf("conformance: %s: %d probabilities for %d chunks of %d samples, %d states", f, len(c.Probs), c.Chunks, c.Chunk, len(c.States))
		}
		out = append(out, c)
	}
	return out, nil
}

// SileroModel reads the case's model with its audio input fixed to one
// chunk and its states to batch 1, so that the nested Ifs that depend on
// shapes fold at compile time.
func SileroModel(c *SileroCase) (*graph.Model, error) {
	p, err := ModelPath(c.Model)
	if err != nil {
		return nil, err
	}
	m, err := onnx.ReadFile(p)
	if err != nil {
		return nil, err
	}
	for _, prm := range m.Parameters {
		switch {
		case prm.Name == "input":
			prm.Outputs[0].Shape = graph.ShapeOf(1, int64(c.Chunk))
		default:
			for _, s := range c.States {
				if s.Input == prm.Name {
					prm.Outputs[0].Shape = graph.ShapeOf(s.Shape...)
				}
			}
		}
	}
	return m, nil
}

// SileroStream is what streaming a case gave: per-chunk probabilities and
// latencies, the final states, and the bytes moved between host and device
// by all chunks but the first.
type SileroStream struct {
	Probs       []float32
	Latency     []time.Duration
	FinalStates map[string][]float32
	Transfers   driver.Transfers
}

// StreamSilero compiles the case's model on device with props and streams
// chunks chunks through it: with stateful, the states are the request's
// own (MAKE_STATEFUL) and never leave it; otherwise each chunk's state
// outputs are bound as the next chunk's inputs.
func StreamSilero(ctx context.Context, core *driver.Core, device string, c *SileroCase, chunks int, stateful bool, props map[string]string) (*SileroStream, error) {
	m, err := SileroModel(c)
	if err != nil {
		return nil, err
	}
	all := map[string]string{}
	for k, v := range props {
		all[k] = v
	}
	if stateful {
		all[driver.KeyMakeStateful] = c.StatePairs()
	}
	cm, err := core.CompileModel(ctx, m, device, all)
	if err != nil {
		return nil, fmt.Errorf("compile %s on %s: %w", c.Model, device, err)
	}
	defer cm.Close()
	return StreamCompiled(ctx, cm, c, chunks, stateful)
}

// StreamCompiled streams chunks chunks of the case through a compiled
// model (see StreamSilero).
func StreamCompiled(ctx context.Context, cm driver.CompiledModel, c *SileroCase, chunks int, stateful bool) (*SileroStream, error) {
	req, err := cm.CreateInferRequest()
	if err != nil {
		return nil, err
	}
	defer req.Close()
	audio := VADSignal(c.Seed, c.SR, c.Chunk*chunks)
	sr, _ := tensor.FromI64(tensor.Shape{}, []int64{int64(c.SR)})
	if err := req.SetTensor("sr", sr); err != nil {
		return nil, err
	}
	if !stateful {
		for _, s := range c.States {
			z, _ := tensor.New(tensor.F32, tensor.Shape(s.Shape))
			if err := req.SetTensor(s.Input, z); err != nil {
				return nil, err
			}
		}
	}
	out := &SileroStream{FinalStates: map[string][]float32{}}
	tr, hasTransfers := req.(driver.TransferCounter)
	for k := 0; k < chunks; k++ {
		x, _ := tensor.FromF32(tensor.Shape{1, int64(c.Chunk)}, audio[k*c.Chunk:(k+1)*c.Chunk])
		if err := req.SetTensor("input", x); err != nil {
			return nil, err
		}
		start := time.Now()
		if err := req.Infer(ctx); err != nil {
			return nil, fmt.Errorf("chunk %d: %w", k, err)
		}
		y, err := req.Tensor("output")
		if err != nil {
			return nil, err
		}
		out.Probs = append(out.Probs, y.F32()[0])
		if !stateful {
			for _, s := range c.States {
				st, err := req.Tensor(s.Output)
				if err != nil {
					return nil, err
				}
				if err := req.SetTensor(s.Input, st.Clone()); err != nil {
					return nil, err
				}
			}
		}
		out.Latency = append(out.Latency, time.Since(start))
		if hasTransfers && k > 0 {
			t := tr.Transfers()
			out.Transfers.HostToDevice += t.HostToDevice
			out.Transfers.DeviceToHost += t.DeviceToHost
			out.Transfers.DeviceToDevice += t.DeviceToDevice
		}
	}
	for _, s := range c.States {
		var st *tensor.Tensor
		if stateful {
			st, err = stateOf(req, s.Input)
		} else {
			st, err = req.Tensor(s.Input)
		}
		if err != nil {
			return nil, err
		}
		out.FinalStates[s.Output] = st.Contiguous().F32()
	}
	return out, nil
}

// stateOf returns a request's state called name (driver.Stateful).
func stateOf(req driver.InferRequest, name string) (*tensor.Tensor, error) {
	s, ok := req.(driver.Stateful)
	if !ok {
		return nil, fmt.Errorf("conformance: request %T has no states", req)
	}
	for _, v := range s.QueryState() {
		if v.Name() == name {
			return v.State()
		}
	}
	return nil, fmt.Errorf("conformance: request has no state %q", name)
}

// CheckSilero compares a stream with the case's references over its
// chunks and returns the largest differences of the probabilities and of
// the final states, relative to their size above 1 (the states only when
// the whole stream ran).
func CheckSilero(c *SileroCase, s *SileroStream) (probDiff, stateDiff float64, err error) {
	for k, p := range s.Probs {
		if d := math.Abs(float64(p) - float64(c.Probs[k])); d > probDiff {
			probDiff = d
			if d > SileroTolerance && err == nil {
				err = fmt.Errorf("chunk %d: probability %.6f, ONNX Runtime %.6f", k, p, c.Probs[k])
			}
		}
	}
	if len(s.Probs) < c.Chunks {
		return probDiff, 0, err
	}
	for name, want := range c.FinalStates {
		got := s.FinalStates[name]
		if len(got) != len(want) {
			return probDiff, stateDiff, fmt.Errorf("final state %s has %d values, want %d", name, len(got), len(want))
		}
		for i := range want {
			if d := math.Abs(float64(got[i])-float64(want[i])) / max(1, math.Abs(float64(want[i]))); d > stateDiff {
				stateDiff = d
				if d > SileroTolerance && err == nil {
					err = fmt.Errorf("final state %s[%d] is %.6f, ONNX Runtime %.6f", name, i, got[i], want[i])
				}
			}
		}
	}
	return probDiff, stateDiff, err
}

// Silero streams every Silero case on device (chunks of each, 0 for all)
// with explicit states, and with stateful also through MAKE_STATEFUL,
// against ONNX Runtime's probabilities and states; only filters the cases
// by name (nil: all).
func Silero(t *testing.T, device string, chunks int, stateful bool, only func(name string) bool) {
	cases, err := SileroCases()
	if err != nil {
		t.Fatal(err)
	}
	core := driver.NewCore()
	t.Cleanup(func() { _ = core.Close() })
	for _, c := range cases {
		if only != nil && !only(c.Name) {
			continue
		}
		n := c.Chunks
		if chunks > 0 && chunks < n {
			n = chunks
		}
		modes := []bool{false}
		if stateful {
			modes = append(modes, true)
		}
		for _, st := range modes {
			name := c.Name
			if st {
				name += "/stateful"
			}
			t.Run(name, func(t *testing.T) {
				s, err := guarded(RealModelTimeout, func(ctx context.Context) (*SileroStream, error) {
					return StreamSilero(ctx, core, device, c, n, st, nil)
				})
				if err != nil {
					t.Fatalf("%s on %s: %v", c.Model, device, err)
				}
				pd, sd, err := CheckSilero(c, s)
				t.Logf("%s on %s, %d chunks: probabilities within %.2g, final states within %.2g (relative) of ONNX Runtime %s", c.Model, device, n, pd, sd, c.ORTVersion)
				if err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// SileroNestedIfs compiles the case's model (fixed input shapes) on device
// and counts, in its runtime model, the top-level If nodes and the If
// nodes left in the branch the case's sample rate takes (then for 16 kHz,
// else for 8 kHz): the nested Ifs decide on shapes only and fold at compile
// time, so the second count is 0.
func SileroNestedIfs(ctx context.Context, core *driver.Core, device string, c *SileroCase) (top, nested int, err error) {
	m, err := SileroModel(c)
	if err != nil {
		return 0, 0, err
	}
	cm, err := core.CompileModel(ctx, m, device, nil)
	if err != nil {
		return 0, 0, err
	}
	defer cm.Close()
	rm, err := cm.RuntimeModel()
	if err != nil {
		return 0, 0, err
	}
	nodes, err := rm.Nodes()
	if err != nil {
		return 0, 0, err
	}
	for _, n := range nodes {
		if n.OpType != graph.OpIf {
			continue
		}
		top++
		attr := graph.AttrThenBranch
		if c.SR != 16000 {
			attr = graph.AttrElseBranch
		}
		err = n.Attrs[attr].(*graph.Model).Walk(func(b *graph.Model, _ *graph.Node) error {
			bn, err := b.Nodes()
			for _, x := range bn {
				if x.OpType == graph.OpIf {
					nested++
				}
			}
			return err
		})
	}
	return top, nested, err
}

// SileroExportImport compiles the case's model on device, exports it,
// imports the blob and streams chunks chunks through the imported model
// (explicit states): what the model cache does with a model with bodies.
func SileroExportImport(ctx context.Context, core *driver.Core, device string, c *SileroCase, chunks int) (*SileroStream, error) {
	m, err := SileroModel(c)
	if err != nil {
		return nil, err
	}
	cm, err := core.CompileModel(ctx, m, device, nil)
	if err != nil {
		return nil, err
	}
	defer cm.Close()
	ex, ok := cm.(driver.Exporter)
	if !ok {
		return nil, fmt.Errorf("conformance: %s's compiled model does not export", device)
	}
	var blob bytes.Buffer
	if err := ex.Export(&blob); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	im, err := core.ImportModel(ctx, &blob, device, nil)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer im.Close()
	return StreamCompiled(ctx, im, c, chunks, false)
}

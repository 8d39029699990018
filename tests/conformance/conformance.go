package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// DataDir is where Debian's libonnx-testdata package installs the ONNX
// backend test suite. The environment variable CLINFER_ONNX_TESTDATA
// overrides it.
const DataDir = "/usr/share/libonnx-testdata/data"

// Dirs are the suite directories under DataDir that ONNXBackend walks, in
// order. (DataDir/real holds only download descriptors of large models.)
var Dirs = []string{"node", "pytorch-converted", "pytorch-operator", "simple"}

// DefaultCaseTimeout bounds one case (all its data sets). The environment
// variable CONFORMANCE_CASE_TIMEOUT (a time.Duration such as "2m")
// overrides it.
const DefaultCaseTimeout = time.Minute

// Outcome is how one backend-suite case ended.
type Outcome int

// Outcomes of a case.
const (
	// Passed: every output of every data set matched.
	Passed Outcome = iota
	// Failed: the case ran into an error or a mismatch.
	Failed
	// UnsupportedOp: the importer or the device reported an op outside the
	// op set (onnx.ErrUnsupportedOp or driver.ErrUnsupported).
	UnsupportedOp
	// Excluded: the case is listed in Exclusions and was not run.
	Excluded
	// UnsupportedType: the model or its test data uses a data type clinfer
	// has no element type for (string, uint32/64, sequence, optional or
	// map values): an error wrapping onnx.ErrUnsupportedType, when no op is
	// unsupported.
	UnsupportedType

	numOutcomes = iota
)

// String names the outcome as the summary table does.
func (o Outcome) String() string {
	switch o {
	case Passed:
		return "passed"
	case Failed:
		return "failed"
	case UnsupportedOp:
		return "unsupported-op"
	case Excluded:
		return "excluded"
	case UnsupportedType:
		return "unsupported-type"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// dataDir returns the suite root, honouring CLINFER_ONNX_TESTDATA.
func dataDir() string {
	if d := os.Getenv("CLINFER_ONNX_TESTDATA"); d != "" {
		return d
	}
	return DataDir
}

// caseTimeout returns the per-case time limit, honouring
// CONFORMANCE_CASE_TIMEOUT.
func caseTimeout(t *testing.T) time.Duration {
	s := os.Getenv("CONFORMANCE_CASE_TIMEOUT")
	if s == "" {
		return DefaultCaseTimeout
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("conformance: CONFORMANCE_CASE_TIMEOUT=%q is not a positive duration such as \"2m\"", s)
	}
	return d
}

// ONNXBackend runs the ONNX backend test suite (libonnx-testdata) on a
// device: one subtest per case, named "dir/case", then a "summary" subtest
// that logs passed / failed / unsupported-op / unsupported-type / excluded
// counts per directory and writes the same table to the file named by
// $CONFORMANCE_SUMMARY when that is set ("{device}" in it is replaced by
// the device name, so that several devices' suites keep their own) and
// every case's outcome to the file $CONFORMANCE_CASES names (EnvCases, for
// the op support matrix); when no -run filter left a case out, it also
// records every case's outcome for CheckParity. A case whose ops are all
// supported but which fails is a test failure. Each case runs under
// recover (a panic becomes a failure with its stack) and a time limit.
func ONNXBackend(t *testing.T, device string) {
	root := dataDir()
	if st, err := os.Stat(filepath.Join(root, Dirs[0])); err != nil || !st.IsDir() {
		t.Fatalf("libonnx-testdata not installed: run `make test` (or apt-get install libonnx-testdata); looked for %s", filepath.Join(root, Dirs[0]))
	}
	timeout := caseTimeout(t)
	core := driver.NewCore()
	t.Cleanup(func() {
		if err := core.Close(); err != nil {
			t.Errorf("conformance: closing the core: %v", err)
		}
	})
	sum := newSummary()
	seen := map[string]bool{}
	for _, dir := range Dirs {
		cases, err := listCases(filepath.Join(root, dir))
		if err != nil {
			t.Fatalf("conformance: %v", err)
		}
		t.Run(dir, func(t *testing.T) {
			for _, c := range cases {
				key := dir + "/" + c
				seen[key] = true
				t.Run(c, func(t *testing.T) {
					if reason, ok := Exclusions[key]; ok {
						sum.add(dir, key, Excluded, nil)
						t.Skipf("excluded from the suite (see tests/conformance/exclusions.go): %s", reason)
					}
					t.Parallel()
					out, err := runGuarded(core, device, filepath.Join(root, dir, c), timeout)
					sum.add(dir, key, out, err)
					switch out {
					case UnsupportedOp:
						t.Skipf("unsupported op: outside the op set (graph/optable.go) or without a %s kernel; add it to run this case: %v", device, err)
					case UnsupportedType:
						t.Skipf("unsupported data type: clinfer has no element type for it (tensor/types.go): %v", err)
					case Failed:
						t.Errorf("%s on %s: %v", key, device, err)
					}
				})
			}
		})
	}
	t.Run("summary", func(t *testing.T) {
		var stale []string
		for _, keys := range [][]string{slices.Collect(maps.Keys(Exclusions)), slices.Collect(maps.Keys(InputQuirks)), slices.Collect(maps.Keys(RandomOutputs))} {
			for _, k := range keys {
				if !seen[k] {
					stale = append(stale, k)
				}
			}
		}
		sort.Strings(stale)
		for _, k := range stale {
			t.Errorf("conformance: %q (an exclusion, input quirk or random-output case) names no case under %s; remove it from tests/conformance", k, root)
		}
		table := sum.table(device)
		t.Log("\n" + table)
		if cases := sum.outcomes(); len(cases) == len(seen) {
			record(device, cases) // every case ran: CheckParity can use it
		}
		if p := os.Getenv("CONFORMANCE_SUMMARY"); p != "" {
			p = strings.ReplaceAll(p, "{device}", device)
			if err := os.WriteFile(p, []byte(table+sum.details()), 0o644); err != nil {
				t.Errorf("conformance: writing $CONFORMANCE_SUMMARY: %v", err)
			}
		}
		if p := os.Getenv(EnvCases); p != "" {
			p = strings.ReplaceAll(p, "{device}", device)
			if err := WriteCases(p, sum.outcomes()); err != nil {
				t.Errorf("conformance: writing $%s: %v", EnvCases, err)
			}
		}
	})
}

// listCases returns the sorted names of the case directories (those with a
// model.onnx) under dir.
func listCases(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing cases: %w", err)
	}
	var cases []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "model.onnx")); err == nil {
			cases = append(cases, e.Name())
		}
	}
	sort.Strings(cases)
	if len(cases) == 0 {
		return nil, fmt.Errorf("no cases (dirs with model.onnx) under %s", dir)
	}
	return cases, nil
}

// runGuarded runs RunCase under guarded.
func runGuarded(core *driver.Core, device, caseDir string, timeout time.Duration) (Outcome, error) {
	out, err := guarded(timeout, func(ctx context.Context) (Outcome, error) {
		return RunCase(ctx, core, device, caseDir)
	})
	if err != nil && out == Passed {
		out = Failed
	}
	return out, err
}

// cancelGrace is how long guarded waits for a case to return after its
// context is cancelled.
var cancelGrace = 5 * time.Second

// guarded runs fn in its own goroutine under recover (a panic becomes an
// error carrying the stack) and a time limit. When fn overruns and does not
// return within a grace period after its context is cancelled, guarded
// reports the timeout and leaves the goroutine behind (it cannot be
// killed). fn must not touch a testing.T.
func guarded[T any](timeout time.Duration, fn func(ctx context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				var zero T
				done <- result{zero, fmt.Errorf("panic: %v\n%s", r, debug.Stack())}
			}
		}()
		v, err := fn(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
	}
	grace := cancelGrace
	select {
	case r := <-done:
		if r.err == nil {
			return r.v, fmt.Errorf("timed out after %v", timeout)
		}
		return r.v, fmt.Errorf("timed out after %v: %w", timeout, r.err)
	case <-time.After(grace):
		var zero T
		return zero, fmt.Errorf("timed out after %v and did not return within %v of cancellation (does Infer ignore ctx?)", timeout, grace)
	}
}

// RunCase runs one backend-suite case directory (model.onnx plus
// test_data_set_*/input_*.pb, output_*.pb) on a device and says how it
// ended. The error says at which stage (read, compile, bind, infer,
// compare) and on which data set a failure happened. An unsupported op
// (onnx.ErrUnsupportedOp, driver.ErrUnsupported) wins over an unsupported
// data type (onnx.ErrUnsupportedType): the importer checks op types first.
func RunCase(ctx context.Context, core *driver.Core, device, caseDir string) (Outcome, error) {
	m, err := onnx.ReadFile(filepath.Join(caseDir, "model.onnx"))
	if err != nil {
		if errors.Is(err, onnx.ErrUnsupportedOp) {
			return UnsupportedOp, err
		}
		if errors.Is(err, onnx.ErrUnsupportedType) {
			return UnsupportedType, err
		}
		return Failed, fmt.Errorf("read model: %w", err)
	}
	return RunModel(ctx, core, device, m, caseDir)
}

// RunModel runs model m, read from a backend-suite case by other means
// (another format, a transformed graph), on the case's data sets as
// RunCase runs the case's own model.
func RunModel(ctx context.Context, core *driver.Core, device string, m *graph.Model, caseDir string) (Outcome, error) {
	key := filepath.Base(filepath.Dir(caseDir)) + "/" + filepath.Base(caseDir)
	for _, p := range m.Parameters {
		if _, ok := InputQuirks[key][p.Name]; ok {
			p.Outputs[0].Shape = graph.DynamicRank
		}
	}
	if err := m.InferShapes(); err != nil {
		return Failed, fmt.Errorf("read model: %w", err)
	}
	cm, err := core.CompileModel(ctx, m, device, nil)
	if err != nil {
		if errors.Is(err, driver.ErrUnsupported) {
			return UnsupportedOp, err
		}
		return Failed, fmt.Errorf("compile: %w", err)
	}
	defer cm.Close()
	sets, err := filepath.Glob(filepath.Join(caseDir, "test_data_set_*"))
	if err != nil || len(sets) == 0 {
		return Failed, fmt.Errorf("no test_data_set_* in %s", caseDir)
	}
	sort.Strings(sets)
	check := RandomOutputs[key]
	for _, set := range sets {
		if err := runDataSet(ctx, cm, set, check); err != nil {
			if errors.Is(err, errDataType) {
				return UnsupportedType, fmt.Errorf("%s: %w", filepath.Base(set), err)
			}
			return Failed, fmt.Errorf("%s: %w", filepath.Base(set), err)
		}
	}
	return Passed, nil
}

// errDataType marks a data set whose tensors have a data type clinfer
// lacks (the model itself imported).
var errDataType = errors.New("conformance: test data has an unsupported data type")

// runDataSet binds one data set's inputs, runs one inference and compares
// every output, or, for a case with random outputs, runs check on them.
func runDataSet(ctx context.Context, cm driver.CompiledModel, set string, check RandomCheck) error {
	inPorts, outPorts := portNames(cm.Inputs()), portNames(cm.Outputs())
	ins, inNames, err := readTensors(set, "input", cm.Inputs())
	if err != nil {
		return dataErr("read inputs", err)
	}
	wants, outNames, err := readTensors(set, "output", cm.Outputs())
	if err != nil {
		return dataErr("read outputs", err)
	}
	req, err := cm.CreateInferRequest()
	if err != nil {
		return fmt.Errorf("create request: %w", err)
	}
	defer req.Close()
	for i, x := range ins {
		name, err := pickName(inNames[i], i, inPorts)
		if err != nil {
			return fmt.Errorf("bind input_%d.pb: %w", i, err)
		}
		if err := req.SetTensor(name, x); err != nil {
			return fmt.Errorf("bind input_%d.pb (%s %v) to %q: %w", i, x.Type(), x.Shape(), name, err)
		}
	}
	if err := req.Infer(ctx); err != nil {
		return fmt.Errorf("infer: %w", err)
	}
	if check != nil {
		got := make([]*tensor.Tensor, len(wants))
		for i := range wants {
			name, err := pickName(outNames[i], i, outPorts)
			if err != nil {
				return fmt.Errorf("output_%d.pb: %w", i, err)
			}
			if got[i], err = req.Tensor(name); err != nil {
				return fmt.Errorf("output %q: %w", name, err)
			}
		}
		if err := check(ins, got, wants); err != nil {
			return fmt.Errorf("random outputs: %w", err)
		}
		return nil
	}
	var errs []error
	for i, want := range wants {
		name, err := pickName(outNames[i], i, outPorts)
		if err != nil {
			errs = append(errs, fmt.Errorf("output_%d.pb: %w", i, err))
			continue
		}
		got, err := req.Tensor(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("output %q: %w", name, err))
			continue
		}
		if err := Compare(got, want, DefaultTolerance(want.Type())); err != nil {
			errs = append(errs, fmt.Errorf("compare output %q: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// dataErr wraps an error reading test data, marking it with errDataType
// when it is about a data type clinfer lacks.
func dataErr(what string, err error) error {
	if errors.Is(err, onnx.ErrUnsupportedType) {
		return fmt.Errorf("%s: %w: %w", what, errDataType, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// readTensors reads set/<kind>_0.pb, <kind>_1.pb, ... until one is
// missing. ports are the model's ports of that kind: a file holds the
// value of the port of its name, else of its position, and is read as that
// port's kind of value (a tensor, sequence or optional); see bf16Bits.
func readTensors(set, kind string, ports []driver.PortInfo) ([]*tensor.Tensor, []string, error) {
	var ts []*tensor.Tensor
	var names []string
	for i := 0; ; i++ {
		p := filepath.Join(set, fmt.Sprintf("%s_%d.pb", kind, i))
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			break
		}
		x, name, err := readValue(p, i, ports)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		ts = append(ts, x)
		names = append(names, name)
	}
	return ts, names, nil
}

// readValue reads the value file p, the i-th of its kind, as the kind of
// value its port takes: the port at position i, or the port its name
// names when that one differs.
func readValue(p string, i int, ports []driver.PortInfo) (*tensor.Tensor, string, error) {
	port := driver.PortInfo{}
	if i < len(ports) {
		port = ports[i]
	}
	x, name, err := onnx.ReadValueFile(p, port.Kind, port.Type)
	for _, q := range ports {
		if name != "" && q.Name == name && q.Name != port.Name {
			if q.Kind != port.Kind {
				x, name, err = onnx.ReadValueFile(p, q.Kind, q.Type)
			}
			port = q
		}
	}
	if err != nil {
		return nil, "", err
	}
	return bf16Bits(x, port), name, nil
}

// bf16Bits works around a quirk of the ONNX 1.12 test data: the bfloat16
// Cast/CastLike cases store their bfloat16 tensors as UINT16 tensors
// holding the bfloat16 bits. When x is such a u16 tensor and its port is
// bf16, it returns the same bits as a bf16 tensor.
func bf16Bits(x *tensor.Tensor, port driver.PortInfo) *tensor.Tensor {
	if x.Kind() != tensor.KindTensor || x.Type() != tensor.U16 || port.Type != tensor.BF16 {
		return x
	}
	b, err := tensor.FromBytes(tensor.BF16, x.Shape(), x.Contiguous().Bytes())
	if err != nil {
		return x
	}
	return b
}

func portNames(ps []driver.PortInfo) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}

// pickName returns the port a data file binds to: the port of the file's
// tensor name when there is one, else the i-th port.
func pickName(name string, i int, ports []string) (string, error) {
	for _, p := range ports {
		if name != "" && p == name {
			return p, nil
		}
	}
	if i < len(ports) {
		return ports[i], nil
	}
	return "", fmt.Errorf("tensor %q (#%d) matches none of the ports %q", name, i, ports)
}

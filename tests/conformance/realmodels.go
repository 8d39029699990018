package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/clinfer/clinfer/internal/npy"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// RealModelTolerance is the tolerance of real-model outputs against ONNX
// Runtime's: whole networks accumulate more rounding than single ops.
var RealModelTolerance = Tolerance{Abs: 1e-4, Rel: 1e-3}

// RealModelTimeout bounds one real-model case (compile and one inference).
const RealModelTimeout = 5 * time.Minute

// RealCase is one tests/testdata/realmodels/<case>/case.json: a model from
// the model cache, how to regenerate its inputs, and the reference outputs
// ONNX Runtime produced for them (written by `make refs`).
type RealCase struct {
	// Model is the file name under the model cache.
	Model string `json:"model"`
	// Inputs describes every model input.
	Inputs []RealInput `json:"inputs"`
	// Outputs names the checked outputs and their reference .npy files.
	Outputs []RealOutput `json:"outputs"`
	// ORTVersion is the ONNX Runtime version that made the references.
	ORTVersion string `json:"ort_version"`
}

// RealInput is one input, filled with seeded.Float32s(Seed, n, Lo, Hi).
type RealInput struct {
	Name  string  `json:"name"`
	Type  string  `json:"type"`
	Shape []int64 `json:"shape"`
	Seed  uint32  `json:"seed"`
	Lo    float32 `json:"lo"`
	Hi    float32 `json:"hi"`
}

// RealOutput is one output and the .npy file (relative to case.json) that
// holds ONNX Runtime's value for it.
type RealOutput struct {
	Name  string  `json:"name"`
	File  string  `json:"file"`
	Type  string  `json:"type"`
	Shape []int64 `json:"shape"`
}

// RepoRoot returns the root of the clinfer checkout (the directory whose
// go.mod declares the module), searching upwards from the working
// directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/clinfer/clinfer\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("conformance: no go.mod of github.com/clinfer/clinfer above the working directory")
		}
		dir = parent
	}
}

// ModelsDir returns the model cache: $CLINFER_MODELS, or .cache/models
// under the repository root.
func ModelsDir() (string, error) {
	if d := os.Getenv("CLINFER_MODELS"); d != "" {
		return d, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".cache", "models"), nil
}

// ModelPath returns the path of a cached model, or an error that says to
// run `make models` when it is missing.
func ModelPath(name string) (string, error) {
	dir, err := ModelsDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		if Omitted(dir, name) {
			return "", fmt.Errorf("conformance: model %s was left out of the device bundle for its size (listed in %s): run this test from a checkout after `make models`: %w",
				name, filepath.Join(dir, omittedFile), ErrOmitted)
		}
		return "", fmt.Errorf("conformance: model %s not found in %s: run `make models` (or set CLINFER_MODELS): %w", name, dir, err)
	}
	return p, nil
}

// omittedFile, in a models directory, lists the models the device bundle
// leaves out for their size (scripts/devicebundle/build.sh), one per line.
const omittedFile = "OMITTED"

// ErrOmitted is wrapped by ModelPath's error for a model the device bundle
// left out; tests skip on it (SkipOmitted) instead of failing.
var ErrOmitted = errors.New("model omitted from the device bundle")

// Omitted reports whether the models directory dir lists name as left out.
func Omitted(dir, name string) bool {
	b, err := os.ReadFile(filepath.Join(dir, omittedFile))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == name {
			return true
		}
	}
	return false
}

// SkipOmitted skips t when err says the device bundle left its model out,
// and does nothing otherwise.
func SkipOmitted(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrOmitted) {
		t.Skip(err.Error())
	}
}

// ReadRealCase reads and checks a case.json.
func ReadRealCase(path string) (*RealCase, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c RealCase
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("conformance: %s: %w", path, err)
	}
	if c.Model == "" || len(c.Inputs) == 0 || len(c.Outputs) == 0 {
		return nil, fmt.Errorf("conformance: %s: needs model, inputs and outputs", path)
	}
	return &c, nil
}

// Tensor makes the input's tensor from its seed.
func (in RealInput) Tensor() (*tensor.Tensor, error) {
	shape := tensor.Shape(in.Shape)
	if err := shape.Validate(); err != nil {
		return nil, fmt.Errorf("conformance: input %q: %w", in.Name, err)
	}
	et, err := tensor.ParseElementType(in.Type)
	if err != nil {
		return nil, fmt.Errorf("conformance: input %q: %w", in.Name, err)
	}
	v := seeded.Float32s(in.Seed, int(shape.NumElements()), in.Lo, in.Hi)
	if et == tensor.F32 {
		return tensor.FromF32(shape, v)
	}
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	return tensor.FromFloat64s(et, shape, f)
}

// OutputReport is the comparison of one real-model output.
type OutputReport struct {
	Name       string
	MaxAbsDiff float64
	Err        error // nil when within RealModelTolerance
}

// RunRealCase compiles the case's model on a device, runs it once on the
// case's inputs and compares every listed output with its reference file.
// The returned error is about running the case; mismatches are in the
// reports.
func RunRealCase(ctx context.Context, core *driver.Core, device, caseDir string, c *RealCase) ([]OutputReport, error) {
	path, err := ModelPath(c.Model)
	if err != nil {
		return nil, err
	}
	m, err := onnx.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read model: %w", err)
	}
	cm, err := core.CompileModel(ctx, m, device, nil)
	if err != nil {
		return nil, fmt.Errorf("compile %s on %s: %w", c.Model, device, err)
	}
	defer cm.Close()
	req, err := cm.CreateInferRequest()
	if err != nil {
		return nil, fmt.Errorf("create request: %w", err)
	}
	defer req.Close()
	for _, in := range c.Inputs {
		x, err := in.Tensor()
		if err != nil {
			return nil, err
		}
		if err := req.SetTensor(in.Name, x); err != nil {
			return nil, fmt.Errorf("bind input %q: %w", in.Name, err)
		}
	}
	if err := req.Infer(ctx); err != nil {
		return nil, fmt.Errorf("infer: %w", err)
	}
	var reps []OutputReport
	for _, out := range c.Outputs {
		want, err := npy.ReadFile(filepath.Join(caseDir, out.File))
		if err != nil {
			return nil, fmt.Errorf("read reference %s: %w", out.File, err)
		}
		if out.Shape != nil && !want.Shape().Equal(tensor.Shape(out.Shape)) {
			return nil, fmt.Errorf("reference %s has shape %v but case.json says %v: run `make refs`", out.File, want.Shape(), out.Shape)
		}
		got, err := req.Tensor(out.Name)
		if err != nil {
			return nil, fmt.Errorf("output %q: %w", out.Name, err)
		}
		rep := OutputReport{Name: out.Name}
		rep.MaxAbsDiff, rep.Err = MaxAbsDiff(got, want)
		if rep.Err == nil {
			rep.Err = Compare(got, want, RealModelTolerance)
		}
		reps = append(reps, rep)
	}
	return reps, nil
}

// RealModels runs every case under tests/testdata/realmodels on a device,
// one subtest per case, logging the largest absolute difference of every
// output and failing outputs outside RealModelTolerance. A missing model is
// a failure that says to run `make models`.
func RealModels(t *testing.T, device string) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	casesDir := filepath.Join(root, "tests", "testdata", "realmodels")
	files, err := filepath.Glob(filepath.Join(casesDir, "*", "case.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no real-model cases (*/case.json) under %s: run `make refs`", casesDir)
	}
	sort.Strings(files)
	core := driver.NewCore()
	t.Cleanup(func() {
		if err := core.Close(); err != nil {
			t.Errorf("conformance: closing the core: %v", err)
		}
	})
	for _, f := range files {
		caseDir := filepath.Dir(f)
		t.Run(filepath.Base(caseDir), func(t *testing.T) {
			c, err := ReadRealCase(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ModelPath(c.Model); err != nil {
				SkipOmitted(t, err)
				t.Fatal(err)
			}
			reps, err := guarded(RealModelTimeout, func(ctx context.Context) ([]OutputReport, error) {
				return RunRealCase(ctx, core, device, caseDir, c)
			})
			if err != nil {
				t.Fatalf("%s on %s: %v", c.Model, device, err)
			}
			for _, r := range reps {
				t.Logf("%s output %q: max abs diff %.3g", c.Model, r.Name, r.MaxAbsDiff)
				if r.Err != nil {
					t.Errorf("%s output %q on %s: %v", c.Model, r.Name, device, r.Err)
				}
			}
		})
	}
}

package tests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/graph"
)

// moduleRoot returns the repository root (this package's parent), or skips
// a test that reads the sources when they are not there (the device bundle
// runs this package's binary without them).
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Skipf("no source tree above %s (%v): run `go test ./tests/` in a checkout", root, err)
	}
	return root
}

// goTool returns the go command, or skips saying how to get one.
func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); runtime.GOROOT() != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("no go command on PATH: install Go (make deps checks for it) to check the package graph")
	return ""
}

// goRun runs the go command in the module root and returns its output.
func goRun(t *testing.T, args ...string) string {
	t.Helper()
	root := moduleRoot(t)
	cmd := exec.Command(goTool(t), args...)
	cmd.Dir = root
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	require.NoError(t, cmd.Run(), "go %s:\n%s", strings.Join(args, " "), stderr.String())
	return out.String()
}

// TestPackageDeps checks the layering: kernels imports nothing of clinfer
// (the engine builds on it, not it on the engine), the GPU device does
// not import the CPU device (it evaluates on the host through
// cpu_fallback/ref), devices build on plugin/driver and not on the user
// API in plugin, and the root package registers every device.
func TestPackageDeps(t *testing.T) {
	const mod = "github.com/clinfer/clinfer"
	deps := func(pkg string) []string {
		var own []string
		for _, p := range strings.Fields(goRun(t, "list", "-deps", "-f", "{{.ImportPath}}", pkg)) {
			if strings.HasPrefix(p, mod+"/") || p == mod {
				own = append(own, p)
			}
		}
		return own
	}
	assert.Equal(t, []string{mod + "/kernels"}, deps("./kernels"), "kernels must import nothing of clinfer")
	gpu := deps("./clbackend")
	assert.NotContains(t, gpu, mod+"/cpu_fallback", "the GPU device must not import the CPU device")
	assert.Contains(t, gpu, mod+"/cpu_fallback/ref", "the GPU device folds on the host with the reference kernels")

	// The user API and the implementer API are split as database/sql and
	// database/sql/driver: devices build on plugin/driver only, plugin
	// imports no device, and the root package registers every device.
	for _, dev := range []string{"./cpu_fallback", "./cpu_fallback/ref", "./clbackend", "./hetero", "./auto", "./batch", "./internal/virtual", "./fusion"} {
		d := deps(dev)
		assert.NotContains(t, d, mod+"/plugin", "%s must build on plugin/driver, not on the user API", dev)
		assert.Contains(t, d, mod+"/plugin/driver", dev)
	}
	user := deps("./plugin")
	for _, dev := range []string{"/cpu_fallback", "/clbackend", "/hetero", "/auto", "/batch"} {
		assert.NotContains(t, user, mod+dev, "the user API must not import a device")
	}
	assert.Subset(t, deps("."), []string{mod + "/cpu_fallback", mod + "/clbackend", mod + "/hetero", mod + "/auto", mod + "/batch", mod + "/plugin"}, "the root package registers every device")
}

// TestGPUOnlyProgram builds and runs a program that imports only the GPU
// device (tests/testdata/gpuonly) in a subprocess: driver.Devices() there
// lists "GPU" and not "CPU".
func TestGPUOnlyProgram(t *testing.T) {
	out := goRun(t, "run", "./tests/testdata/gpuonly")
	assert.Equal(t, []string{"GPU"}, strings.Fields(out))
}

// TestOpTableImplemented checks that every op of graph's op set runs on
// both devices: it has a CPU kernel, and a GPU lowering or a GPU entry that
// says why it runs on the host (folded at plan time, or in a host part of
// the model: strings, sequences, optionals).
func TestOpTableImplemented(t *testing.T) {
	gpu := clbackend.Ops()
	for _, op := range graph.OpTypes() {
		if s, _ := graph.Lookup(op); s.Family == graph.FamilyModel {
			continue // Parameter, Constant, Result: the planners' own
		}
		_, cpu := ref.Lookup(op)
		assert.True(t, cpu, "op %s has no CPU kernel: add it to cpu_fallback/ref/ops_<family>.go", op)
		g, ok := gpu[op]
		assert.True(t, ok && (g.Kernels || g.Host != "" || g.HostPart != ""), "op %s has neither a GPU lowering nor an entry saying why not: add it to the table in clbackend/lower.go", op)
	}
}

// familyFiles are where an op family's code is in each package.
var familyFiles = []struct{ dir, prefix, ext string }{
	{"graph", "ops_", ".go"}, {"cpu_fallback/ref", "ops_", ".go"}, {"clbackend", "lower_", ".go"}, {"onnx", "ops_", ".go"}, {"ir", "ops_", ".go"},
	{"kernels", "", ".cl"},
}

// generatedFile matches Go's marker of a generated file
// (https://go.dev/s/generatedcode).
var generatedFile = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// TestFamilyFiles checks the layout that makes "where is op X?" a question
// of file names: in graph, cpu_fallback/ref, clbackend and onnx every
// ops_*.go (lower_*.go), and every OpenCL file kernels/*.cl, is named by an
// op family (graph.Families), with an optional detail after it; graph has a file for every family, the CPU
// reference and the GPU one for every family they run; no file is named
// *_more*, *_misc* or *_util*, and no Go file other than a test or a
// generated file is over 600 lines.
func TestFamilyFiles(t *testing.T) {
	root := moduleRoot(t)
	fams := map[string]bool{}
	for _, f := range graph.Families() {
		fams[string(f)] = true
	}
	have := map[string]map[string]bool{} // dir -> families with a file
	for _, d := range familyFiles {
		have[d.dir] = map[string]bool{}
		files, err := filepath.Glob(filepath.Join(root, d.dir, d.prefix+"*"+d.ext))
		require.NoError(t, err)
		for _, f := range files {
			name := filepath.Base(f)
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			fam, _, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(name, d.prefix), d.ext), "_")
			assert.True(t, fams[fam], "%s/%s is not named by an op family (%s<family>[_detail]%s; families: %v)", d.dir, name, d.prefix, d.ext, graph.Families())
			have[d.dir][fam] = true
		}
	}
	gpu := clbackend.Ops()
	for _, op := range graph.OpTypes() {
		s, _ := graph.Lookup(op)
		if s.Family == graph.FamilyModel {
			continue
		}
		f := string(s.Family)
		assert.True(t, have["graph"][f], "op %s: no graph/ops_%s.go", op, f)
		if _, ok := ref.Lookup(op); ok {
			assert.True(t, have["cpu_fallback/ref"][f], "op %s: no cpu_fallback/ref/ops_%s.go", op, f)
		}
		if gpu[op].Kernels {
			assert.True(t, have["clbackend"][f], "op %s: no clbackend/lower_%s.go", op, f)
		}
	}
	err := filepath.WalkDir(root, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if e.IsDir() {
			if rel != "." && (strings.HasPrefix(e.Name(), ".") || e.Name() == "clinfer-out" || e.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		base := strings.ToLower(e.Name())
		for _, bad := range []string{"_more", "_misc", "_util"} {
			assert.NotContains(t, base, bad, "%s: a file is named by what it holds, not %q", rel, bad)
		}
		if strings.HasSuffix(base, ".go") && !strings.HasSuffix(base, "_test.go") {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			if generatedFile.Match(b) {
				return nil // protoc's or stringer's output is split by its source, not by hand
			}
			lines := bytes.Count(b, []byte("\n"))
			assert.LessOrEqual(t, lines, 600, "%s has %d lines: split it by concern", rel, lines)
		}
		return nil
	})
	require.NoError(t, err)
}

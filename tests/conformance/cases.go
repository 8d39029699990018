package conformance

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/clinfer/clinfer/onnx"
)

// EnvCases names the environment variable that makes ONNXBackend write
// every case's outcome to a file ("{device}" in the path is replaced by
// the device name): one line "dir/case<TAB>outcome" per case, sorted. The
// op support matrix (cmd/ops, make ops) counts the passing cases per op
// from these files.
const EnvCases = "CONFORMANCE_CASES"

// WriteCases writes the outcome of every case to path in the format
// EnvCases describes.
func WriteCases(path string, cases map[string]Outcome) error {
	keys := make([]string, 0, len(cases))
	for k := range cases {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s\t%s\n", k, cases[k])
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		return fmt.Errorf("conformance: writing the case outcomes: %w", err)
	}
	return nil
}

// ReadCases reads a file WriteCases wrote. A line that is not "dir/case
// <TAB>outcome" with a known outcome is an error naming the file and line.
func ReadCases(path string) (map[string]Outcome, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("conformance: reading the case outcomes: %w", err)
	}
	defer f.Close()
	byName := map[string]Outcome{}
	for o := Passed; o < numOutcomes; o++ {
		byName[o.String()] = o
	}
	out := map[string]Outcome{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		key, name, ok := strings.Cut(sc.Text(), "\t")
		o, known := byName[name]
		if !ok || !known || !strings.Contains(key, "/") {
			return nil, fmt.Errorf("conformance: %s:%d: %q is not \"dir/case<TAB>outcome\"", path, line, sc.Text())
		}
		out[key] = o
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("conformance: reading %s: %w", path, err)
	}
	return out, nil
}

// CaseOps returns the op types of the op set (graph's) that the model of
// case key ("node/test_relu") has once imported, sorted. A model the
// frontend cannot import has none; that is not an error.
func CaseOps(key string) ([]string, error) {
	path := filepath.Join(dataDir(), filepath.FromSlash(key), "model.onnx")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("conformance: case %s: %w", key, err)
	}
	m, err := onnx.ReadFile(path)
	if err != nil {
		return nil, nil
	}
	nodes, err := m.Nodes()
	if err != nil {
		return nil, fmt.Errorf("conformance: case %s: %w", key, err)
	}
	seen := map[string]bool{}
	var ops []string
	for _, n := range nodes {
		if !seen[n.OpType] {
			seen[n.OpType] = true
			ops = append(ops, n.OpType)
		}
	}
	sort.Strings(ops)
	return ops, nil
}

// CaseDirs lists every case of the suite, in the order ONNXBackend runs
// them: its "dir/case" key and its directory. It is an error when the
// suite is not installed.
func CaseDirs() (keys, dirs []string, err error) {
	root := dataDir()
	for _, dir := range Dirs {
		cases, err := listCases(filepath.Join(root, dir))
		if err != nil {
			return nil, nil, fmt.Errorf("conformance: %w (libonnx-testdata not installed? run `make deps`)", err)
		}
		for _, c := range cases {
			keys = append(keys, dir+"/"+c)
			dirs = append(dirs, filepath.Join(root, dir, c))
		}
	}
	return keys, dirs, nil
}

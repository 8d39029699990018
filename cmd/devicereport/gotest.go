package main

import (
	"bufio"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// resultRe matches a test result line of `go test -v` output (any depth).
var resultRe = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)`)

// testResults are the outcomes `go test -v` printed, by test name.
type testResults map[string]string

// parseTestOutput reads the result lines of a `go test -v` run.
func parseTestOutput(out string) testResults {
	res := testResults{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if m := resultRe.FindStringSubmatch(sc.Text()); m != nil {
			res[m[2]] = m[1]
		}
	}
	return res
}

// leaves returns the names of the tests that have no subtests, sorted.
func (r testResults) leaves() []string {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for i, n := range names {
		// Sorted: a subtest "n/x" follows n; "n-x" or "n.x" may sit
		// between them, so look ahead past siblings sharing the prefix.
		parent := false
		for _, m := range names[i+1:] {
			if !strings.HasPrefix(m, n) {
				break
			}
			if strings.HasPrefix(m, n+"/") {
				parent = true
				break
			}
		}
		if !parent {
			out = append(out, n)
		}
	}
	return out
}

// counts returns the number of passed, failed and skipped leaf tests and
// the failed ones' names.
func (r testResults) counts() (passed, failed, skipped int, failing []string) {
	for _, n := range r.leaves() {
		switch r[n] {
		case "PASS":
			passed++
		case "FAIL":
			failed++
			failing = append(failing, n)
		case "SKIP":
			skipped++
		}
	}
	return passed, failed, skipped, failing
}

// benchRe matches a benchmark result line: name, iterations, then value
// and unit pairs.
var benchRe = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)

// parseBench returns, for each benchmark name (without the -GOMAXPROCS
// suffix), its metrics by unit ("ns/op", "gflops", "GB/s").
func parseBench(out string) map[string]map[string]float64 {
	res := map[string]map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := benchRe.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		f := strings.Fields(m[3])
		metrics := map[string]float64{}
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			metrics[f[i+1]] = v
		}
		res[m[1]] = metrics
	}
	return res
}

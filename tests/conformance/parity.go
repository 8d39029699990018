package conformance

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// runs records, per device, the outcome of every case of the last
// ONNXBackend run in this process that reached its summary with every case
// run (no -run filter left cases out), so that the pass lists of two
// devices can be compared after both ran without running the suite again.
var runs = struct {
	sync.Mutex
	byDevice map[string]map[string]Outcome
}{byDevice: map[string]map[string]Outcome{}}

// record keeps the outcomes of a complete run on device.
func record(device string, cases map[string]Outcome) {
	runs.Lock()
	defer runs.Unlock()
	runs.byDevice[device] = cases
}

// recorded returns the outcomes of device's complete run (nil if none).
func recorded(device string) map[string]Outcome {
	runs.Lock()
	defer runs.Unlock()
	return runs.byDevice[device]
}

// ParityError lists the backend-suite cases that pass on one device and
// not on the other.
type ParityError struct {
	// Want and Got are the devices compared: Want is the reference.
	Want, Got string
	// Missing are the cases that pass on Want and not on Got, each with
	// Got's outcome; Extra those that pass on Got and not on Want.
	Missing, Extra []string
}

// Error lists the differing cases.
func (e *ParityError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "conformance: the ONNX backend pass lists of %s and %s differ", e.Want, e.Got)
	if len(e.Missing) > 0 {
		fmt.Fprintf(&b, "\n%d case(s) pass on %s and not on %s:\n  %s", len(e.Missing), e.Want, e.Got, strings.Join(e.Missing, "\n  "))
	}
	if len(e.Extra) > 0 {
		fmt.Fprintf(&b, "\n%d case(s) pass on %s and not on %s:\n  %s", len(e.Extra), e.Got, e.Want, strings.Join(e.Extra, "\n  "))
	}
	return b.String()
}

// CheckParity compares the pass lists of the complete ONNXBackend runs of
// devices want and got in this process (a test binary's TestMain calls it
// after m.Run). It returns a *ParityError when they differ; compared is
// false, with a nil error, when either device has no complete run (its
// suite was not selected by -run, or is not built).
func CheckParity(want, got string) (compared bool, err error) {
	w, g := recorded(want), recorded(got)
	if w == nil || g == nil {
		return false, nil
	}
	return true, parity(want, got, w, g)
}

// parity compares two devices' outcomes.
func parity(want, got string, w, g map[string]Outcome) error {
	e := &ParityError{Want: want, Got: got}
	passed := func(m map[string]Outcome, c string) bool {
		o, ok := m[c] // Passed is the zero Outcome: a missing case is not a pass
		return ok && o == Passed
	}
	for c := range w {
		if passed(w, c) && !passed(g, c) {
			e.Missing = append(e.Missing, fmt.Sprintf("%s (%s)", c, outcomeOf(g, c)))
		}
	}
	for c := range g {
		if passed(g, c) && !passed(w, c) {
			e.Extra = append(e.Extra, fmt.Sprintf("%s (%s on %s)", c, outcomeOf(w, c), want))
		}
	}
	if len(e.Missing) == 0 && len(e.Extra) == 0 {
		return nil
	}
	sort.Strings(e.Missing)
	sort.Strings(e.Extra)
	return e
}

// outcomeOf names c's outcome in m ("not run" when m lacks it).
func outcomeOf(m map[string]Outcome, c string) string {
	if o, ok := m[c]; ok {
		return o.String()
	}
	return "not run"
}

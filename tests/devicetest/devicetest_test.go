package devicetest_test

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/plugin/driver/drivertest"
	"github.com/clinfer/clinfer/tests/devicetest"
)

func fake(faults drivertest.Faults) devicetest.NewPlugin {
	return func(t *testing.T) driver.Plugin { return drivertest.New("FAKE", faults) }
}

// TestFakeDevice: a correct device passes the whole suite.
func TestFakeDevice(t *testing.T) {
	devicetest.Run(t, fake(drivertest.Faults{}))
}

// faults are the deliberate bugs the suite must catch, with the subtest
// that catches each.
var faults = map[string]struct {
	faults  drivertest.Faults
	catches string
}{
	"ModifyInput":        {drivertest.Faults{ModifyInput: true}, "InferLeavesInputAlone"},
	"AcceptAnyStreams":   {drivertest.Faults{AcceptAnyStreams: true}, "NegativeStreams"},
	"PartialSet":         {drivertest.Faults{PartialSet: true}, "FailedSetIsAtomic"},
	"IgnoreCompileProps": {drivertest.Faults{IgnoreCompileProps: true}, "CompileProperties"},
	"NoProfiling":        {drivertest.Faults{NoProfiling: true}, "Profiling/YES"},
	"SkipShapeCheck":     {drivertest.Faults{SkipShapeCheck: true}, "WrongShape"},
}

const faultEnv = "DEVICETEST_FAULT"

// TestFaultyDevice runs the suite on a faulty fake; it is the subprocess
// of TestSuiteCatchesFaults and expected to fail there.
func TestFaultyDevice(t *testing.T) {
	name := os.Getenv(faultEnv)
	if name == "" {
		t.Skip("helper of TestSuiteCatchesFaults: runs only in its subprocess, with " + faultEnv + " set")
	}
	f, ok := faults[name]
	require.True(t, ok, "unknown fault %q", name)
	devicetest.Run(t, fake(f.faults))
}

// TestSuiteCatchesFaults shows the suite can fail: each deliberate bug of
// the fake makes the subtest meant to catch it fail.
func TestSuiteCatchesFaults(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	for name, f := range faults {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(exe, "-test.run=^TestFaultyDevice$", "-test.v")
			cmd.Env = append(os.Environ(), faultEnv+"="+name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "the suite passed a device with fault %s:\n%s", name, out)
			assert.Contains(t, string(out), "--- FAIL: TestFaultyDevice/", "output:\n%s", out)
			assert.Regexp(t, `--- FAIL: TestFaultyDevice/\S*`+f.catches, string(out), "subtest %s should fail", f.catches)
		})
	}
}

package devicetest

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/plugin/driver"
)

// FirstUseRounds is the number of fresh processes FirstUse starts.
const FirstUseRounds = 8

// FirstUsers is the number of plugins each of FirstUse's processes
// constructs and uses at once.
const FirstUsers = 8

// freshTimeout bounds one of InFreshProcesses' processes: a hang fails
// the round instead of the parent's whole binary.
const freshTimeout = 2 * time.Minute

// freshEnv names the test a re-executed test binary runs as the child of
// InFreshProcesses.
const freshEnv = "DEVICETEST_FRESH_PROCESS"

// InFreshProcesses runs child in rounds fresh processes, one after
// another: the test binary re-executes itself with -test.run selecting
// only the calling test, and there InFreshProcesses calls child instead.
// What a process does only once (the first use of a driver) is then
// exercised rounds times. The child may start parallel subtests; they run
// FirstUsers at a time. The test fails when a process fails or crashes
// (its output is in the message) or when the child did not run.
func InFreshProcesses(t *testing.T, rounds int, child func(t *testing.T)) {
	t.Helper()
	if os.Getenv(freshEnv) == t.Name() {
		child(t)
		return
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	var parts []string
	for _, p := range strings.Split(t.Name(), "/") {
		parts = append(parts, "^"+regexp.QuoteMeta(p)+"$")
	}
	for round := range rounds {
		cmd := exec.Command(exe, "-test.run="+strings.Join(parts, "/"), "-test.v", "-test.count=1",
			"-test.parallel="+strconv.Itoa(FirstUsers), "-test.timeout="+freshTimeout.String())
		cmd.Env = append(os.Environ(), freshEnv+"="+t.Name())
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			require.Failf(t, "a fresh process failed", "round %d of %d: %v\n%s", round+1, rounds, err, out)
		}
		require.NoError(t, err, "round %d: starting %s", round+1, exe)
		require.Contains(t, string(out), "--- PASS: "+t.Name()+" ", "round %d: the child did not run:\n%s", round+1, out)
	}
}

// FirstUse constructs FirstUsers plugins at once in a fresh process and
// uses each (a property, a compile, an inference) at once, FirstUseRounds
// times: the first use of a driver from many goroutines (many Cores, or
// HETERO and AUTO beside the GPU, which hold Cores of their own) must
// neither crash nor fail.
func FirstUse(t *testing.T, newPlugin NewPlugin) {
	InFreshProcesses(t, FirstUseRounds, func(t *testing.T) {
		for i := range FirstUsers {
			t.Run(strconv.Itoa(i), func(t *testing.T) {
				t.Parallel()
				p := open(t, newPlugin)
				name, err := p.Property(driver.KeyFullDeviceName)
				require.NoError(t, err)
				assert.NotEmpty(t, name, driver.KeyFullDeviceName)
				cm, relu := compile(t, p, nil)
				r, err := cm.CreateInferRequest()
				require.NoError(t, err)
				t.Cleanup(func() { assert.NoError(t, r.Close()) })
				x := loadInput(70 + i)
				require.NoError(t, r.SetTensor(InputName, x))
				require.NoError(t, r.Infer(t.Context()))
				checkOutput(t, r, x, relu, "first use")
			})
		}
	})
}

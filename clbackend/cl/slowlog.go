package cl

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// EnvSlowCalls names the environment variable that makes the binding log
// every OpenCL call slower than its value (a Go duration such as "20ms") to
// standard error, with the call's name and, for program builds, the
// options. It is the first thing to set when a driver is unexpectedly slow:
// it tells a slow compiler from a slow queue without a profiler.
const EnvSlowCalls = "CLINFER_CL_SLOW"

// slowThreshold is EnvSlowCalls parsed once; 0 turns the log off.
var slowThreshold = sync.OnceValue(func() time.Duration {
	v := os.Getenv(EnvSlowCalls)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		fmt.Fprintf(os.Stderr, "cl: %s=%q is not a duration such as \"20ms\"; slow-call log off\n", EnvSlowCalls, v)
		return 0
	}
	return d
})

// logSlow logs op when it began at start and took at least the threshold.
// detail, when not nil, adds what identifies the call (build options).
func logSlow(op string, start time.Time, detail func() string) {
	limit := slowThreshold()
	if limit == 0 {
		return
	}
	took := time.Since(start)
	if took < limit {
		return
	}
	if detail != nil {
		fmt.Fprintf(os.Stderr, "cl: slow call %s took %v: %s\n", op, took.Round(time.Microsecond), detail())
		return
	}
	fmt.Fprintf(os.Stderr, "cl: slow call %s took %v\n", op, took.Round(time.Microsecond))
}

package bench

import (
	"os"
	"slices"
	"strings"
)

// DriverCachesOff are the environment settings that turn off the drivers'
// own caches of compiled kernels in a child process (POCL's kernel cache,
// NVIDIA's compute cache of JIT code), so a measurement in a fresh process
// starts cold: what clinfer caches is all that helps.
var DriverCachesOff = []string{"POCL_KERNEL_CACHE=0", "CUDA_CACHE_DISABLE=1"}

// Median returns the median of v (the mean of the middle two for an even
// count; 0 for none). v is not modified.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// LoadAvg returns /proc/loadavg's first three fields (the 1, 5 and 15
// minute load averages), or "unknown" where there is none: benchmark
// reports name the load they ran under.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

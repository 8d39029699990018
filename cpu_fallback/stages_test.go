package cpufallback

import (
	"context"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tests/devicetest"
)

// TestHintsPlanStreams: the CPU's OPTIMAL_NUMBER_OF_INFER_REQUESTS and the
// streams of its task executor follow driver.PlanStreams.
func TestHintsPlanStreams(t *testing.T) {
	defer goleak.VerifyNone(t)
	procs := runtime.GOMAXPROCS(0)
	cases := []struct {
		name         string
		props        map[string]string
		wantStreams  int
		wantRequests int
	}{
		{"Latency", map[string]string{driver.KeyPerformanceHint: "LATENCY"}, 1, 1},
		{"Throughput", map[string]string{driver.KeyPerformanceHint: "THROUGHPUT"}, procs, procs},
		{"ThroughputOneRequest", map[string]string{driver.KeyPerformanceHint: "THROUGHPUT", driver.KeyNumRequests: "1"}, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New()
			require.NoError(t, err)
			defer func() { assert.NoError(t, p.Close()) }()
			cm, err := p.CompileModel(context.Background(), devicetest.ReluModel(), tc.props)
			require.NoError(t, err)
			defer func() { assert.NoError(t, cm.Close()) }()
			v, err := cm.Property(driver.KeyOptimalNumberOfInferRequests)
			require.NoError(t, err)
			assert.Equal(t, strconv.Itoa(tc.wantRequests), v)
			r, err := cm.(driver.AsyncCompiledModel).CreateAsyncInferRequest()
			require.NoError(t, err)
			defer func() { assert.NoError(t, r.Close()) }()
			assert.Equal(t, tc.wantStreams, r.Streams())
			stats := p.executors.Stats()
			require.NotEmpty(t, stats)
			assert.Equal(t, "CPU.callback."+strconv.Itoa(tc.wantStreams), stats[0].Name)
			assert.Equal(t, "CPU.task."+strconv.Itoa(tc.wantStreams), stats[1].Name)
		})
	}
}

// TestAsyncProfilingMatchesSync: the stages report the same profile
// entries (per op and per stage) as Infer.
func TestAsyncProfilingMatchesSync(t *testing.T) {
	defer goleak.VerifyNone(t)
	p, err := New()
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()
	cm, err := p.CompileModel(context.Background(), devicetest.ReluModel(), map[string]string{driver.KeyEnableProfiling: "YES"})
	require.NoError(t, err)
	defer func() { assert.NoError(t, cm.Close()) }()
	sr, err := cm.CreateInferRequest()
	require.NoError(t, err)
	require.NoError(t, sr.Infer(context.Background()))
	r, err := cm.(driver.AsyncCompiledModel).CreateAsyncInferRequest()
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	require.NoError(t, r.StartAsync(context.Background()))
	require.NoError(t, r.Wait(context.Background()))
	names := func(prof []driver.ProfilingInfo) []string {
		var out []string
		for _, e := range prof {
			out = append(out, e.NodeType+":"+e.NodeName)
		}
		return out
	}
	assert.Equal(t, names(sr.ProfilingInfo()), names(r.ProfilingInfo()))
	assert.Contains(t, names(r.ProfilingInfo()), "Stage:infer")
}

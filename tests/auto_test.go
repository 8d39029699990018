// AUTO and BATCH over the GPU and CPU devices need a build with OpenCL;
// their logic is tested without it in packages auto and batch (over the
// CPU and test devices).

//go:build cgo && !noopencl

package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/clinfer/clinfer/auto"
	"github.com/clinfer/clinfer/batch"
	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
	"github.com/clinfer/clinfer/tests/devicetest"
)

// patience bounds the waits of these tests, so a hang fails the test
// instead of the binary's timeout (TEST_TIMEOUT, 25m). It is not a speed
// limit: with an empty POCL kernel cache on a busy 2-core machine the
// GPU's compilation of PP-OCR cls that TestAutoStartupFallbackGPU waits
// for took over 2 minutes (nice 10, load 16-20, pthread-skylake-avx512).
const patience = 10 * time.Minute

// settle bounds the waits for released OpenCL objects' cleanups (they run
// on their own goroutines) where no compilation is pending, so a leak
// fails its test in 2 minutes instead of patience's 10, well inside
// TEST_TIMEOUT with the rest of the package still to run.
const settle = 2 * time.Minute

// TestAutoSuites runs the shared device suite on AUTO over the GPU and the
// CPU (the CPU serves while the GPU compiles), and on BATCH over the GPU.
func TestAutoSuites(t *testing.T) {
	t.Run("AUTO", func(t *testing.T) {
		devicetest.Run(t, func(t *testing.T) driver.Plugin {
			p, err := auto.New()
			require.NoError(t, err)
			require.NoError(t, p.SetProperties(map[string]string{driver.KeyDevicePriorities: "GPU,CPU"}))
			return p
		})
	})
	t.Run("BATCH", func(t *testing.T) {
		devicetest.Run(t, func(t *testing.T) driver.Plugin {
			p, err := batch.New()
			require.NoError(t, err)
			require.NoError(t, p.SetProperties(map[string]string{driver.KeyDevicePriorities: "GPU(4)"}))
			return p
		})
	})
}

// clsStatic is the PP-OCR cls model at its case's input shape
// (1x3x48x192), so devices plan it at compile time and BATCH can batch it.
func clsStatic(t *testing.T) (*graph.Model, *conformance.RealCase) {
	t.Helper()
	m, c, _ := clsCase(t)
	m.Parameters[0].Outputs[0].Shape = graph.StaticShape(tensor.Shape(c.Inputs[0].Shape))
	return m, c
}

// clsInput is the i-th seeded input of the cls model.
func clsInput(c *conformance.RealCase, i int) *tensor.Tensor {
	in := c.Inputs[0]
	in.Seed += uint32(i)
	x, err := in.Tensor()
	if err != nil {
		panic(err) // the case's shape is valid: cannot fail
	}
	return x
}

// outputsOn runs the cls model on inputs 0..n-1 on device and returns the
// first output of each.
func outputsOn(t *testing.T, core *driver.Core, m *graph.Model, c *conformance.RealCase, device string, n int) []*tensor.Tensor {
	t.Helper()
	cm, err := core.CompileModel(context.Background(), m, device, map[string]string{driver.KeyPerformanceHint: driver.HintLatency.String()})
	require.NoError(t, err)
	defer func() { assert.NoError(t, cm.Close()) }()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	name := cm.Outputs()[0].Name
	out := make([]*tensor.Tensor, n)
	for i := range out {
		require.NoError(t, r.SetTensor(c.Inputs[0].Name, clsInput(c, i)))
		require.NoError(t, r.Infer(context.Background()))
		y, err := r.Tensor(name)
		require.NoError(t, err)
		out[i] = y.Clone()
	}
	return out
}

// TestAutoStartupFallbackGPU: AUTO:GPU,CPU serves from the moment it
// compiled, the GPU takes over once it has compiled, and every inference,
// on whichever device, matches the CPU's result within the real models'
// tolerance.
func TestAutoStartupFallbackGPU(t *testing.T) {
	m, c := clsStatic(t)
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	const n = 8
	want := outputsOn(t, core, m, c, "CPU", n)
	cm, err := core.CompileModel(context.Background(), m, "AUTO:GPU,CPU", nil)
	require.NoError(t, err)
	defer func() { assert.NoError(t, cm.Close()) }()
	ac := cm.(*auto.CompiledModel)
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	name := cm.Outputs()[0].Name
	ran := map[string]int{}
	deadline := time.Now().Add(patience)
	for i := 0; ; i++ {
		require.NoError(t, r.SetTensor(c.Inputs[0].Name, clsInput(c, i%n)))
		require.NoError(t, r.Infer(context.Background()))
		y, err := r.Tensor(name)
		require.NoError(t, err)
		dev := r.(*auto.InferRequest).Device()
		ran[dev]++
		require.NoError(t, conformance.Compare(y, want[i%n], conformance.RealModelTolerance), "inference %d on %s", i, dev)
		if dev == "GPU.0" {
			break
		}
		require.True(t, time.Now().Before(deadline), "the GPU did not take over (timeline %+v, startup error %v)", ac.Timeline(), ac.StartupError())
	}
	tl := ac.Timeline()
	require.NotEmpty(t, tl)
	assert.Equal(t, "GPU.0", tl[len(tl)-1].Devices, "timeline %+v", tl)
	if len(tl) == 2 {
		assert.Equal(t, "CPU", tl[0].Devices)
	}
	for dev := range ran {
		assert.Contains(t, []string{"CPU", "GPU.0"}, dev)
	}
	v, err := cm.Property(driver.KeyExecutionDevices)
	require.NoError(t, err)
	assert.Equal(t, "GPU.0", v)
}

// TestAutoSkipsStartupFallbackWhenCached: with the GPU's blob in
// CACHE_DIR, AUTO imports it in CompileModel and the GPU serves from the
// first inference.
func TestAutoSkipsStartupFallbackWhenCached(t *testing.T) {
	m, _ := clsStatic(t)
	dir := t.TempDir()
	props := map[string]string{driver.KeyCacheDir: dir}
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	// The first compilation fills the cache in the background.
	cm, err := core.CompileModel(context.Background(), m, "AUTO:GPU,CPU", props)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		v, err := cm.Property(driver.KeyExecutionDevices)
		return err == nil && v == "GPU.0"
	}, patience, 10*time.Millisecond)
	require.NoError(t, cm.Close())

	cm, err = core.CompileModel(context.Background(), m, "AUTO:GPU,CPU", props)
	require.NoError(t, err)
	defer func() { assert.NoError(t, cm.Close()) }()
	ac := cm.(*auto.CompiledModel)
	assert.Equal(t, []auto.Switch{{At: ac.Timeline()[0].At, Devices: "GPU.0"}}, ac.Timeline())
	v, err := cm.Property(driver.KeyLoadedFromCache)
	require.NoError(t, err)
	assert.Equal(t, "YES", v)
}

// TestAutoCloseDuringGPUCompile: closing AUTO's compiled model while the
// GPU compiles PP-OCR det in the background cancels the compilation and
// leaves no goroutine and, once the Core is closed too, no OpenCL object
// behind.
func TestAutoCloseDuringGPUCompile(t *testing.T) {
	m := detModel(t, tensor.Shape{1, 3, 320, 320})
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	runtime.GC()
	base := cl.LiveObjects()
	core := driver.NewCore()
	cm, err := core.CompileModel(context.Background(), m, "AUTO:GPU,CPU", nil)
	require.NoError(t, err)
	v, err := cm.Property(driver.KeyExecutionDevices)
	require.NoError(t, err)
	assert.Equal(t, "CPU", v, "the det model compiles for seconds on the GPU")
	require.NoError(t, cm.Close())
	err = cm.(*auto.CompiledModel).StartupError()
	require.Error(t, err, "the background compilation cannot have finished")
	assert.ErrorIs(t, err, context.Canceled)
	require.NoError(t, core.Close())
	// Released objects' cleanups run on their own goroutines.
	assert.Eventually(t, func() bool { return assert.ObjectsAreEqual(base, cl.LiveObjects()) }, patience, 10*time.Millisecond,
		"OpenCL objects left: %v (before: %v)", cl.LiveObjects(), base)
}

// cumulativeEnv makes TestAutoCumulativeTwoGPUs's subprocess run
// autoCumulativeChild with POCL's two CPU drivers as GPU.0 and GPU.1.
const cumulativeEnv = "CLINFER_TEST_CUMULATIVE_CHILD"

// TestAutoCumulativeTwoGPUs runs AUTO with CUMULATIVE_THROUGHPUT over two
// OpenCL devices and the CPU in a process that sees POCL's "pthread" and
// "basic" drivers (POCL_DEVICES is read once per process).
func TestAutoCumulativeTwoGPUs(t *testing.T) {
	if os.Getenv(cumulativeEnv) != "" {
		autoCumulativeChild(t)
		return
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^TestAutoCumulativeTwoGPUs$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), cumulativeEnv+"=1", `POCL_DEVICES=pthread basic`)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child:\n%s", out)
	assert.Contains(t, string(out), "--- PASS: TestAutoCumulativeTwoGPUs")
}

func autoCumulativeChild(t *testing.T) {
	m, c := clsStatic(t)
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	gpus, err := core.Property("GPU", driver.KeyAvailableDevices)
	require.NoError(t, err)
	require.Len(t, strings.Fields(gpus), 2, "POCL_DEVICES=\"pthread basic\" should give two OpenCL devices (is POCL installed? `make deps`)")
	const n = 6
	want := outputsOn(t, core, m, c, "CPU", n)
	devices := []string{"GPU.0", "GPU.1", "CPU"}
	sum := 0
	for _, d := range devices {
		props := map[string]string{driver.KeyPerformanceHint: driver.HintThroughput.String()}
		if strings.HasPrefix(d, "GPU") {
			props[driver.KeyAllowAutoBatching] = "NO" // as AUTO passes it below
		}
		cm, err := core.CompileModel(context.Background(), m, d, props)
		require.NoError(t, err)
		v, err := cm.Property(driver.KeyOptimalNumberOfInferRequests)
		require.NoError(t, err)
		k, err := strconv.Atoi(v)
		require.NoError(t, err)
		sum += k
		require.NoError(t, cm.Close())
	}
	cases := []struct {
		policy string
		want   []string // the devices of inferences run one at a time
	}{
		{auto.PolicyRoundRobin, []string{"GPU.0", "GPU.1", "CPU", "GPU.0", "GPU.1", "CPU"}},
		{auto.PolicyDevicePriority, []string{"GPU.0", "GPU.0", "GPU.0", "GPU.0", "GPU.0", "GPU.0"}},
	}
	for _, tc := range cases {
		t.Run(tc.policy, func(t *testing.T) {
			cm, err := core.CompileModel(context.Background(), m, "AUTO:"+strings.Join(devices, ","), map[string]string{
				driver.KeyPerformanceHint: driver.HintCumulativeThroughput.String(), auto.KeySchedulePolicy: tc.policy, driver.KeyAllowAutoBatching: "NO"})
			require.NoError(t, err)
			defer func() { assert.NoError(t, cm.Close()) }()
			v, err := cm.Property(driver.KeyExecutionDevices)
			require.NoError(t, err)
			assert.Equal(t, strings.Join(devices, " "), v)
			v, err = cm.Property(driver.KeyOptimalNumberOfInferRequests)
			require.NoError(t, err)
			assert.Equal(t, strconv.Itoa(sum), v, "the sum of the devices' OPTIMAL_NUMBER_OF_INFER_REQUESTS")
			name := cm.Outputs()[0].Name
			r, err := cm.CreateInferRequest()
			require.NoError(t, err)
			defer func() { assert.NoError(t, r.Close()) }()
			var ran []string
			for i := range tc.want {
				require.NoError(t, r.SetTensor(c.Inputs[0].Name, clsInput(c, i%n)))
				require.NoError(t, r.Infer(context.Background()))
				y, err := r.Tensor(name)
				require.NoError(t, err)
				ran = append(ran, r.(*auto.InferRequest).Device())
				assert.NoError(t, conformance.Compare(y, want[i%n], conformance.RealModelTolerance), "inference %d on %s", i, ran[i])
			}
			assert.Equal(t, tc.want, ran)

			// All requests in flight at once, several rounds: each result
			// is right whichever device ran it.
			reqs := make([]*driver.AsyncInferRequest, sum)
			for i := range reqs {
				reqs[i], err = driver.CreateAsyncInferRequest(cm)
				require.NoError(t, err)
				defer func() { assert.NoError(t, reqs[i].Close()) }()
			}
			for round := range 3 {
				for i, r := range reqs {
					require.NoError(t, r.SetTensor(c.Inputs[0].Name, clsInput(c, (round+i)%n)))
					require.NoError(t, r.StartAsync(context.Background()))
				}
				for i, r := range reqs {
					require.NoError(t, r.Wait(context.Background()))
					y, err := r.Tensor(name)
					require.NoError(t, err)
					assert.NoError(t, conformance.Compare(y, want[(round+i)%n], conformance.RealModelTolerance), "round %d request %d", round, i)
				}
			}
		})
	}
}

// TestBatchGPUEqualsUnbatched: BATCH:GPU(4) with four requests in flight
// runs them as one batched inference whose results equal the GPU's
// unbatched ones within tolerance.
func TestBatchGPUEqualsUnbatched(t *testing.T) {
	m, c := clsStatic(t)
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	const n = 8
	want := outputsOn(t, core, m, c, "GPU", n)
	cm, err := core.CompileModel(context.Background(), m, "BATCH:GPU(4)", map[string]string{batch.KeyTimeout: "600000"})
	require.NoError(t, err)
	defer func() { assert.NoError(t, cm.Close()) }()
	reqs := make([]driver.InferRequest, 4)
	for i := range reqs {
		reqs[i], err = cm.CreateInferRequest()
		require.NoError(t, err)
		defer func() { assert.NoError(t, reqs[i].Close()) }()
	}
	name := cm.Outputs()[0].Name
	for round := range n / len(reqs) {
		var wg sync.WaitGroup
		errs := make([]error, len(reqs))
		for i, r := range reqs {
			require.NoError(t, r.SetTensor(c.Inputs[0].Name, clsInput(c, round*len(reqs)+i)))
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = r.Infer(context.Background()) }() // exits when Infer returns
		}
		wg.Wait()
		for i, r := range reqs {
			require.NoError(t, errs[i])
			y, err := r.Tensor(name)
			require.NoError(t, err)
			k := round*len(reqs) + i
			assert.NoError(t, conformance.Compare(y, want[k], conformance.RealModelTolerance), "input %d", k)
		}
	}
	assert.Equal(t, batch.Stats{Batches: n / 4}, cm.(*batch.CompiledModel).Stats())
}

// TestImplicitBatchingGPU: THROUGHPUT on the GPU batches through BATCH
// when ALLOW_AUTO_BATCHING allows and the model has a batch axis, and
// compiles on the GPU itself otherwise.
func TestImplicitBatchingGPU(t *testing.T) {
	cls, _ := clsStatic(t)
	clsDynamic, _, _ := clsCase(t)
	cases := []struct {
		name    string
		model   *graph.Model
		props   map[string]string
		batched bool
	}{
		{"Throughput", cls, map[string]string{driver.KeyPerformanceHint: "THROUGHPUT"}, true},
		{"ThroughputNotAllowed", cls, map[string]string{driver.KeyPerformanceHint: "THROUGHPUT", driver.KeyAllowAutoBatching: "NO"}, false},
		{"Latency", cls, map[string]string{driver.KeyPerformanceHint: "LATENCY"}, false},
		{"DynamicImageSize", clsDynamic, map[string]string{driver.KeyPerformanceHint: "THROUGHPUT"}, false},
	}
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cm, err := core.CompileModel(context.Background(), tc.model, "GPU", tc.props)
			require.NoError(t, err)
			defer func() { assert.NoError(t, cm.Close()) }()
			_, isBatch := cm.(*batch.CompiledModel)
			assert.Equal(t, tc.batched, isBatch, "compiled model %T", cm)
			if tc.batched {
				v, err := cm.Property(batch.KeyOptimalBatchSize)
				require.NoError(t, err)
				assert.Equal(t, strconv.Itoa(batch.DefaultBatchSize), v)
			}
		})
	}
}

// TestBatchNamesWhyNot: an explicit BATCH of a model with dynamic image
// sizes is an error naming the input and the axis.
func TestBatchNamesWhyNot(t *testing.T) {
	m, _, _ := clsCase(t)
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	_, err := core.CompileModel(context.Background(), m, "BATCH:GPU(8)", nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, driver.ErrUnsupported)
	assert.Contains(t, err.Error(), fmt.Sprintf("input %q", m.Parameters[0].Name))
	assert.Contains(t, err.Error(), "axis 2 is dynamic")
	assert.False(t, errors.Is(err, driver.ErrDevice))
}

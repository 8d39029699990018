package auto_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/auto"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/devicetest"

	_ "github.com/clinfer/clinfer/cpu_fallback" // registers the "CPU" device
)

const accelCPU = "AUTO:" + accelName + ",CPU"

// patience bounds every wait, so a hang fails the test rather than the
// binary's timeout.
const patience = 20 * time.Second

// TestDeviceBehaviour runs the shared device suite on AUTO over the test
// accelerator and the CPU: the CPU serves while the accelerator compiles
// in the background, then the accelerator.
func TestDeviceBehaviour(t *testing.T) {
	accel.reset()
	devicetest.Run(t, func(t *testing.T) driver.Plugin {
		p, err := auto.New()
		require.NoError(t, err)
		require.NoError(t, p.SetProperties(map[string]string{driver.KeyDevicePriorities: accelName + ",CPU"}))
		return p
	})
}

// TestDeviceBehaviourCumulative runs the suite with CUMULATIVE_THROUGHPUT
// and ROUND_ROBIN: every inference may land on either device.
func TestDeviceBehaviourCumulative(t *testing.T) {
	accel.reset()
	devicetest.Run(t, func(t *testing.T) driver.Plugin {
		p, err := auto.New()
		require.NoError(t, err)
		require.NoError(t, p.SetProperties(map[string]string{
			driver.KeyDevicePriorities: accelName + ",CPU",
			driver.KeyPerformanceHint:  driver.HintCumulativeThroughput.String(),
			auto.KeySchedulePolicy:     auto.PolicyRoundRobin,
		}))
		return p
	})
}

// reluModel is x f32[1,16] -> Relu -> y; both test devices run it.
func reluModel() *graph.Model { return devicetestRelu(16) }

func devicetestRelu(n int64) *graph.Model {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1, n))
	r := graph.NewNode("Relu", "relu", []graph.Output{x.Out(0)}, nil, 1)
	return graph.NewModel("relu", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", r.Out(0))})
}

// sigmoidModel is x f32[1,16] -> Sigmoid -> y: the accelerator cannot run
// it.
func sigmoidModel() *graph.Model {
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1, 16))
	r := graph.NewNode("Sigmoid", "sigmoid", []graph.Output{x.Out(0)}, nil, 1)
	return graph.NewModel("sigmoid", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", r.Out(0))})
}

func input(i int) *tensor.Tensor {
	x, err := tensor.FromF32(tensor.Shape{1, 16}, seeded.Float32s(uint32(500+i), 16, -2, 2))
	if err != nil {
		panic(err) // a fixed, valid shape: cannot fail
	}
	return x
}

func relu(x *tensor.Tensor) []float32 {
	out := append([]float32(nil), x.F32()...)
	for i, v := range out {
		out[i] = float32(math.Max(float64(v), 0))
	}
	return out
}

// compileAuto compiles m on device with props through a new Core; both
// are closed when the test ends.
func compileAuto(t *testing.T, m *graph.Model, device string, props map[string]string) *auto.CompiledModel {
	t.Helper()
	core := driver.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	cm, err := core.CompileModel(context.Background(), m, device, props)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })
	ac, ok := cm.(*auto.CompiledModel)
	require.True(t, ok, "compiled model is %T", cm)
	return ac
}

// inferOn runs one inference of input i on a new request and returns the
// device that ran it, checking the output.
func inferOn(t *testing.T, cm *auto.CompiledModel, i int) string {
	t.Helper()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	x := input(i)
	require.NoError(t, r.SetTensor("x", x))
	require.NoError(t, r.Infer(context.Background()))
	y, err := r.Tensor("y")
	require.NoError(t, err)
	assert.InDeltaSlice(t, relu(x), y.Contiguous().F32(), 1e-6)
	return r.(*auto.InferRequest).Device()
}

func execDevices(t *testing.T, cm driver.CompiledModel) string {
	t.Helper()
	v, err := cm.Property(driver.KeyExecutionDevices)
	require.NoError(t, err)
	return v
}

func timelineDevices(cm *auto.CompiledModel) []string {
	var out []string
	for _, s := range cm.Timeline() {
		out = append(out, s.Devices)
	}
	return out
}

// TestStartupFallback: while the accelerator compiles, the CPU serves and
// EXECUTION_DEVICES says so; once it is ready, it serves.
func TestStartupFallback(t *testing.T) {
	accel.reset()
	release := accel.hold()
	defer release()
	cm := compileAuto(t, reluModel(), accelCPU, nil)
	assert.Equal(t, "CPU", execDevices(t, cm))
	for i := range 3 {
		assert.Equal(t, "CPU", inferOn(t, cm, i), "inference %d while the accelerator compiles", i)
	}
	assert.Equal(t, []string{"CPU"}, timelineDevices(cm))
	release()
	require.Eventually(t, func() bool { return execDevices(t, cm) == accelName }, patience, time.Millisecond)
	assert.Equal(t, accelName, inferOn(t, cm, 3))
	assert.Equal(t, []string{"CPU", accelName}, timelineDevices(cm))
	assert.NoError(t, cm.StartupError())
}

// TestStartupFallbackUnderLoad: requests keep running while the
// accelerator takes over; every inference completes exactly once with the
// right output, some on each device.
func TestStartupFallbackUnderLoad(t *testing.T) {
	for _, rfb := range []string{"YES", "NO"} {
		t.Run(auto.KeyEnableRuntimeFallback+"="+rfb, func(t *testing.T) {
			accel.reset()
			release := accel.hold()
			defer release()
			cm := compileAuto(t, reluModel(), accelCPU, map[string]string{
				driver.KeyPerformanceHint: driver.HintThroughput.String(), auto.KeyEnableRuntimeFallback: rfb})
			const total, inflight = 2000, 6
			var next atomic.Int64
			counts := make([]atomic.Int32, total)
			wrong := make([]atomic.Bool, total)
			var byDevice sync.Map
			var mu sync.Mutex
			var errs []error
			var chains sync.WaitGroup
			for range inflight {
				r, err := cm.CreateAsyncInferRequest()
				require.NoError(t, err)
				t.Cleanup(func() { assert.NoError(t, r.Close()) })
				cur := -1
				start := func() bool {
					i := int(next.Add(1) - 1)
					if i >= total {
						return false
					}
					if i == total/4 {
						release() // the accelerator becomes ready while requests run
					}
					cur = i
					if err := r.SetTensor("x", input(i)); err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return false
					}
					if err := r.StartAsync(context.Background()); err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return false
					}
					return true
				}
				r.SetCallback(func(err error) {
					i := cur
					counts[i].Add(1)
					if err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("inference %d: %w", i, err))
						mu.Unlock()
					} else if y, err := r.Tensor("y"); err != nil {
						wrong[i].Store(true)
					} else {
						want := relu(input(i))
						for k, v := range y.Contiguous().F32() {
							if math.Abs(float64(v-want[k])) > 1e-6 {
								wrong[i].Store(true)
							}
						}
						dev := r.Sync().(*auto.InferRequest).Device()
						n, _ := byDevice.LoadOrStore(dev, new(atomic.Int64))
						n.(*atomic.Int64).Add(1)
					}
					if !start() {
						chains.Done()
					}
				})
				chains.Add(1)
				if !start() {
					chains.Done()
				}
			}
			all := make(chan struct{})
			go func() { chains.Wait(); close(all) }() // exits when every chain has ended
			select {
			case <-all:
			case <-time.After(patience):
				require.FailNow(t, "timed out")
			}
			mu.Lock()
			require.Empty(t, errs)
			mu.Unlock()
			for i := range counts {
				require.Equal(t, int32(1), counts[i].Load(), "inference %d completed %d times", i, counts[i].Load())
				require.False(t, wrong[i].Load(), "inference %d has a wrong output", i)
			}
			for _, dev := range []string{"CPU", accelName} {
				n, ok := byDevice.Load(dev)
				require.True(t, ok, "no inference ran on %s", dev)
				assert.Positive(t, n.(*atomic.Int64).Load())
			}
			assert.Equal(t, []string{"CPU", accelName}, timelineDevices(cm))
		})
	}
}

// TestStartupFallbackOff: with ENABLE_STARTUP_FALLBACK=NO, CompileModel
// compiles on the accelerator and it serves from the start.
func TestStartupFallbackOff(t *testing.T) {
	accel.reset()
	cm := compileAuto(t, reluModel(), accelCPU, map[string]string{auto.KeyEnableStartupFallback: "NO"})
	assert.Equal(t, accelName, execDevices(t, cm))
	assert.Equal(t, []string{accelName}, timelineDevices(cm))
	assert.Equal(t, accelName, inferOn(t, cm, 0))
}

// TestCloseCancelsBackgroundCompile: closing the compiled model while the
// accelerator compiles cancels that compilation and waits for it (goleak
// in TestMain checks nothing is left).
func TestCloseCancelsBackgroundCompile(t *testing.T) {
	accel.reset()
	release := accel.hold()
	defer release()
	_, started, cancelled, _ := accel.state()
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	cm, err := core.CompileModel(context.Background(), reluModel(), accelCPU, nil)
	require.NoError(t, err)
	select {
	case <-started:
	case <-time.After(patience):
		require.FailNow(t, "the background compilation did not start")
	}
	assert.Equal(t, "CPU", inferOn(t, cm.(*auto.CompiledModel), 0))
	require.NoError(t, cm.Close())
	select {
	case err := <-cancelled:
		assert.ErrorIs(t, err, context.Canceled)
	default:
		assert.Fail(t, "Close returned before the background compilation gave up")
	}
	_, err = cm.CreateInferRequest()
	assert.ErrorIs(t, err, driver.ErrClosed)
}

// TestRuntimeFallback: an inference that fails on the accelerator with a
// device error runs again on the CPU when ENABLE_RUNTIME_FALLBACK is on;
// other errors, and device errors with it off, come back as they are.
func TestRuntimeFallback(t *testing.T) {
	deviceErr := driver.Errorf(driver.ErrDevice, "testaccel: injected device failure")
	otherErr := driver.Errorf(driver.ErrInvalidArgument, "testaccel: injected bad argument")
	cases := []struct {
		name    string
		fail    error
		rfb     string
		wantErr error // nil: the CPU serves the re-run
	}{
		{"DeviceErrorFallsBack", deviceErr, "YES", nil},
		{"DeviceErrorWithoutFallback", deviceErr, "NO", driver.ErrDevice},
		{"OtherErrorIsReturned", otherErr, "YES", driver.ErrInvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			accel.reset()
			cm := compileAuto(t, reluModel(), accelCPU, map[string]string{
				auto.KeyEnableStartupFallback: "NO", auto.KeyEnableRuntimeFallback: tc.rfb})
			require.Equal(t, accelName, execDevices(t, cm))
			accel.setFailInfer(tc.fail)
			r, err := cm.CreateInferRequest()
			require.NoError(t, err)
			defer func() { assert.NoError(t, r.Close()) }()
			x := input(1)
			require.NoError(t, r.SetTensor("x", x))
			err = r.Infer(context.Background())
			if tc.wantErr != nil {
				require.Error(t, err)
				assert.ErrorIs(t, err, tc.wantErr)
				assert.Contains(t, err.Error(), accelName)
				assert.Zero(t, cm.Reruns())
				return
			}
			require.NoError(t, err)
			y, err := r.Tensor("y")
			require.NoError(t, err)
			assert.InDeltaSlice(t, relu(x), y.Contiguous().F32(), 1e-6)
			assert.Equal(t, "CPU", r.(*auto.InferRequest).Device())
			assert.Equal(t, int64(1), cm.Reruns())
			// The accelerator still serves the next inference.
			accel.setFailInfer(nil)
			assert.Equal(t, accelName, inferOn(t, cm, 2))
		})
	}
}

// TestSelection: the device AUTO selects by priority, QueryModel and
// capability.
func TestSelection(t *testing.T) {
	cases := []struct {
		name   string
		model  func() *graph.Model
		device string
		props  map[string]string
		want   string
	}{
		{"FirstInList", reluModel, accelCPU, nil, accelName},
		{"ListOrderWins", reluModel, "AUTO:CPU," + accelName, nil, "CPU"},
		{"UnsupportedOpSkipsDevice", sigmoidModel, accelCPU, nil, "CPU"},
		{"PrecisionNeedsCapability", reluModel, "AUTO:CPU," + accelName, map[string]string{driver.KeyInferencePrecisionHint: "f16"}, accelName},
		{"DefaultListAcceleratorFirst", reluModel, "AUTO", nil, accelName},
		{"ExcludedDevice", reluModel, "AUTO:-" + accelName, nil, "CPU"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			accel.reset()
			accel.setCaps("FP32 FP16")
			props := map[string]string{auto.KeyEnableStartupFallback: "NO"}
			for k, v := range tc.props {
				props[k] = v
			}
			cm := compileAuto(t, tc.model(), tc.device, props)
			assert.Equal(t, tc.want, execDevices(t, cm))
		})
	}
}

// TestNoDevice: when no candidate can run the model the error wraps
// driver.ErrUnsupported and says why for each device.
func TestNoDevice(t *testing.T) {
	accel.reset()
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	_, err := core.CompileModel(context.Background(), reluModel(), accelCPU, map[string]string{driver.KeyInferencePrecisionHint: "f16"})
	require.Error(t, err)
	assert.ErrorIs(t, err, driver.ErrUnsupported)
	for _, s := range []string{accelName, "no FP16", "CPU", "f16"} {
		assert.Contains(t, err.Error(), s)
	}
	_, err = core.CompileModel(context.Background(), sigmoidModel(), "AUTO:"+accelName, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, driver.ErrUnsupported)
	assert.Contains(t, err.Error(), `"sigmoid"`)
}

// TestHintReachesDevice: LATENCY and THROUGHPUT go to the selected device,
// whose OPTIMAL_NUMBER_OF_INFER_REQUESTS AUTO reports.
func TestHintReachesDevice(t *testing.T) {
	for _, hint := range []driver.PerformanceHint{driver.HintLatency, driver.HintThroughput} {
		t.Run(hint.String(), func(t *testing.T) {
			props := map[string]string{driver.KeyPerformanceHint: hint.String()}
			core := driver.NewCore()
			defer func() { assert.NoError(t, core.Close()) }()
			direct, err := core.CompileModel(context.Background(), reluModel(), "CPU", props)
			require.NoError(t, err)
			want, err := direct.Property(driver.KeyOptimalNumberOfInferRequests)
			require.NoError(t, err)
			require.NoError(t, direct.Close())
			cm := compileAuto(t, reluModel(), "AUTO:CPU", props)
			got, err := cm.Property(driver.KeyOptimalNumberOfInferRequests)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

// TestCumulativeThroughput: every device serves, OPTIMAL_NUMBER_OF_INFER_
// REQUESTS is the sum of the devices' (each compiled with THROUGHPUT), and
// SCHEDULE_POLICY decides where one-at-a-time inferences go.
func TestCumulativeThroughput(t *testing.T) {
	cases := []struct {
		policy string
		want   []string // devices of four inferences in a row
	}{
		{auto.PolicyDevicePriority, []string{accelName, accelName, accelName, accelName}},
		{auto.PolicyRoundRobin, []string{accelName, "CPU", accelName, "CPU"}},
	}
	for _, tc := range cases {
		t.Run(tc.policy, func(t *testing.T) {
			accel.reset()
			cm := compileAuto(t, reluModel(), accelCPU, map[string]string{
				driver.KeyPerformanceHint: driver.HintCumulativeThroughput.String(), auto.KeySchedulePolicy: tc.policy})
			assert.Equal(t, accelName+" CPU", execDevices(t, cm))
			sum := 0
			for _, dev := range []string{accelName, "CPU"} {
				core := driver.NewCore()
				d, err := core.CompileModel(context.Background(), reluModel(), dev, map[string]string{driver.KeyPerformanceHint: driver.HintThroughput.String()})
				require.NoError(t, err)
				v, err := d.Property(driver.KeyOptimalNumberOfInferRequests)
				require.NoError(t, err)
				n, err := strconv.Atoi(v)
				require.NoError(t, err)
				sum += n
				require.NoError(t, d.Close())
				require.NoError(t, core.Close())
			}
			got, err := cm.Property(driver.KeyOptimalNumberOfInferRequests)
			require.NoError(t, err)
			assert.Equal(t, strconv.Itoa(sum), got)
			var devs []string
			for i := range tc.want {
				devs = append(devs, inferOn(t, cm, i))
			}
			assert.Equal(t, tc.want, devs)
		})
	}
}

// TestBadProperties: AUTO's own keys name the key and the accepted values.
func TestBadProperties(t *testing.T) {
	cases := []struct {
		key, value string
	}{
		{driver.KeyDevicePriorities, "GPU,,CPU"},
		{driver.KeyDevicePriorities, "AUTO,CPU"},
		{driver.KeyDevicePriorities, "CPU,CPU"},
		{auto.KeySchedulePolicy, "RANDOM"},
		{auto.KeyEnableStartupFallback, "maybe"},
	}
	for _, tc := range cases {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			p, err := auto.New()
			require.NoError(t, err)
			defer func() { assert.NoError(t, p.Close()) }()
			err = p.SetProperties(map[string]string{tc.key: tc.value})
			require.Error(t, err)
			assert.ErrorIs(t, err, driver.ErrInvalidArgument)
			assert.Contains(t, err.Error(), tc.key)
		})
	}
}

// TestDefaults: OpenVINO's defaults.
func TestDefaults(t *testing.T) {
	p, err := auto.New()
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()
	for key, want := range map[string]string{
		auto.KeyEnableStartupFallback: "YES",
		auto.KeyEnableRuntimeFallback: "YES",
		auto.KeySchedulePolicy:        auto.PolicyDevicePriority,
		driver.KeyPerformanceHint:     driver.HintLatency.String(),
		driver.KeyDevicePriorities:    "",
	} {
		got, err := p.Property(key)
		require.NoError(t, err)
		assert.Equal(t, want, got, key)
	}
}

package clbackend

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/cl"
	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/devicetest"
)

// TestSuites runs the shared device behaviour suites on the GPU device.
func TestSuites(t *testing.T) {
	devicetest.Run(t, func(t *testing.T) driver.Plugin {
		needOpenCL(t)
		p, err := New()
		require.NoError(t, err, "the GPU plugin needs an OpenCL device; for a CPU one run `apt-get install pocl-opencl-icd`")
		return p
	})
}

// TestSuitesOnSecondDevice runs the property suite against GPU.1 of a
// two-device plugin through the Core, the way "GPU.1" reaches it.
func TestSuitesOnSecondDevice(t *testing.T) {
	devicetest.Properties(t, func(t *testing.T) driver.Plugin {
		return &onDevice{Plugin: twinGPU(t), id: "1"}
	})
}

// onDevice is a driver.Plugin view of one device of p, adding DEVICE_ID to
// every call as driver.Core does for "GPU.1".
type onDevice struct {
	*Plugin
	id string
}

func (o *onDevice) Property(key string) (string, error) { return o.DeviceProperty(o.id, key) }

func (o *onDevice) SetProperties(props map[string]string) error {
	m := map[string]string{driver.KeyDeviceID: o.id}
	for k, v := range props {
		m[k] = v
	}
	return o.Plugin.SetProperties(m)
}

func (o *onDevice) CompileModel(ctx context.Context, m *graph.Model, props map[string]string) (driver.CompiledModel, error) {
	p := map[string]string{driver.KeyDeviceID: o.id}
	for k, v := range props {
		p[k] = v
	}
	return o.Plugin.CompileModel(ctx, m, p)
}

const helperEnv = "CLBACKEND_TEST_HELPER"

// TestNoPlatformHelper is the subprocess of TestNoPlatform: it runs with
// OCL_ICD_VENDORS pointing at an empty directory and OCL_ICD_FILENAMES
// empty.
func TestNoPlatformHelper(t *testing.T) {
	if os.Getenv(helperEnv) != "noplatform" {
		t.Skip("helper of TestNoPlatform: runs only in its subprocess, with " + helperEnv + "=noplatform")
	}
	p, err := New()
	require.Error(t, err, "New with no OpenCL vendor files")
	assert.Nil(t, p)
	assert.ErrorIs(t, err, driver.ErrDevice)
	assert.ErrorIs(t, err, cl.ErrPlatformNotFound)
	msg := err.Error()
	assert.Contains(t, msg, "no OpenCL platform found")
	assert.Contains(t, msg, "OCL_ICD_VENDORS="+os.Getenv("OCL_ICD_VENDORS"), "says where the loader looked")
	assert.Contains(t, msg, "apt-get install pocl-opencl-icd", "says how to install one")

	// Through the Core, the explanation reaches the user unchanged.
	core := driver.NewCore()
	defer core.Close()
	_, err = core.Plugin(DeviceName)
	assert.ErrorIs(t, err, driver.ErrDevice)
	assert.Contains(t, err.Error(), "pocl-opencl-icd")
	assert.NotContains(t, core.AvailableDevices(), DeviceName)
	t.Log(msg)
}

// TestNoPlatform: with the ICD loader pointed at an empty vendor directory
// the constructor explains what is missing and how to install it.
func TestNoPlatform(t *testing.T) {
	needOpenCL(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^TestNoPlatformHelper$", "-test.v")
	// OCL_ICD_FILENAMES (set on some GPU machines) would load drivers past
	// the vendor directory.
	cmd.Env = append(os.Environ(), helperEnv+"=noplatform", "OCL_ICD_VENDORS="+t.TempDir(), "OCL_ICD_FILENAMES=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "helper failed:\n%s", out)
	assert.Contains(t, string(out), "--- PASS: TestNoPlatformHelper", "helper output:\n%s", out)
}

// TestNotBuilt: without OpenCL the plugin still registers and New says the
// build lacks OpenCL.
func TestNotBuilt(t *testing.T) {
	assert.Contains(t, driver.Devices(), DeviceName, "GPU registers in every build")
	if cl.Enabled {
		t.Skip("this build has OpenCL; run `CGO_ENABLED=0 go test ./clbackend/` or `go test -tags noopencl ./clbackend/` for the no-OpenCL constructor")
	}
	_, err := New()
	require.Error(t, err)
	assert.ErrorIs(t, err, cl.ErrNotBuilt)
	assert.ErrorIs(t, err, driver.ErrDevice)
}

// TestPOCLDevicesOrder runs TestPOCLDevicesOrderHelper with POCL_DEVICES
// asking POCL for two devices (a "basic" and a "pthread" one), in both
// orders: GPU.n follow the order of the drivers in POCL_DEVICES (POCL
// itself lists basic first either way, which made "pthread basic" give
// the one-core basic device as GPU.0).
func TestPOCLDevicesOrder(t *testing.T) {
	p := newGPU(t)
	if !strings.Contains(p.devices[0].vendor+p.devices[0].fullName, "pthread") && !strings.Contains(p.devices[0].architecture, "Portable Computing Language") {
		t.Skip("needs POCL as the first OpenCL device (found " + p.devices[0].fullName + "); `apt-get install pocl-opencl-icd`")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, list := range []string{"basic pthread", "pthread basic"} {
		cmd := exec.Command(exe, "-test.run=^TestPOCLDevicesOrderHelper$", "-test.v")
		cmd.Env = append(os.Environ(), helperEnv+"=pocl2", "POCL_DEVICES="+list)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "helper with POCL_DEVICES=%q failed:\n%s", list, out)
		assert.Contains(t, string(out), "--- PASS: TestPOCLDevicesOrderHelper", "helper output with POCL_DEVICES=%q:\n%s", list, out)
	}
}

// TestPOCLDevicesOrderHelper checks numbering and per-device configuration
// through the Core on two real OpenCL devices.
func TestPOCLDevicesOrderHelper(t *testing.T) {
	if os.Getenv(helperEnv) != "pocl2" {
		t.Skip("helper of TestPOCLDevicesOrder: runs only in its subprocess, with " + helperEnv + "=pocl2")
	}
	core := driver.NewCore()
	defer func() { assert.NoError(t, core.Close()) }()
	devs := core.AvailableDevices()
	assert.Contains(t, devs, "GPU.0")
	assert.Contains(t, devs, "GPU.1")
	ids, err := core.Property("GPU", driver.KeyAvailableDevices)
	require.NoError(t, err)
	assert.Equal(t, "0 1", ids)
	n0, err := core.Property("GPU.0", driver.KeyFullDeviceName)
	require.NoError(t, err)
	n1, err := core.Property("GPU.1", driver.KeyFullDeviceName)
	require.NoError(t, err)
	// Both are CPU-type, of one platform: in POCL_DEVICES' order.
	drivers := strings.Fields(os.Getenv("POCL_DEVICES"))
	require.Len(t, drivers, 2)
	assert.True(t, strings.HasPrefix(n0, drivers[0]), "GPU.0 is of POCL_DEVICES' first driver: %s", n0)
	assert.True(t, strings.HasPrefix(n1, drivers[1]), "GPU.1 is of POCL_DEVICES' second driver: %s", n1)

	require.NoError(t, core.SetProperties("GPU.1", map[string]string{driver.KeyPerformanceHint: "THROUGHPUT"}))
	h0, _ := core.Property("GPU.0", driver.KeyPerformanceHint)
	h1, _ := core.Property("GPU.1", driver.KeyPerformanceHint)
	hd, _ := core.Property("GPU", driver.KeyPerformanceHint)
	assert.Equal(t, "LATENCY", h0)
	assert.Equal(t, "THROUGHPUT", h1)
	assert.Equal(t, "LATENCY", hd, "GPU still means GPU.0")

	cm, err := core.CompileModel(context.Background(), devicetest.ReluModel(), "GPU.1", nil)
	require.NoError(t, err)
	defer func() { assert.NoError(t, cm.Close()) }()
	ed, err := cm.Property(driver.KeyExecutionDevices)
	require.NoError(t, err)
	assert.Equal(t, "GPU.1", ed)
	hint, err := cm.Property(driver.KeyPerformanceHint)
	require.NoError(t, err)
	assert.Equal(t, "THROUGHPUT", hint, "GPU.1's configuration reaches its compiled model")
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	x, _ := tensor.FromF32(tensor.Shape{1, 4}, []float32{-1, 2, -3, 4})
	require.NoError(t, r.SetTensor("x", x))
	require.NoError(t, r.Infer(context.Background()))
	y, err := r.Tensor("y")
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float32{0, 2, 0, 4}, y.F32(), 0)

	_, err = core.Property("GPU.7", driver.KeyFullDeviceName)
	assert.ErrorIs(t, err, driver.ErrNotFound)
}

// TestPerDeviceConfig checks DEVICE_ID routing on a two-device plugin.
func TestPerDeviceConfig(t *testing.T) {
	p := twinGPU(t)
	get := func(id, key string) string {
		t.Helper()
		v, err := p.DeviceProperty(id, key)
		require.NoError(t, err)
		return v
	}
	assert.Equal(t, "0 1", get("0", driver.KeyAvailableDevices))
	assert.Equal(t, "1", get("GPU.1", driver.KeyDeviceID))

	require.NoError(t, p.SetProperties(map[string]string{driver.KeyDeviceID: "1", driver.KeyPerformanceHint: "THROUGHPUT"}))
	assert.Equal(t, "LATENCY", get("0", driver.KeyPerformanceHint))
	assert.Equal(t, "THROUGHPUT", get("1", driver.KeyPerformanceHint))
	v, err := p.Property(driver.KeyPerformanceHint)
	require.NoError(t, err)
	assert.Equal(t, "LATENCY", v, "Property reads the default device, GPU.0")

	// Without DEVICE_ID: every device.
	require.NoError(t, p.SetProperties(map[string]string{driver.KeyEnableProfiling: "YES"}))
	assert.Equal(t, "YES", get("0", driver.KeyEnableProfiling))
	assert.Equal(t, "YES", get("1", driver.KeyEnableProfiling))

	// DEVICE_ID alone switches the default device.
	require.NoError(t, p.SetProperties(map[string]string{driver.KeyDeviceID: "GPU.1"}))
	v, err = p.Property(driver.KeyPerformanceHint)
	require.NoError(t, err)
	assert.Equal(t, "THROUGHPUT", v)
	v, err = p.Property(driver.KeyDeviceID)
	require.NoError(t, err)
	assert.Equal(t, "1", v)

	// Compiling for a device uses its configuration.
	cm, err := p.CompileModel(context.Background(), devicetest.ReluModel(), map[string]string{driver.KeyDeviceID: "0"})
	require.NoError(t, err)
	defer cm.Close()
	v, err = cm.Property(driver.KeyPerformanceHint)
	require.NoError(t, err)
	assert.Equal(t, "LATENCY", v)
	v, err = cm.Property(driver.KeyExecutionDevices)
	require.NoError(t, err)
	assert.Equal(t, "GPU.0", v)

	for _, bad := range []string{"2", "-1", "GPU.x", "01", ""} {
		err := p.SetProperties(map[string]string{driver.KeyDeviceID: bad, driver.KeyPerformanceHint: "LATENCY"})
		require.Error(t, err, "DEVICE_ID=%q", bad)
		assert.ErrorIs(t, err, driver.ErrNotFound)
		assert.Contains(t, err.Error(), driver.KeyDeviceID)
		_, err = p.CompileModel(context.Background(), devicetest.ReluModel(), map[string]string{driver.KeyDeviceID: bad})
		assert.ErrorIs(t, err, driver.ErrNotFound, "compile with DEVICE_ID=%q", bad)
	}
	assert.Equal(t, "THROUGHPUT", get("1", driver.KeyPerformanceHint), "failed sets changed nothing")
}

// TestReadOnlyFacts checks the device facts against the OpenCL device.
func TestReadOnlyFacts(t *testing.T) {
	p := newGPU(t)
	d := p.devices[0]
	info, err := d.cl.Info()
	require.NoError(t, err)
	get := func(key string) string {
		t.Helper()
		v, err := p.Property(key)
		require.NoError(t, err, key)
		return v
	}
	assert.Equal(t, strings.TrimSpace(info.Name), get(driver.KeyFullDeviceName))
	arch := get(driver.KeyDeviceArchitecture)
	assert.Contains(t, arch, strings.TrimSpace(info.Vendor))
	assert.Contains(t, arch, strings.TrimSpace(info.Name))
	assert.Contains(t, arch, strings.TrimSpace(info.DriverVersion))
	caps := strings.Fields(get(driver.KeyOptimizationCapabilities))
	assert.Contains(t, caps, "FP32")
	assert.Contains(t, caps, "INT8", "quantized models run int8 kernels")
	assert.Contains(t, caps, "EXPORT_IMPORT", "compiled models export and import (export.go)")
	assert.Equal(t, info.FP16, slicesContains(caps, "FP16"), "FP16 listed iff cl_khr_fp16")
	wantType := "discrete"
	if info.HostUnifiedMemory || info.Type&cl.DeviceTypeGPU == 0 {
		wantType = "integrated"
	}
	assert.Equal(t, wantType, get(driver.KeyDeviceType))
	assert.Equal(t, strconv.FormatInt(info.GlobalMemSize, 10), get(driver.KeyDeviceTotalMemSize))
	assert.Equal(t, "1 16 1", get(driver.KeyRangeForAsyncInferRequests))
	assert.Equal(t, "1 2", get(driver.KeyRangeForStreams))
	if info.UUID != nil {
		assert.Equal(t, info.UUID.String(), get(driver.KeyDeviceUUID))
	} else {
		_, err := p.Property(driver.KeyDeviceUUID)
		assert.ErrorIs(t, err, driver.ErrNotFound, "no DEVICE_UUID when the device reports none")
	}
	assert.Equal(t, "1", get(driver.KeyOptimalNumberOfInferRequests))
	require.NoError(t, p.SetProperties(map[string]string{driver.KeyPerformanceHint: "THROUGHPUT", driver.KeyNumRequests: "3"}))
	assert.Equal(t, "3", get(driver.KeyOptimalNumberOfInferRequests))

	// f16 only with cl_khr_fp16; otherwise the error names the device and
	// the extension.
	err = p.SetProperties(map[string]string{driver.KeyInferencePrecisionHint: "f16"})
	if info.FP16 {
		assert.NoError(t, err)
	} else {
		require.Error(t, err)
		assert.ErrorIs(t, err, driver.ErrInvalidArgument)
		assert.Contains(t, err.Error(), "cl_khr_fp16")
		assert.Contains(t, err.Error(), "GPU.0")
		assert.Contains(t, err.Error(), driver.KeyInferencePrecisionHint)
	}
	err = p.SetProperties(map[string]string{driver.KeyInferencePrecisionHint: "bf16"})
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	for _, key := range []string{driver.KeyCacheDir, driver.KeyModelPriority, driver.KeyLogLevel, driver.KeyDisableTransformations,
		driver.KeyExclusiveAsyncRequests, driver.KeyExecutionModeHint, driver.KeyNumRequests, driver.KeyDeviceID} {
		spec, ok := d.props.Spec(key)
		require.True(t, ok, key)
		assert.True(t, spec.Mutable, "%s is read-write", key)
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestMatchesCPU runs the chain model on the GPU and on the CPU device and
// compares the outputs.
func TestMatchesCPU(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	inputs := map[string]*tensor.Tensor{}
	for _, name := range []string{"x", "w"} {
		v := make([]float32, 6)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 3)
		}
		inputs[name], err = tensor.FromF32(tensor.Shape{2, 3}, v)
		require.NoError(t, err)
	}
	run := func(p driver.Plugin) map[string][]float32 {
		cm, err := p.CompileModel(context.Background(), chainModel(t), nil)
		require.NoError(t, err, p.Name())
		defer cm.Close()
		r, err := cm.CreateInferRequest()
		require.NoError(t, err)
		defer r.Close()
		for k, v := range inputs {
			require.NoError(t, r.SetTensor(k, v))
		}
		require.NoError(t, r.Infer(context.Background()), p.Name())
		out := map[string][]float32{}
		for _, k := range []string{"y", "z"} {
			y, err := r.Tensor(k)
			require.NoError(t, err)
			out[k] = append([]float32(nil), y.Contiguous().F32()...)
		}
		return out
	}
	want, got := run(cpu), run(gpu)
	for _, k := range []string{"y", "z"} {
		require.Len(t, got[k], len(want[k]), k)
		for i := range want[k] {
			assert.InDelta(t, want[k][i], got[k][i], 1e-5, "%s[%d]", k, i)
		}
	}
	// And by hand, so a shared mistake cannot hide: y = -2*(relu(x)+c).
	c := []float32{0.5, -1, 2, -3, 0.25, 1}
	for i, xv := range inputs["x"].F32() {
		assert.InDelta(t, -2*(max(xv, 0)+c[i]), got["y"][i], 1e-5, "y[%d]", i)
		assert.InDelta(t, xv+inputs["w"].F32()[i], got["z"][i], 1e-5, "z[%d]", i)
	}
}

// TestUnsupported: CompileModel names the node and op; QueryModel answers
// exactly the nodes that compile.
func TestUnsupported(t *testing.T) {
	p := newGPU(t)
	// A Range whose bounds are computed on the device has a length no plan
	// can know without reading them back mid-request: the GPU cannot run
	// it (the CPU can).
	// (A scalar input would be planned for its value, as any input that
	// decides a shape: the bounds come from a vector here.)
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(4))
	relu := graph.NewNode("Relu", "relu", []graph.Output{x.Out(0)}, nil, 1)
	top := graph.NewNode("ReduceMax", "max", []graph.Output{relu.Out(0)}, graph.Attrs{"keepdims": int64(0)}, 1)
	sig := graph.NewNode("Range", "sig", []graph.Output{top.Out(0), top.Out(0), top.Out(0)}, nil, 1)
	y := graph.NewResult("y", sig.Out(0))
	r := graph.NewResult("r", relu.Out(0))
	m := graph.NewModel("mixed", []*graph.Node{x}, []*graph.Node{y, r})
	_, err := p.CompileModel(context.Background(), m, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, driver.ErrUnsupported)
	assert.Contains(t, err.Error(), `"sig"`)
	assert.Contains(t, err.Error(), "Range")

	got, err := p.QueryModel(context.Background(), m, nil)
	require.NoError(t, err)
	// y's producer is unsupported, so y is too (fusion.QuerySupported).
	assert.Equal(t, map[string]string{"x": "GPU", "relu": "GPU", "max": "GPU", "r": "GPU"}, got)

	// An element type an op's kernels lack (noF64: LRN computes in f32
	// only) is left out by QueryModel, so HETERO places the node on the
	// CPU, and CompileModel refuses it naming the node and the type.
	a := graph.NewParameter("a", tensor.F32, graph.ShapeOf(2, 3))
	b := graph.NewParameter("b", tensor.F32, graph.ShapeOf(1, 3))
	add := graph.NewNode("Add", "add", []graph.Output{a.Out(0), b.Out(0)}, nil, 1)
	d := graph.NewParameter("d", tensor.F64, graph.ShapeOf(1, 4, 5, 5))
	lrn := graph.NewNode("LRN", "dlrn", []graph.Output{d.Out(0)}, graph.Attrs{"size": int64(3)}, 1)
	m2 := graph.NewModel("bcast", []*graph.Node{a, b, d}, []*graph.Node{graph.NewResult("o", add.Out(0)), graph.NewResult("do", lrn.Out(0))})
	got, err = p.QueryModel(context.Background(), m2, map[string]string{driver.KeyDeviceID: "0"})
	require.NoError(t, err)
	assert.NotContains(t, got, "dlrn", "QueryModel claims f64 LRN: %v", got)
	assert.Contains(t, got, "add")
	_, err = p.CompileModel(context.Background(), m2, nil)
	assert.ErrorIs(t, err, driver.ErrUnsupported)
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), `"dlrn"`)
		assert.Contains(t, err.Error(), "f64")
	}

	got, err = p.QueryModel(context.Background(), chainModel(t), nil)
	require.NoError(t, err)
	assert.Len(t, got, 11, "every node of the chain model: %v", got)
}

// TestProfilingAndRuntimeModel checks kernel-level profiling and the
// runtime model's annotations.
func TestProfilingAndRuntimeModel(t *testing.T) {
	p := newGPU(t)
	// Without transformations, so that Identity stays (as an alias).
	cm, err := p.CompileModel(context.Background(), chainModel(t), map[string]string{driver.KeyEnableProfiling: "YES", driver.KeyDisableTransformations: "YES"})
	require.NoError(t, err)
	defer cm.Close()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	require.NoError(t, r.Infer(context.Background()))
	entries := map[string]driver.ProfilingInfo{}
	for _, e := range r.ProfilingInfo() {
		entries[e.NodeName] = e
	}
	for node, entry := range map[string]string{"relu": "eltwise_unary", "add": "eltwise_binary", "mul": "eltwise_binary", "sum": "eltwise_binary"} {
		e, ok := entries[node]
		require.True(t, ok, "no profiling entry for %s", node)
		assert.Equal(t, entry, e.ExecType, node)
		assert.Equal(t, driver.Executed, e.Status, node)
		assert.Positive(t, e.RealTime, "device time of %s", node)
	}
	for _, stage := range []string{"upload", "execute", "download", "wait"} {
		assert.Equal(t, "Stage", entries[stage].NodeType, stage)
	}
	rm, err := cm.RuntimeModel()
	require.NoError(t, err)
	mul := rm.Node("mul")
	require.NotNil(t, mul)
	assert.Equal(t, "Mul", mul.RT.Extra["LAYER_TYPE"])
	assert.Equal(t, "mul:eltwise_binary", mul.RT.Extra["IMPL_TYPE"])
	assert.Equal(t, "alias", rm.Node("identity").RT.Extra["IMPL_TYPE"], "Identity is a zero-copy alias")
	assert.Equal(t, "mul", mul.RT.Extra["ORIGINAL_NAMES"])
	assert.NotEmpty(t, mul.RT.Extra["PERF_COUNTER"])
	nodes, err := rm.Nodes()
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, n := range nodes {
		o := n.RT.Extra["EXECUTION_ORDER"]
		assert.False(t, seen[o], "EXECUTION_ORDER %s twice", o)
		seen[o] = true
	}
}

// TestUserOutputAndClosed checks a user-bound output receives the result
// and that closed objects say so.
func TestUserOutputAndClosed(t *testing.T) {
	p := newGPU(t)
	cm, err := p.CompileModel(context.Background(), devicetest.ReluModel(), nil)
	require.NoError(t, err)
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	out := tensor.MustNew(tensor.F32, tensor.Shape{1, 4})
	require.NoError(t, r.SetTensor("y", out))
	x, _ := tensor.FromF32(tensor.Shape{1, 4}, []float32{-1, 1, -2, 2})
	require.NoError(t, r.SetTensor("x", x))
	require.NoError(t, r.Infer(context.Background()))
	assert.InDeltaSlice(t, []float32{0, 1, 0, 2}, out.F32(), 0)
	got, err := r.Tensor("y")
	require.NoError(t, err)
	assert.Same(t, out, got)

	require.NoError(t, cm.Close())
	assert.ErrorIs(t, r.Infer(context.Background()), driver.ErrClosed, "closing the model closes its requests")
	_, err = cm.CreateInferRequest()
	assert.ErrorIs(t, err, driver.ErrClosed)
	assert.NoError(t, r.Close(), "closing twice is fine")
	assert.NoError(t, cm.Close())
	require.NoError(t, p.Close())
	_, err = p.CompileModel(context.Background(), devicetest.ReluModel(), nil)
	assert.ErrorIs(t, err, driver.ErrClosed)
	_, err = p.Property(driver.KeyFullDeviceName)
	assert.ErrorIs(t, err, driver.ErrClosed)
	assert.NoError(t, p.Close())
}

// TestCancelledWhileRunning cancels a context while the device works; Infer
// returns its error (or finishes first) and the request works afterwards.
func TestCancelledWhileRunning(t *testing.T) {
	p := newGPU(t)
	cm, err := p.CompileModel(context.Background(), chainModel(t), nil)
	require.NoError(t, err)
	defer cm.Close()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer r.Close()
	for range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		go cancel()
		err := r.Infer(ctx)
		if err != nil {
			assert.ErrorIs(t, err, context.Canceled)
		}
		cancel()
	}
	require.NoError(t, r.Infer(context.Background()))
}

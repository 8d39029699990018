package clbackend

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// DeviceName is the name the GPU device is registered under.
const DeviceName = "GPU"

// KeyDisabledOps is a comma-separated list of op types ("Relu,Conv") the
// device pretends it cannot run: QueryModel leaves their nodes out (and
// those of any fused node that absorbed one) and CompileModel refuses them
// with driver.ErrUnsupported. Tests use it to send single ops to another
// device under HETERO (RW; "" is none).
const KeyDisabledOps = "GPU_DISABLED_OPS"

// disabledOpsSpec is GPU_DISABLED_OPS, stored with the op types trimmed.
func disabledOpsSpec() driver.PropertySpec {
	return driver.PropertySpec{
		Key: KeyDisabledOps, Mutable: true,
		Accepted: "a comma-separated list of op types, e.g. Relu,Conv",
		Parse: func(s string) (string, error) {
			ops := disabledOps(s)
			list := make([]string, 0, len(ops))
			for _, f := range strings.Split(s, ",") {
				if op := strings.TrimSpace(f); op != "" && ops[op] {
					list = append(list, op)
					delete(ops, op)
				}
			}
			return strings.Join(list, ","), nil
		},
	}
}

// disabledOps parses a GPU_DISABLED_OPS value into a set of op types.
func disabledOps(s string) map[string]bool {
	ops := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		if op := strings.TrimSpace(f); op != "" {
			ops[op] = true
		}
	}
	return ops
}

// disabledIn returns the op types GPU_DISABLED_OPS lists in cfg.
func disabledIn(cfg *driver.Properties) map[string]bool {
	v, err := cfg.Get(KeyDisabledOps)
	if err != nil {
		return nil
	}
	return disabledOps(v)
}

// defaultCacheMode is CACHE_MODE's default on d: OPTIMIZE_SPEED where the
// driver hands over the binary it built, OPTIMIZE_SIZE where it would
// compile every kernel again to make one (POCL), which its own kernel
// cache makes needless on the machine that compiled.
func defaultCacheMode(d *device) string {
	if d.binariesOnDemand {
		return driver.CacheModeOptimizeSize
	}
	return driver.CacheModeOptimizeSpeed
}

// KeyCommandBuffers is GPU_COMMAND_BUFFERS: YES (the default) records each
// plan's launches as one command buffer (cl_khr_command_buffer) on a
// device that has the extension, and enqueues them in one call per
// inference; NO, or a device without it, enqueues them one by one.
const KeyCommandBuffers = "GPU_COMMAND_BUFFERS"

// KeySharedHostIO is GPU_SHARED_HOST_IO: YES (the default), on a device
// whose memory is the host's (CL_DEVICE_HOST_UNIFIED_MEMORY: POCL,
// integrated GPUs) and that shares fine-grained buffer SVM with it, keeps
// the activation buffers that hold a request's inputs and outputs in that
// shared memory: the host copies an input into place before the launches
// and an output out after the wait, so an inference enqueues no write or
// read command (a small model: one launch or command buffer and one
// wait). NO, or any other device, writes and reads them with transfer
// commands.
const KeySharedHostIO = "GPU_SHARED_HOST_IO"

// KeyWaitSpin is GPU_WAIT_SPIN_US: how many microseconds an inference's
// wait for the device polls the last command's status, yielding the
// processor between polls, before it blocks in clWaitForEvents (0: block
// at once), or AUTO (the default): latencySpinUS under PERFORMANCE_HINT
// LATENCY, 0 under the throughput hints, whose requests in flight want
// every core for the device. A blocking wait puts the thread to sleep and
// the driver wakes it when the command completes: tens of microseconds on
// an idle machine (POCL signals a condition variable), more than a small
// model's kernels take. Polling spends up to the bound of one core per
// inference for that, as ONNX Runtime's intra-op threads spin by default
// (allow_spinning); a request whose last inference outlasted the bound
// from its enqueue to the end of its wait blocks at once (spinFor), so a
// larger model's waits do not poll beside kernels that want every core,
// and so does a wait while another GPU inference of the process is in
// flight (inFlight): concurrent requests' polls would take the cores
// their kernels run on.
const KeyWaitSpin = "GPU_WAIT_SPIN_US"

// latencySpinUS is GPU_WAIT_SPIN_US=AUTO's bound under the latency hint.
const latencySpinUS = 100

// valueAuto is the AUTO of GPU_WAIT_SPIN_US.
const valueAuto = "AUTO"

// maxSpinUS is the longest GPU_WAIT_SPIN_US bound, 1 s: a longer poll
// is a busy core, never a latency gain (and the bound stays far from
// overflowing a time.Duration or the C clock arithmetic).
const maxSpinUS = 1000000

// waitSpinSpec is GPU_WAIT_SPIN_US: AUTO or a whole number of
// microseconds, at most maxSpinUS.
func waitSpinSpec() driver.PropertySpec {
	return driver.PropertySpec{
		Key: KeyWaitSpin, Mutable: true, Default: valueAuto,
		Accepted: "AUTO, or an integer from 0 to 1000000 (microseconds)",
		Parse: func(s string) (string, error) {
			s = strings.TrimSpace(s)
			if strings.EqualFold(s, valueAuto) {
				return valueAuto, nil
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || n > maxSpinUS {
				return "", fmt.Errorf("neither AUTO nor an integer from 0 to %d", maxSpinUS)
			}
			return strconv.Itoa(n), nil
		},
	}
}

// waitSpinOf is the bound GPU_WAIT_SPIN_US gives under cfg (AUTO: by
// PERFORMANCE_HINT).
func waitSpinOf(cfg *driver.Properties, hint driver.PerformanceHint) time.Duration {
	v, err := cfg.Get(KeyWaitSpin)
	if err != nil {
		return 0
	}
	if v == valueAuto {
		if hint != driver.HintLatency {
			return 0
		}
		return latencySpinUS * time.Microsecond
	}
	us, err := strconv.Atoi(v)
	if err != nil {
		return 0
	}
	return time.Duration(us) * time.Microsecond
}

// Limits the device reports for planning; the engine itself has none.
const (
	maxAsyncRequests = 16
	maxStreams       = 2
)

// propertySpecs are the specs of one device: the common read-write ones,
// INFERENCE_PRECISION_HINT restricted to what the device computes in,
// DEVICE_ID, and the device's read-only facts.
func (p *Plugin) propertySpecs(d *device) []driver.PropertySpec {
	caps := []string{"FP32"}
	if d.hasFP16() {
		caps = append(caps, "FP16")
	}
	// INT8: quantized models (QDQ, the integer ops) run int8 kernels
	// (lower_quant_fused.go) whatever INFERENCE_PRECISION_HINT says.
	caps = append(caps, "INT8", "EXPORT_IMPORT") // export.go: Export and ImportModel
	devType := "discrete"
	if d.integrated {
		devType = "integrated"
	}
	specs := append(driver.CommonSpecs(), fusion.PropertySpecs()...)
	specs = append(specs,
		precisionSpec(d),
		disabledOpsSpec(),
		driver.StringSpec(driver.KeyMakeStateful, ""),
		driver.EnumSpec(driver.KeyCacheMode, defaultCacheMode(d), driver.CacheModeOptimizeSpeed, driver.CacheModeOptimizeSize),
		hintSpec(d, driver.KeyQueuePriority, "cl_khr_priority_hints"),
		hintSpec(d, driver.KeyQueueThrottle, "cl_khr_throttle_hints"),
		hostTaskPrioritySpec(),
		memorySpec(d),
		driver.BoolSpec(KeyCommandBuffers, true),
		driver.BoolSpec(KeySharedHostIO, true),
		waitSpinSpec(),
		inThreadSpec(),
		// With THROUGHPUT, Core.CompileModel batches requests on the BATCH
		// device (OpenVINO's automatic batching, on by default for GPUs).
		driver.BoolSpec(driver.KeyAllowAutoBatching, true),
		driver.PropertySpec{
			Key: driver.KeyDeviceID, Mutable: true, Default: d.id(),
			Accepted: p.idList(", ") + " (or " + DeviceName + ".ID)",
			Parse: func(s string) (string, error) {
				n, err := p.parseDeviceID(s)
				if err != nil {
					return "", errors.New("no such device")
				}
				return strconv.Itoa(n), nil
			},
		},
		driver.ReadOnlySpec(driver.KeyAvailableDevices, p.idList(" ")),
		driver.ReadOnlySpec(driver.KeyFullDeviceName, d.fullName),
		driver.ReadOnlySpec(driver.KeyDeviceArchitecture, d.architecture),
		driver.ReadOnlySpec(driver.KeyDeviceType, devType),
		driver.ReadOnlySpec(driver.KeyOptimizationCapabilities, strings.Join(caps, " ")),
		driver.ReadOnlySpec(driver.KeyDeviceTotalMemSize, strconv.FormatInt(d.memSize, 10)),
		driver.ReadOnlySpec(driver.KeyRangeForAsyncInferRequests, fmt.Sprintf("1 %d 1", maxAsyncRequests)),
		driver.ComputedSpec(driver.KeyOptimalNumberOfInferRequests, func() (string, error) {
			return strconv.Itoa(optimalRequests(d.props, d)), nil
		}),
	)
	specs = append(specs, tuningSpecs()...)
	specs = append(specs, driver.StreamSpecs(maxStreams)...)
	if d.uuid != "" {
		specs = append(specs, driver.ReadOnlySpec(driver.KeyDeviceUUID, d.uuid))
	}
	for i := range specs {
		if runtimeOnlyKeys[specs[i].Key] {
			specs[i].RuntimeOnly = true
		}
	}
	return specs
}

// runtimeOnlyKeys are the read-write keys that change how a compiled
// model's requests run but not its plan, programs or weights, so the
// model cache leaves them out of its key and an import accepts a blob's
// recorded plan whatever they were (driver.PropertySpec.RuntimeOnly): the
// wait's polling (GPU_WAIT_SPIN_US), command buffers (recorded per
// request from the plan's launches), shared input and output memory (a
// request's choice of buffers, GPU_SHARED_HOST_IO), the hints of the queues requests
// make, the host threads' priority, profiling (events per request), and
// PERFORMANCE_HINT with what it derives (streams, requests, the AUTO of
// GPU_WAIT_SPIN_US): the GPU's planning and heuristics read none of them.
// LOG_LEVEL is not one (it changes the build options: -w), nor is
// ALLOW_AUTO_BATCHING (it decides which device compiles).
var runtimeOnlyKeys = map[string]bool{
	KeyWaitSpin:                      true,
	KeyCommandBuffers:                true,
	KeySharedHostIO:                  true,
	driver.KeyQueuePriority:          true,
	driver.KeyQueueThrottle:          true,
	driver.KeyHostTaskPriority:       true,
	driver.KeyEnableProfiling:        true,
	driver.KeyPerformanceHint:        true,
	driver.KeyNumRequests:            true,
	driver.KeyNumStreams:             true,
	driver.KeyExclusiveAsyncRequests: true,
}

// precisionSpec is INFERENCE_PRECISION_HINT: f32 everywhere, f16 only on
// devices with cl_khr_fp16; asking for f16 elsewhere names the device and
// the missing extension.
func precisionSpec(d *device) driver.PropertySpec {
	accepted := "f32"
	if d.hasFP16() {
		accepted = "f32, f16"
	}
	return driver.PropertySpec{
		Key: driver.KeyInferencePrecisionHint, Mutable: true, Default: tensor.F32.String(),
		Accepted: accepted,
		Parse: func(s string) (string, error) {
			t, err := tensor.ParseElementType(s)
			if err != nil {
				return "", errors.New("not an element type")
			}
			switch {
			case t == tensor.F32:
				return t.String(), nil
			case t == tensor.F16 && d.hasFP16():
				return t.String(), nil
			case t == tensor.F16:
				return "", fmt.Errorf("device %s (%s) lacks the cl_khr_fp16 extension f16 needs; use f32 (the default)", d.name(), d.fullName)
			}
			return "", fmt.Errorf("%s is not supported by device %s", t, d.name())
		},
	}
}

// optimalRequests is what driver.PlanStreams plans for the device: 1 for
// the latency hint, two requests per stream (one uploading while the other
// computes) for the throughput hints, capped by NUM_REQUESTS.
func optimalRequests(props *driver.Properties, d *device) int {
	if props == nil {
		return 1
	}
	cfg, err := driver.ParseConfig(props)
	if err != nil {
		return 1
	}
	return driver.PlanStreams(cfg, deviceFacts(d)).Requests
}

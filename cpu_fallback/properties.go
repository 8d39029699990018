package cpufallback

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/cpu"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// DeviceName is the name the CPU device is registered under.
const DeviceName = "CPU"

// optimizationCapabilities lists what the device accepts: f32 inference
// (INFERENCE_PRECISION_HINT takes only f32; f16 models run with their
// tensors converted to f32 in the kernels, which is not FP16 inference),
// int8 inference of quantized models (QDQ and the integer ops run as the
// fused integer ops, ref/ops_quant_fused.go) and export/import (export.go).
const optimizationCapabilities = "FP32 INT8 EXPORT_IMPORT"

// propertySpecs are the CPU device's properties: the common read-write
// ones, with INFERENCE_PRECISION_HINT restricted to f32, and its read-only
// facts.
func propertySpecs(p *Plugin) []driver.PropertySpec {
	procs := runtime.GOMAXPROCS(0)
	specs := append(driver.CommonSpecs(), fusion.PropertySpecs()...)
	return append(append(specs,
		driver.PrecisionSpec(tensor.F32, tensor.F32),
		driver.ReadOnlySpec(driver.KeyAvailableDevices, DeviceName),
		driver.ReadOnlySpec(driver.KeyFullDeviceName, fullDeviceName()),
		driver.ReadOnlySpec(driver.KeyDeviceArchitecture, deviceArchitecture()),
		driver.ReadOnlySpec(driver.KeyOptimizationCapabilities, optimizationCapabilities),
		driver.ReadOnlySpec(driver.KeyRangeForAsyncInferRequests, fmt.Sprintf("1 %d 1", procs)),
		driver.ComputedSpec(driver.KeyOptimalNumberOfInferRequests, func() (string, error) {
			return strconv.Itoa(optimalRequests(p.core.Props())), nil
		}),
	), driver.StreamSpecs(procs)...)
}

// optimalRequests is 1 for latency (one request keeps every core busy
// through the parallel kernels) and GOMAXPROCS for throughput hints.
func optimalRequests(props *driver.Properties) int {
	if props == nil {
		return 1
	}
	conf, err := driver.ParseConfig(props)
	if err != nil {
		return 1
	}
	return driver.PlanStreams(conf, deviceFacts()).Requests
}

// fullDeviceName is the processor's model name from /proc/cpuinfo, or the
// Go architecture where that file is missing.
func fullDeviceName() string {
	f, err := os.Open("/proc/cpuinfo")
	if err == nil {
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			k, v, ok := strings.Cut(s.Text(), ":")
			if ok && strings.TrimSpace(k) == "model name" && strings.TrimSpace(v) != "" {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH + " CPU"
}

// deviceArchitecture is GOARCH followed by the SIMD features the CPU has.
func deviceArchitecture() string {
	parts := []string{runtime.GOARCH}
	add := func(on bool, name string) {
		if on {
			parts = append(parts, name)
		}
	}
	switch runtime.GOARCH {
	case "amd64", "386":
		add(cpu.X86.HasSSE42, "sse4.2")
		add(cpu.X86.HasAVX, "avx")
		add(cpu.X86.HasAVX2, "avx2")
		add(cpu.X86.HasFMA, "fma")
		add(cpu.X86.HasAVX512F, "avx512f")
		add(cpu.X86.HasAVX512BF16, "avx512bf16")
	case "arm64":
		add(cpu.ARM64.HasASIMD, "asimd")
		add(cpu.ARM64.HasFPHP, "fphp")
		add(cpu.ARM64.HasASIMDHP, "asimdhp")
		add(cpu.ARM64.HasSVE, "sve")
	}
	return strings.Join(parts, " ")
}

package clbackend

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/plugin"
	"github.com/clinfer/clinfer/tensor"
)

// DeviceName is the name the GPU device is registered under.
const DeviceName = "GPU"

// Limits the device reports for planning; the engine itself has none.
const (
	maxAsyncRequests = 16
	maxStreams       = 2
)

// propertySpecs are the specs of one device: the common read-write ones,
// INFERENCE_PRECISION_HINT restricted to what the device computes in,
// DEVICE_ID, and the device's read-only facts.
func (p *Plugin) propertySpecs(d *device) []plugin.PropertySpec {
	caps := []string{"FP32"}
	if d.fp16 {
		caps = append(caps, "FP16")
	}
	caps = append(caps, "INT8")
	devType := "discrete"
	if d.integrated {
		devType = "integrated"
	}
	specs := append(plugin.CommonSpecs(),
		precisionSpec(d),
		plugin.PropertySpec{
			Key: plugin.KeyDeviceID, Mutable: true, Default: d.id(),
			Accepted: p.idList(", ") + " (or " + DeviceName + ".ID)",
			Parse: func(s string) (string, error) {
				n, err := p.parseDeviceID(s)
				if err != nil {
					return "", errors.New("no such device")
				}
				return strconv.Itoa(n), nil
			},
		},
		plugin.ReadOnlySpec(plugin.KeyAvailableDevices, p.idList(" ")),
		plugin.ReadOnlySpec(plugin.KeyFullDeviceName, d.fullName),
		plugin.ReadOnlySpec(plugin.KeyDeviceArchitecture, d.architecture),
		plugin.ReadOnlySpec(plugin.KeyDeviceType, devType),
		plugin.ReadOnlySpec(plugin.KeyOptimizationCapabilities, strings.Join(caps, " ")),
		plugin.ReadOnlySpec(plugin.KeyDeviceTotalMemSize, strconv.FormatInt(d.memSize, 10)),
		plugin.ReadOnlySpec(plugin.KeyRangeForAsyncInferRequests, fmt.Sprintf("1 %d 1", maxAsyncRequests)),
		plugin.ReadOnlySpec(plugin.KeyRangeForStreams, fmt.Sprintf("1 %d", maxStreams)),
		plugin.ComputedSpec(plugin.KeyOptimalNumberOfInferRequests, func() (string, error) {
			return strconv.Itoa(optimalRequests(d.props, d)), nil
		}),
	)
	if d.uuid != "" {
		specs = append(specs, plugin.ReadOnlySpec(plugin.KeyDeviceUUID, d.uuid))
	}
	return specs
}

// precisionSpec is INFERENCE_PRECISION_HINT: f32 everywhere, f16 only on
// devices with cl_khr_fp16; asking for f16 elsewhere names the device and
// the missing extension.
func precisionSpec(d *device) plugin.PropertySpec {
	accepted := "f32"
	if d.fp16 {
		accepted = "f32, f16"
	}
	return plugin.PropertySpec{
		Key: plugin.KeyInferencePrecisionHint, Mutable: true, Default: tensor.F32.String(),
		Accepted: accepted,
		Parse: func(s string) (string, error) {
			t, err := tensor.ParseElementType(s)
			if err != nil {
				return "", errors.New("not an element type")
			}
			switch {
			case t == tensor.F32:
				return t.String(), nil
			case t == tensor.F16 && d.fp16:
				return t.String(), nil
			case t == tensor.F16:
				return "", fmt.Errorf("device %s (%s) lacks the cl_khr_fp16 extension f16 needs", d.name(), d.fullName)
			}
			return "", fmt.Errorf("%s is not supported by device %s", t, d.name())
		},
	}
}

// optimalRequests is what plugin.PlanStreams plans for the device: 1 for
// the latency hint, two requests per stream (one uploading while the other
// computes) for the throughput hints, capped by NUM_REQUESTS.
func optimalRequests(props *plugin.Properties, d *device) int {
	if props == nil {
		return 1
	}
	cfg, err := plugin.ParseConfig(props)
	if err != nil {
		return 1
	}
	return plugin.PlanStreams(cfg, deviceFacts(d)).Requests
}

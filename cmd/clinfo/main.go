package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/clbackend/cl"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is clinfo with its arguments and output streams; it returns the exit
// status: 0 on success, 1 when OpenCL offers no device, 2 on a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("clinfo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: clinfo [-json]")
		fmt.Fprintln(stderr, "Lists the OpenCL platforms and devices clinfer can use.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "clinfo: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}

	r, err := collect()
	if err != nil {
		explain(stderr, err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintf(stderr, "clinfo: %v\n", err)
			return 1
		}
		return 0
	}
	printText(stdout, r)
	return 0
}

// report is what clinfo prints; its JSON form is the -json output.
type report struct {
	Platforms []platformReport `json:"platforms"`
}

type platformReport struct {
	Index int `json:"index"`
	cl.PlatformInfo
	Error   string         `json:"error,omitempty"`
	Devices []deviceReport `json:"devices"`
}

type deviceReport struct {
	Index int `json:"index"`
	cl.DeviceInfo
	Error   string      `json:"error,omitempty"`
	Clinfer *pluginView `json:"clinfer,omitempty"`
}

// errNoDevice is returned by collect when there are platforms but no device.
var errNoDevice = errors.New("no OpenCL device on any platform")

// collect queries every platform and device. A query that fails for one
// device is recorded in the report; only the absence of any device is an
// error.
func collect() (*report, error) {
	platforms, err := cl.GetPlatforms()
	if err != nil {
		return nil, err
	}
	r := &report{}
	ordinal, devices := 0, 0
	for i, p := range platforms {
		pr := platformReport{Index: i, Devices: []deviceReport{}}
		pr.PlatformInfo, err = p.Info()
		if err != nil {
			pr.Error = err.Error()
		}
		ds, err := p.GetDevices(cl.DeviceTypeAll)
		if err != nil && !errors.Is(err, cl.ErrDeviceNotFound) {
			pr.Error = err.Error()
		}
		for j, d := range ds {
			dr := deviceReport{Index: j}
			dr.DeviceInfo, err = d.Info()
			if err != nil {
				dr.Error = err.Error()
			}
			dr.Clinfer = viewOf(d, ordinal)
			ordinal++
			pr.Devices = append(pr.Devices, dr)
		}
		devices += len(ds)
		r.Platforms = append(r.Platforms, pr)
	}
	if devices == 0 {
		return nil, fmt.Errorf("%w (%d platform(s) found)", errNoDevice, len(platforms))
	}
	return r, nil
}

// explain tells a user without usable OpenCL what is missing and how to fix it.
func explain(w io.Writer, err error) {
	switch {
	case errors.Is(err, cl.ErrNotBuilt):
		fmt.Fprintf(w, `clinfo: %v
This clinfo was built without OpenCL support (CGO_ENABLED=0 or -tags noopencl).
To fix, rebuild it with cgo and the OpenCL development files:
  apt-get install gcc ocl-icd-opencl-dev opencl-headers
  CGO_ENABLED=1 go build ./cmd/clinfo
`, err)
		return
	case errors.Is(err, cl.ErrPlatformNotFound):
		fmt.Fprintf(w, `clinfo: no OpenCL platform found (%v).
The OpenCL ICD loader found no driver: no *.icd file in /etc/OpenCL/vendors
(or in $OCL_ICD_VENDORS) names a library that loads.
`, err)
	case errors.Is(err, errNoDevice):
		fmt.Fprintf(w, "clinfo: %v.\nAn OpenCL driver is installed but offers no device (is the GPU driver loaded?).\n", err)
	default:
		fmt.Fprintf(w, "clinfo: cannot list OpenCL devices: %v.\n", err)
	}
	fmt.Fprint(w, `clinfer's GPU device needs an OpenCL 1.2 (or later) driver. To fix, install one:
  any CPU, for testing:  apt-get install pocl-opencl-icd
  NVIDIA GPU:            the NVIDIA driver's OpenCL ICD (apt-get install nvidia-opencl-icd)
  Intel GPU:             apt-get install intel-opencl-icd
  AMD GPU:               ROCm's OpenCL runtime (rocm-opencl-runtime)
and the ICD loader: apt-get install ocl-icd-libopencl1
`)
}

func printText(w io.Writer, r *report) {
	for _, p := range r.Platforms {
		fmt.Fprintf(w, "Platform #%d: %s\n", p.Index, p.Name)
		row(w, 1, "Vendor", p.Vendor)
		row(w, 1, "Version", p.Version)
		row(w, 1, "Profile", p.Profile)
		if p.ICDSuffix != "" {
			row(w, 1, "ICD suffix", p.ICDSuffix)
		}
		wrapped(w, 1, "Extensions", p.Extensions)
		if p.Error != "" {
			row(w, 1, "Error", p.Error)
		}
		if len(p.Devices) == 0 {
			row(w, 1, "Devices", "none")
		}
		for _, d := range p.Devices {
			fmt.Fprintln(w)
			printDevice(w, &d)
		}
		fmt.Fprintln(w)
	}
}

func printDevice(w io.Writer, d *deviceReport) {
	fmt.Fprintf(w, "  Device #%d: %s\n", d.Index, d.Name)
	row(w, 2, "Type", d.Type.String())
	row(w, 2, "Vendor", fmt.Sprintf("%s (vendor ID 0x%04x)", d.Vendor, d.VendorID))
	row(w, 2, "Version", d.Version)
	row(w, 2, "Driver version", d.DriverVersion)
	row(w, 2, "OpenCL C version", d.OpenCLCVersion)
	row(w, 2, "Profile", d.Profile)
	row(w, 2, "Available", fmt.Sprintf("%s (compiler %s, linker %s)", yes(d.Available), yes(d.CompilerAvailable), yes(d.LinkerAvailable)))
	row(w, 2, "Compute units", strconv.Itoa(d.MaxComputeUnits))
	row(w, 2, "Max clock", fmt.Sprintf("%d MHz", d.MaxClockFrequencyMHz))
	row(w, 2, "Global memory", fmt.Sprintf("%s (cache %s, %d-byte lines)", size(d.GlobalMemSize), size(d.GlobalMemCacheSize), d.GlobalMemCachelineSize))
	row(w, 2, "Local memory", fmt.Sprintf("%s (%s)", size(d.LocalMemSize), d.LocalMemType))
	row(w, 2, "Max allocation", size(d.MaxMemAllocSize))
	row(w, 2, "Max constant buffer", size(d.MaxConstantBufferSize))
	row(w, 2, "Max kernel argument size", size(int64(d.MaxParameterSize)))
	row(w, 2, "Base address alignment", fmt.Sprintf("%d bits", d.MemBaseAddrAlignBits))
	row(w, 2, "Max work-group size", strconv.Itoa(d.MaxWorkGroupSize))
	row(w, 2, "Max work-item sizes", joinInts(d.MaxWorkItemSizes, " x "))
	if d.MaxNumSubGroups > 0 {
		row(w, 2, "Max sub-groups", strconv.Itoa(d.MaxNumSubGroups))
	}
	row(w, 2, "Preferred vector widths", widths(d.PreferredVectorWidths))
	row(w, 2, "Native vector widths", widths(d.NativeVectorWidths))
	row(w, 2, "Single precision", d.SingleFPConfig.String())
	row(w, 2, "Half precision (fp16)", fpSupport(d.FP16, d.HalfFPConfig))
	row(w, 2, "Double precision (fp64)", fpSupport(d.FP64, d.DoubleFPConfig))
	endian := "big endian"
	if d.EndianLittle {
		endian = "little endian"
	}
	row(w, 2, "Address bits", fmt.Sprintf("%d, %s", d.AddressBits, endian))
	row(w, 2, "Unified host memory", yes(d.HostUnifiedMemory))
	row(w, 2, "Error correction", yes(d.ErrorCorrectionSupport))
	row(w, 2, "Image support", yes(d.ImageSupport))
	row(w, 2, "Queue properties", d.QueueProperties.String())
	row(w, 2, "Profiling resolution", d.ProfilingTimerResolution.String())
	if d.UUID != nil {
		row(w, 2, "UUID", d.UUID.String())
	}
	if d.DriverUUID != nil {
		row(w, 2, "Driver UUID", d.DriverUUID.String())
	}
	wrapped(w, 2, "Extensions", d.Extensions)
	if d.Error != "" {
		row(w, 2, "Error", d.Error)
	}
	if v := d.Clinfer; v != nil {
		printPluginView(w, v)
	}
}

func printPluginView(w io.Writer, v *pluginView) {
	fmt.Fprintf(w, "    clinfer: %s\n", v.Device)
	keys := make([]string, 0, len(v.Properties))
	for k := range v.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		row(w, 3, k, v.Properties[k])
	}
	if v.Error != "" {
		row(w, 3, "Error", v.Error)
	}
}

// row prints one "name  value" line, indented by level.
func row(w io.Writer, level int, name, value string) {
	indent := strings.Repeat("  ", level)
	fmt.Fprintf(w, "%s%-*s %s\n", indent, 34-len(indent), name, value)
}

// wrapped prints words as a row, continued on further lines past 100 columns.
func wrapped(w io.Writer, level int, name string, words []string) {
	var lines []string
	line := ""
	for _, word := range words {
		if line != "" && len(line)+1+len(word) > 100-35 {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	lines = append(lines, line)
	row(w, level, name, lines[0])
	for _, l := range lines[1:] {
		row(w, level, "", l)
	}
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func fpSupport(ok bool, c cl.FPConfig) string {
	if !ok {
		return "no"
	}
	if c == 0 {
		return "yes"
	}
	return "yes (" + c.String() + ")"
}

func widths(v cl.VectorWidths) string {
	return fmt.Sprintf("char %d, short %d, int %d, long %d, float %d, double %d, half %d",
		v.Char, v.Short, v.Int, v.Long, v.Float, v.Double, v.Half)
}

func joinInts(s []int, sep string) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, sep)
}

// size formats a byte count with a binary unit.
func size(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

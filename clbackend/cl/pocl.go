package cl

import (
	"os"
	"strings"
	"sync/atomic"
)

// POCL's CPU devices and the in-thread companion.
//
// POCL (3.x) offers two drivers for the host CPU: pthread, which hands
// every command to worker threads (a condition-variable broadcast, 16-22
// us per launch on a 2-core box), and basic, which runs commands in the
// thread that flushes or waits for them on one core. Without POCL_DEVICES
// POCL offers pthread only, and it reads POCL_DEVICES once, when it sets
// its devices up (the first clGetDeviceIDs). So when POCL_DEVICES is
// unset, firstUse sets it to "pthread basic" for the drivers' set-up and
// unsets it again at once (child processes see what the user set), and
// Platform.GetDevices hides the basic device it asked for: it is not one
// more device but the pthread device's companion (InThreadCompanion),
// which package clbackend puts in the pthread device's context to run
// small plans in the calling thread. A POCL_DEVICES the user set is left
// alone, and the devices it lists are all listed (a basic device among
// them is also the companion of a pthread device of its platform).

// EnvPOCLDevices is the environment variable POCL reads its driver list
// from.
const EnvPOCLDevices = "POCL_DEVICES"

// poclCompanionDevices is what firstUse sets POCL_DEVICES to when it is
// unset.
const poclCompanionDevices = "pthread basic"

// hideBasic is set when firstUse listed POCL's basic driver itself.
var hideBasic atomic.Bool

// poclEnv prepares POCL_DEVICES for the drivers' set-up and returns what
// undoes it once they are set up.
func poclEnv() (restore func()) {
	if _, set := os.LookupEnv(EnvPOCLDevices); set || !Enabled {
		return func() {}
	}
	if os.Setenv(EnvPOCLDevices, poclCompanionDevices) != nil {
		return func() {}
	}
	hideBasic.Store(true)
	return func() { _ = os.Unsetenv(EnvPOCLDevices) }
}

// poclKind returns the POCL driver of a device ("pthread", "basic", ...)
// and its target ("x86_64-pc-linux-gnu-skylake-avx512") from its
// CL_DEVICE_VERSION ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-
// skylake-avx512"), or "" for a device of another driver.
func poclKind(version string) (driver, target string) {
	_, hstr, ok := strings.Cut(version, "PoCL HSTR: ")
	if !ok {
		return "", ""
	}
	hstr, _, _ = strings.Cut(strings.TrimSpace(hstr), " ")
	driver, target, ok = strings.Cut(hstr, "-")
	if !ok {
		return "", ""
	}
	return driver, target
}

// hidden reports whether GetDevices leaves d out: POCL's basic device that
// firstUse asked for as a companion.
func hidden(d *Device) bool {
	if !hideBasic.Load() {
		return false
	}
	v, err := d.Version()
	if err != nil {
		return false
	}
	drv, _ := poclKind(v)
	return drv == "basic"
}

// InThreadCompanion returns, for a POCL pthread device, the POCL basic
// device of the same platform and the same target (the same compiler,
// so that the two build the same code), or nil for any other device or
// where there is none. The companion runs commands in the thread that
// flushes or waits for them, with no hand-off to worker threads: a
// context holding both devices lets a small plan run there on the same
// buffers. It may be a device GetDevices hides (see EnvPOCLDevices).
func (d *Device) InThreadCompanion() *Device {
	if d == nil || d.platform == nil {
		return nil
	}
	v, err := d.Version()
	if err != nil {
		return nil
	}
	drv, target := poclKind(v)
	if drv != "pthread" {
		return nil
	}
	enumMu.Lock()
	ids, err := getDeviceIDs(d.platform.id, DeviceTypeAll)
	enumMu.Unlock()
	if err != nil {
		return nil
	}
	for _, id := range ids {
		o := &Device{id: id, platform: d.platform}
		ov, err := o.Version()
		if err != nil {
			continue
		}
		if od, ot := poclKind(ov); od == "basic" && ot == target {
			return o
		}
	}
	return nil
}

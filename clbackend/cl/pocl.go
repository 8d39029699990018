package cl

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
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
//
// Without POCL_DEVICES POCL sets up every driver it has installed (CUDA,
// Level Zero, remote, ... beside pthread); a list names only what it
// lists. So firstUse sets POCL_DEVICES only where the drivers installed
// beside the POCL the ICD loader names are exactly pthread and basic
// (Debian's pocl-opencl-icd): where POCL has others, or where they cannot
// be found, POCL_DEVICES stays unset, every driver is set up as POCL does
// by default, and the pthread device has no companion unless the user's
// POCL_DEVICES lists basic.

// EnvPOCLDevices is the environment variable POCL reads its driver list
// from.
const EnvPOCLDevices = "POCL_DEVICES"

// poclCompanionDevices is what firstUse sets POCL_DEVICES to when it is
// unset.
const poclCompanionDevices = "pthread basic"

// hideBasic is set when firstUse listed POCL's basic driver itself.
var hideBasic atomic.Bool

// userDrivers is the POCL_DEVICES the user set when POCL set its drivers
// up (nil where it was unset).
var userDrivers atomic.Pointer[string]

// poclOrder sorts ds, stably, in the order in which the POCL_DEVICES the
// user set names their drivers. POCL lists its devices in the order its
// drivers are built in (basic before pthread), whatever the order of
// POCL_DEVICES, so "pthread basic" would make the basic device, one core
// in the calling thread, GPU.0 and the pthread device GPU.1; the list's
// order is the user's (a device of a driver it does not name, or of
// another platform, keeps its place after the named ones).
func poclOrder(ds []*Device) {
	v := userDrivers.Load()
	if v == nil || len(ds) < 2 {
		return
	}
	rank := map[string]int{}
	for i, f := range strings.Fields(*v) {
		if _, dup := rank[f]; !dup {
			rank[f] = i
		}
	}
	key := func(d *Device) int {
		if r, ok := rank[poclDriver(d)]; ok {
			return r
		}
		return len(rank)
	}
	slices.SortStableFunc(ds, func(a, b *Device) int { return key(a) - key(b) })
}

// poclEnv prepares POCL_DEVICES for the drivers' set-up and returns what
// undoes it once they are set up.
func poclEnv() (restore func()) {
	if v, set := os.LookupEnv(EnvPOCLDevices); set || !Enabled {
		userDrivers.Store(&v)
		return func() {}
	}
	if !onlyCPUDrivers(poclInstalledDrivers()) {
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
	return hideBasic.Load() && poclDriver(d) == "basic"
}

// poclDriver is the POCL driver of d ("pthread", "basic"), or "" for a
// device of another driver or whose version cannot be read.
func poclDriver(d *Device) string {
	v, err := d.Version()
	if err != nil {
		return ""
	}
	drv, _ := poclKind(v)
	return drv
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

// poclDriverPrefix and poclDriverSuffix frame a loadable POCL driver's
// file name: libpocl-devices-pthread.so.
const (
	poclDriverPrefix = "libpocl-devices-"
	poclDriverSuffix = ".so"
)

// poclInstalledDrivers returns the names of the loadable drivers installed
// in the "pocl" folder beside every POCL library the ICD loader's vendor
// files name (OCL_ICD_VENDORS, else /etc/OpenCL/vendors), or nil where it
// finds no POCL or no driver folder.
func poclInstalledDrivers() []string {
	var names []string
	seen := map[string]bool{}
	for _, lib := range poclLibraries() {
		for _, dir := range libraryDirs(lib) {
			files, _ := filepath.Glob(filepath.Join(dir, "pocl", poclDriverPrefix+"*"+poclDriverSuffix))
			for _, f := range files {
				n := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), poclDriverPrefix), poclDriverSuffix)
				if !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
		}
	}
	return names
}

// onlyCPUDrivers reports whether drivers are exactly POCL's pthread and
// basic drivers: the only case in which listing them in POCL_DEVICES sets
// up every device POCL would set up without it, plus the companion.
func onlyCPUDrivers(drivers []string) bool {
	has := map[string]bool{}
	for _, d := range drivers {
		if d != "pthread" && d != "basic" {
			return false
		}
		has[d] = true
	}
	return has["pthread"] && has["basic"]
}

// poclLibraries returns the POCL libraries the ICD loader's vendor files
// name (a file name or a path), read where the loader reads them.
func poclLibraries() []string {
	dir := "/etc/OpenCL/vendors"
	var files []string
	if v := os.Getenv("OCL_ICD_VENDORS"); v != "" {
		if st, err := os.Stat(v); err == nil && !st.IsDir() {
			files = []string{v}
		} else {
			dir = v
		}
	}
	if files == nil {
		files, _ = filepath.Glob(filepath.Join(dir, "*.icd"))
	}
	var libs []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lib := strings.TrimSpace(string(b))
		if strings.Contains(filepath.Base(lib), "pocl") {
			libs = append(libs, lib)
		}
	}
	return libs
}

// libraryDirs returns the folders that hold lib: its own folder when it
// is a path, else the dynamic loader's usual folders (LD_LIBRARY_PATH
// first) where a file of that name exists.
func libraryDirs(lib string) []string {
	if filepath.IsAbs(lib) {
		return []string{filepath.Dir(lib)}
	}
	cands := filepath.SplitList(os.Getenv("LD_LIBRARY_PATH"))
	multiarch := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "386": "i386-linux-gnu"}[runtime.GOARCH]
	for _, root := range []string{"/usr/local/lib", "/usr/lib", "/lib"} {
		if multiarch != "" {
			cands = append(cands, filepath.Join(root, multiarch))
		}
		cands = append(cands, root+"64", root)
	}
	var dirs []string
	for _, d := range cands {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, lib)); err == nil {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

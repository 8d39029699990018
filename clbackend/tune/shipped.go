package tune

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/clinfer/clinfer/kernels"
)

// ShippedFormat is the format tag of a shipped tuning database
// (kernels/tuning/*.json).
const ShippedFormat = "clinfer-shipped-tuning-1"

// ShippedFile is the layout of a shipped tuning database: the records of a
// tuning file made on one device, with the names of the devices it serves.
type ShippedFile struct {
	Format string `json:"format"`
	// Device is the device and driver the records were made on (the
	// tuning file's).
	Device Device `json:"device"`
	// Name is that device's CL_DEVICE_NAME, Vendor its CL_DEVICE_VENDOR.
	Name   string `json:"name"`
	Vendor string `json:"vendor"`
	// Match are the CL_DEVICE_NAME prefixes of the devices the records
	// serve ("NVIDIA H100", "pthread-skylake-avx512": every POCL build for
	// that LLVM target, whatever the CPU model after it).
	Match []string `json:"match"`
	// Source says how the records were made (the bundle, the models and
	// the tuning mode).
	Source  string            `json:"source"`
	Entries map[string]Record `json:"entries"`
}

// Shipped is the shipped tuning database chosen for a device: read-only
// records the GPU device consults after the user's own tuning file.
type Shipped struct {
	// File is the database's file name in kernels/tuning.
	File string
	// SameDriver is set when its records were made with the device's
	// driver version.
	SameDriver bool
	entries    map[string]Record
}

// Lookup returns the shipped record of key.
func (s *Shipped) Lookup(key string) (Record, bool) {
	if s == nil {
		return Record{}, false
	}
	r, ok := s.entries[key]
	return r, ok
}

// Len returns the number of records.
func (s *Shipped) Len() int {
	if s == nil {
		return 0
	}
	return len(s.entries)
}

// ChooseShipped picks the shipped database for a device called name with
// driver version driver (CLBlast-style, by device name and driver): among
// the databases one of whose Match prefixes starts name, the longest
// prefix wins, then one made with the same driver, then the file name. It
// returns nil when none matches. A database that cannot be read is an
// error naming it (a build with a broken kernels/tuning file: its tests
// fail); the others are still chosen from.
func ChooseShipped(name, driver string) (*Shipped, error) {
	names, data := kernels.ShippedTuning()
	return ChooseShippedFrom(names, data, name, driver)
}

// ChooseShippedFrom is ChooseShipped over the databases data (file names
// names) instead of the embedded ones.
func ChooseShippedFrom(names []string, data [][]byte, name, driver string) (*Shipped, error) {
	var best *Shipped
	bestLen := -1
	var errs []string
	for i, fname := range names {
		f, err := ParseShipped(data[i])
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", fname, err))
			continue
		}
		n := -1
		for _, m := range f.Match {
			if m != "" && strings.HasPrefix(name, m) && len(m) > n {
				n = len(m)
			}
		}
		if n < 0 {
			continue
		}
		same := f.Device.Driver == driver
		if n > bestLen || (n == bestLen && same && !best.SameDriver) {
			best, bestLen = &Shipped{File: fname, SameDriver: same, entries: f.Entries}, n
		}
	}
	if len(errs) > 0 {
		return best, fmt.Errorf("tune: shipped tuning databases: %s: %w", strings.Join(errs, "; "), ErrFile)
	}
	return best, nil
}

// ParseShipped reads a shipped database, checking its format and that
// every record names a declared variant.
func ParseShipped(b []byte) (*ShippedFile, error) {
	var f ShippedFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	if f.Format != ShippedFormat {
		return nil, fmt.Errorf("format %q, not %q", f.Format, ShippedFormat)
	}
	if len(f.Match) == 0 {
		return nil, fmt.Errorf("no device name prefixes (match)")
	}
	for k, r := range f.Entries {
		if _, err := kernels.ParseVariant(r.Variant); err != nil {
			return nil, fmt.Errorf("record %q: %w", k, err)
		}
	}
	return &f, nil
}

// ShippedName is the file name of the shipped database of a device with
// CL_DEVICE_NAME name and CL_DEVICE_VENDOR vendor:
// "<vendor>-<device>.json" in lower case, runs of other characters as
// one "-" (a POCL device is named by its LLVM target alone:
// "pocl-pthread-skylake-avx512.json").
func ShippedName(name, vendor string) string {
	return slug(shippedVendor(name, vendor)+"-"+shippedMatch(name)) + ".json"
}

// shippedMatch is the device-name prefix a shipped database of a device
// called name serves: the POCL target ("pthread-skylake-avx512") for a
// POCL device, the whole name otherwise.
func shippedMatch(name string) string {
	if m := poclTarget.FindString(name); m != "" {
		return strings.TrimSuffix(m, "-")
	}
	return name
}

// poclTarget matches the LLVM target part of a POCL device's name.
var poclTarget = regexp.MustCompile(`^(pthread|basic|cpu)-[a-z0-9_.]+(-avx512)?-`)

// shippedVendor is the vendor part of a shipped database's name.
func shippedVendor(name, vendor string) string {
	if poclTarget.MatchString(name) {
		return "pocl"
	}
	v := strings.ToLower(vendor)
	for _, short := range []string{"nvidia", "amd", "intel", "arm", "qualcomm", "apple", "imagination"} {
		if strings.Contains(v, short) {
			return short
		}
	}
	if strings.Contains(v, "advanced micro devices") {
		return "amd"
	}
	return v
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

func slug(s string) string {
	return strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// WriteShipped makes the shipped database of the device a tuning file was
// made on, from the tuning files paths (cmd/tune's or a device bundle's
// tune-cache, merged: an exhaustive record beats a budgeted one), into
// dir/ShippedName(name, vendor). source says how they were made. It
// returns the path written.
func WriteShipped(dir, name, vendor, source string, paths []string) (string, error) {
	out := ShippedFile{Format: ShippedFormat, Name: name, Vendor: vendor, Match: []string{shippedMatch(name)},
		Source: source, Entries: map[string]Record{}}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		var f file
		if err := json.Unmarshal(b, &f); err != nil || f.Format != Format {
			return "", fmt.Errorf("tune: %s is not a tuning file (%v): %w", p, err, ErrFile)
		}
		if out.Device.Architecture == "" {
			out.Device = f.Device
		} else if f.Device != out.Device {
			return "", fmt.Errorf("tune: %s was made on %s, driver %s, and %s on %s, driver %s: one device per shipped database",
				p, f.Device.Architecture, f.Device.Driver, paths[0], out.Device.Architecture, out.Device.Driver)
		}
		merge(out.Entries, f.Entries)
	}
	if len(out.Entries) == 0 {
		return "", fmt.Errorf("tune: no tuning records in %s", strings.Join(paths, ", "))
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("tune: shipped tuning directory: %w", err)
	}
	path := filepath.Join(dir, ShippedName(name, vendor))
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

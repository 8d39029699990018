package tune

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/clinfer/clinfer/kernels"
)

// Format is the format tag of a tuning file; a change of the file's layout
// bumps it, and a file with another tag is rebuilt.
const Format = "clinfer-tuning-1"

// ErrFile is wrapped by the report of a tuning file that cannot be
// trusted: corrupt, truncated, of another format, or made on another
// device. Such a file is ignored and rebuilt by the next save.
var ErrFile = errors.New("tune: tuning file not usable")

// Device identifies the device a tuning file belongs to.
type Device struct {
	// Architecture is the GPU device's DEVICE_ARCHITECTURE.
	Architecture string `json:"architecture"`
	// Driver is the OpenCL driver version.
	Driver string `json:"driver"`
}

// Record is the choice tuning made for one key.
type Record struct {
	// Variant is the chosen variant (kernels.Variant's String form).
	Variant string `json:"variant"`
	// Ms is its median time in milliseconds.
	Ms float64 `json:"ms"`
	// Heuristic is what the heuristics pick for the key, and HeuristicMs
	// its median time measured in the same run.
	Heuristic   string  `json:"heuristic"`
	HeuristicMs float64 `json:"heuristic_ms"`
	// Mode is the tuning mode that made the record.
	Mode string `json:"mode"`
	// Tried counts the candidates timed; Refused those the device could
	// not build or launch, or whose result differed from the reference.
	Tried   int `json:"tried"`
	Refused int `json:"refused"`
	// Confirmed is the model-level confirmation's verdict (cmd/tune): the
	// model, and the heuristics' and the variant's times in it; for a
	// record that keeps the heuristics, the variant it dropped.
	Confirmed string `json:"confirmed,omitempty"`
	// Updated is when the record was made (RFC 3339).
	Updated string `json:"updated"`
}

// better reports whether r should replace o: an exhaustive search beats a
// budgeted one; between equals the newer wins.
func (r Record) better(o Record) bool {
	if r.Mode != o.Mode {
		return r.Mode == Exhaustive.String()
	}
	return r.Updated >= o.Updated
}

// file is the JSON layout of a tuning file.
type file struct {
	Format  string            `json:"format"`
	Device  Device            `json:"device"`
	Entries map[string]Record `json:"entries"`
}

// DB is the tuning cache of one device: the records of a tuning file,
// kept in memory and saved atomically. It is safe for concurrent use;
// processes sharing the file merge their records under a file lock, so
// two processes tuning at once leave a valid file holding both.
type DB struct {
	path string
	dev  Device

	mu      sync.Mutex
	entries map[string]Record
	stamp   fileStamp // the file as last read
}

type fileStamp struct {
	size int64
	mod  time.Time
}

// FileName is the tuning file of a device under a cache directory: one
// file per DEVICE_ARCHITECTURE and driver.
func FileName(dir string, dev Device) string {
	h := sha256.Sum256([]byte(dev.Architecture + "\x00" + dev.Driver))
	return filepath.Join(dir, "clinfer-tuning-"+hex.EncodeToString(h[:8])+".json")
}

// Open reads the tuning file at path for device dev. A missing file is an
// empty DB. A file that cannot be trusted (corrupt, truncated, another
// format or another device) is not: the DB starts empty and the returned
// report, an error wrapping ErrFile that names the file and why, says so;
// the next Save replaces the file. Entries whose variant the kernel
// tables no longer declare are dropped, and reported the same way.
func Open(path string, dev Device) (*DB, error) {
	db := &DB{path: path, dev: dev, entries: map[string]Record{}}
	entries, stamp, err := read(path, dev)
	db.entries, db.stamp = entries, stamp
	return db, err
}

// Path returns the file the DB saves to.
func (db *DB) Path() string { return db.path }

// Device returns the device the DB belongs to.
func (db *DB) Device() Device { return db.dev }

// Lookup returns the record of key.
func (db *DB) Lookup(key string) (Record, bool) {
	db.mu.Lock()
	defer db.mu.Unlock()
	r, ok := db.entries[key]
	return r, ok
}

// Len returns the number of records.
func (db *DB) Len() int {
	db.mu.Lock()
	defer db.mu.Unlock()
	return len(db.entries)
}

// Keys returns the keys of the records, sorted.
func (db *DB) Keys() []string {
	db.mu.Lock()
	defer db.mu.Unlock()
	keys := make([]string, 0, len(db.entries))
	for k := range db.entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Put records the choice for key in memory; Save writes it.
func (db *DB) Put(key string, r Record) {
	if r.Updated == "" {
		r.Updated = time.Now().UTC().Format(time.RFC3339Nano)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	db.entries[key] = r
}

// Refresh re-reads the file when another process changed it since it was
// read, merging its records with the ones in memory. A file that cannot be
// trusted is reported as by Open, and the records in memory stay.
func (db *DB) Refresh() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	st, err := os.Stat(db.path)
	if err != nil || (st.Size() == db.stamp.size && st.ModTime().Equal(db.stamp.mod)) {
		return nil
	}
	entries, stamp, err := read(db.path, db.dev)
	db.stamp = stamp
	merge(db.entries, entries)
	return err
}

// Save writes the records to the file atomically (a temporary file in the
// same directory renamed over it), merged with what another process saved
// there meanwhile, under a lock on path + ".lock".
func (db *DB) Save() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	dir := filepath.Dir(db.path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("tune: tuning file %s: %w", db.path, err)
	}
	unlock, err := lockFile(db.path + ".lock")
	if err != nil {
		return fmt.Errorf("tune: tuning file %s: lock: %w", db.path, err)
	}
	defer unlock()
	// What another process saved since: an untrusted file is replaced.
	disk, _, _ := read(db.path, db.dev)
	merge(db.entries, disk)
	b, err := json.MarshalIndent(file{Format: Format, Device: db.dev, Entries: db.entries}, "", "  ")
	if err != nil {
		return fmt.Errorf("tune: tuning file %s: %w", db.path, err)
	}
	f, err := os.CreateTemp(dir, ".clinfer-tuning-*.tmp")
	if err != nil {
		return fmt.Errorf("tune: tuning file %s: %w", db.path, err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), db.path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("tune: tuning file %s: %w", db.path, err)
	}
	if st, err := os.Stat(db.path); err == nil {
		db.stamp = fileStamp{st.Size(), st.ModTime()}
	}
	return nil
}

// merge adds the records of src to dst where dst has none or src's is
// better.
func merge(dst, src map[string]Record) {
	for k, r := range src {
		if o, ok := dst[k]; !ok || r.better(o) {
			dst[k] = r
		}
	}
}

// read loads the trusted records of the file at path for dev. A missing
// file is no records and no error; an untrusted one is no records and an
// error wrapping ErrFile. Records with a variant the tables do not
// declare are dropped and reported.
func read(path string, dev Device) (map[string]Record, fileStamp, error) {
	out := map[string]Record{}
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return out, fileStamp{}, nil
		}
		return out, fileStamp{}, fmt.Errorf("tune: tuning file %s: %w: %w", path, ErrFile, err)
	}
	var stamp fileStamp
	if st, err := os.Stat(path); err == nil {
		stamp = fileStamp{st.Size(), st.ModTime()}
	}
	var f file
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return out, stamp, fmt.Errorf("tune: tuning file %s is corrupt or truncated (%v); it is ignored and rebuilt by the next tuning: %w", path, err, ErrFile)
	}
	if f.Format != Format {
		return out, stamp, fmt.Errorf("tune: tuning file %s has format %q, not %q; it is ignored and rebuilt by the next tuning: %w", path, f.Format, Format, ErrFile)
	}
	if f.Device != dev {
		return out, stamp, fmt.Errorf("tune: tuning file %s was made on another device (%s, driver %s), not %s, driver %s; it is ignored and rebuilt by the next tuning: %w",
			path, f.Device.Architecture, f.Device.Driver, dev.Architecture, dev.Driver, ErrFile)
	}
	var stale []string
	for k, r := range f.Entries {
		if _, err := kernels.ParseVariant(r.Variant); err != nil || r.Ms <= 0 {
			stale = append(stale, k)
			continue
		}
		out[k] = r
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		return out, stamp, fmt.Errorf("tune: tuning file %s: %d records name variants the kernel tables no longer declare (first: %q); they are ignored and replaced by the next tuning: %w", path, len(stale), stale[0], ErrFile)
	}
	return out, stamp, nil
}

package clbackend

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/plugin/driver"
)

// CacheStats counts what a plugin's program cache has done since New.
type CacheStats struct {
	// MemoryHits counts programs served from memory, already built.
	MemoryHits int64
	// SourceBuilds counts programs built from OpenCL C source.
	SourceBuilds int64
	// BinaryLoads counts programs loaded from a binary under CACHE_DIR.
	BinaryLoads int64
	// BinaryWrites counts binaries written to CACHE_DIR.
	BinaryWrites int64
	// BinaryRejects counts cache files that were corrupt, or that the
	// driver refused; each was replaced by a source build.
	BinaryRejects int64
	// WriteErrors counts binaries that could not be written to CACHE_DIR;
	// the build itself succeeded.
	WriteErrors int64
	// PlansRestored counts imports whose launch plan came from the blob's
	// plan record; PlanRecordsRefused those that planned the model again
	// because the record was damaged, of another version or stale.
	PlansRestored, PlanRecordsRefused int64
}

// ProgramCacheStats returns the program cache's counters.
func (p *Plugin) ProgramCacheStats() CacheStats { return p.cache.snapshot() }

// cacheMagic starts every program binary file; a format change bumps it.
const cacheMagic = "CLINFER-CLBIN-1\n"

// programCache builds each (device, source, options) program once and
// shares it among the compiled models of the plugin. With a CACHE_DIR it
// also keeps device binaries on disk, keyed by a SHA-256 of the device
// architecture, driver version, source and options, and loads them with
// clCreateProgramWithBinary on the next run.
type programCache struct {
	mu      sync.Mutex
	closed  bool
	entries map[string]*progEntry

	memoryHits, sourceBuilds, binaryLoads, binaryWrites, binaryRejects, writeErrors atomic.Int64
	plansRestored, planRecordsRefused                                               atomic.Int64
}

// progEntry is one program, or the build of one in progress (ready is
// closed when it ends).
type progEntry struct {
	ready chan struct{}
	prog  *shared[*cl.Program]
	err   error
	// dev is the device the program is built for.
	dev *device
	// unsaved is the CACHE_DIR file a program built from source is to be
	// written to once its first launches have run (saveBinaries), "" when
	// there is nothing to write.
	unsaved string
}

func newProgramCache() *programCache {
	return &programCache{entries: map[string]*progEntry{}}
}

func (c *programCache) snapshot() CacheStats {
	return CacheStats{
		MemoryHits:    c.memoryHits.Load(),
		SourceBuilds:  c.sourceBuilds.Load(),
		BinaryLoads:   c.binaryLoads.Load(),
		BinaryWrites:  c.binaryWrites.Load(),
		BinaryRejects: c.binaryRejects.Load(),
		WriteErrors:   c.writeErrors.Load(),

		PlansRestored:      c.plansRestored.Load(),
		PlanRecordsRefused: c.planRecordsRefused.Load(),
	}
}

// programKey is the hex SHA-256 that names a program on disk.
func programKey(d *device, src, options string) string {
	h := sha256.New()
	for _, s := range []string{d.architecture, d.driver, src, options} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// diskCache is a compiled model's CACHE_DIR as the program cache uses it:
// programs are loaded from the binaries in dir ("" is no disk cache), and
// written there when save is set (CACHE_MODE=OPTIMIZE_SPEED).
type diskCache struct {
	dir  string
	save bool
}

// cacheFile is where the binary of the program with key lives in dir.
func cacheFile(dir, key string) string { return filepath.Join(dir, "clinfer-"+key+".clbin") }

// program returns the program of src built with options for device d
// (cc's device or its in-thread companion) in cc, with a reference for the caller (who releases it). label
// names the program in errors (the .cl file); disk is the CACHE_DIR
// binaries to load from and write to. With logBuild, a source build that leaves a log prints it on
// stderr.
func (c *programCache) program(cc *clContext, d *device, label, src, options string, disk diskCache, logBuild bool) (*shared[*cl.Program], error) {
	ctx := cc.cl
	key := programKey(d, src, options)
	mkey := cc.key + "/" + key
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("gpu: program cache: %w", driver.ErrClosed)
	}
	if e, ok := c.entries[mkey]; ok {
		c.mu.Unlock()
		<-e.ready
		if e.err != nil {
			return nil, e.err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return nil, fmt.Errorf("gpu: program cache: %w", driver.ErrClosed)
		}
		c.memoryHits.Add(1)
		e.prog.acquire()
		return e.prog, nil
	}
	e := &progEntry{ready: make(chan struct{}), dev: d}
	c.entries[mkey] = e
	c.mu.Unlock()

	prog, fromSource, err := c.load(d, ctx, label, src, options, disk, key, logBuild)

	c.mu.Lock()
	defer c.mu.Unlock()
	defer close(e.ready)
	if err != nil {
		e.err = err
		delete(c.entries, mkey) // a later compile tries again
		return nil, err
	}
	if fromSource && disk.dir != "" && disk.save {
		e.unsaved = cacheFile(disk.dir, key)
	}
	e.prog = newShared(prog) // the caller's reference
	if c.closed {
		delete(c.entries, mkey)
		return e.prog, nil
	}
	e.prog.acquire() // the cache's reference
	return e.prog, nil
}

// load builds the program: from the binary under disk.dir when there is a
// good one, else from source (fromSource). The binary of a source build
// is written later, by saveBinaries.
func (c *programCache) load(d *device, ctx *cl.Context, label, src, options string, disk diskCache, key string, logBuild bool) (_ *cl.Program, fromSource bool, _ error) {
	if disk.dir != "" {
		prog, err := loadBinary(d, ctx, cacheFile(disk.dir, key), options)
		if err == nil {
			c.binaryLoads.Add(1)
			return prog, false, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			c.binaryRejects.Add(1)
		}
	}
	prog, err := buildSource(d, ctx, label, src, options)
	if err != nil {
		return nil, false, err
	}
	if logBuild {
		if log, err := prog.BuildLog(d.cl); err == nil && strings.TrimSpace(log) != "" {
			fmt.Fprintf(os.Stderr, "gpu: building %s with %q on %s: compiler output:\n%s\n", label, options, d.name(), strings.TrimSpace(log))
		}
	}
	c.sourceBuilds.Add(1)
	return prog, true, nil
}

// saveBinaries writes the device binaries of those of progs that were
// built from source with CACHE_MODE=OPTIMIZE_SPEED and are not written
// yet to their CACHE_DIR files. Callers write them once the programs'
// launches have run (the warm-up): a driver's binary holds what it
// compiled up to the moment it is first asked for it, and POCL compiles a
// kernel again for each work-group size at its first launch and keeps
// those compilations in the program's binary, so a binary taken after the
// warm-up spares a later process (or an import) that compilation (IS-Net
// medium on POCL: 7 s of an 8.8 s import). Asking POCL for a binary
// compiles every kernel of the program once more, so
// CACHE_MODE=OPTIMIZE_SIZE leaves it to POCL's own kernel cache. The
// error joins the writes that failed, each naming its file (a program
// not written is built from source again next time; writeErrors counts
// them too).
func (c *programCache) saveBinaries(progs []*shared[*cl.Program]) error {
	want := make(map[*shared[*cl.Program]]bool, len(progs))
	for _, p := range progs {
		want[p] = true
	}
	type job struct {
		prog *cl.Program
		dev  *device
		path string
	}
	var jobs []job
	c.mu.Lock()
	for _, e := range c.entries {
		select {
		case <-e.ready:
		default:
			continue
		}
		if e.unsaved != "" && e.prog != nil && want[e.prog] {
			jobs = append(jobs, job{e.prog.val, e.dev, e.unsaved})
			e.unsaved = ""
		}
	}
	c.mu.Unlock()
	var errs []error
	for _, j := range jobs {
		if err := writeBinary(j.prog, j.dev, j.path); err != nil {
			c.writeErrors.Add(1)
			errs = append(errs, fmt.Errorf("gpu: writing the program binary %s to CACHE_DIR (check the directory is writable and has space): %w", j.path, err))
		} else {
			c.binaryWrites.Add(1)
		}
	}
	return errors.Join(errs...)
}

// buildSource creates and builds a program from OpenCL C source.
func buildSource(d *device, ctx *cl.Context, label, src, options string) (*cl.Program, error) {
	prog, err := ctx.CreateProgramWithSource([]string{src})
	if err != nil {
		return nil, driver.Errorf(driver.ErrDevice, "gpu: program %s on device %s: %w", label, d.name(), err)
	}
	if err := prog.BuildProgram([]*cl.Device{d.cl}, options); err != nil {
		_ = prog.Close()
		return nil, driver.Errorf(driver.ErrDevice, "gpu: building program %s with options %q on device %s (%s): %w", label, options, d.name(), d.fullName, err)
	}
	return prog, nil
}

// loadBinary creates and builds a program from a cache file. A missing file
// is an error wrapping os.ErrNotExist; a corrupt file or a binary the
// driver refuses is another error.
func loadBinary(d *device, ctx *cl.Context, path, options string) (*cl.Program, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	payload, err := decodeBinary(b)
	if err != nil {
		return nil, fmt.Errorf("gpu: cache file %s: %w", path, err)
	}
	prog, err := ctx.CreateProgramWithBinary([]*cl.Device{d.cl}, [][]byte{payload})
	if err != nil {
		return nil, fmt.Errorf("gpu: cache file %s: %w", path, err)
	}
	if err := prog.BuildProgram([]*cl.Device{d.cl}, options); err != nil {
		_ = prog.Close()
		return nil, fmt.Errorf("gpu: cache file %s: %w", path, err)
	}
	return prog, nil
}

// decodeBinary checks a cache file's magic and checksum and returns the
// device binary in it.
func decodeBinary(b []byte) ([]byte, error) {
	if !bytes.HasPrefix(b, []byte(cacheMagic)) || len(b) < len(cacheMagic)+sha256.Size+1 {
		return nil, errors.New("not a clinfer program binary (bad header)")
	}
	sum := b[len(cacheMagic) : len(cacheMagic)+sha256.Size]
	payload := b[len(cacheMagic)+sha256.Size:]
	if got := sha256.Sum256(payload); !bytes.Equal(got[:], sum) {
		return nil, errors.New("checksum mismatch (corrupt file)")
	}
	return payload, nil
}

// binaryFor returns the binary of a program built for d alone, one of the
// devices of its context (which may hold d's in-thread companion too).
func binaryFor(prog *cl.Program, d *device) ([]byte, error) {
	bins, err := prog.Binaries()
	if err != nil {
		return nil, err
	}
	if len(bins) == 1 {
		// POCL 3.1 lists the binaries of the devices the program was
		// built for (one), though CL_PROGRAM_DEVICES lists the context's.
		return bins[0], nil
	}
	devs, err := prog.Devices()
	if err != nil {
		return nil, err
	}
	for i, pd := range devs {
		if pd.Equal(d.cl) && i < len(bins) {
			return bins[i], nil
		}
	}
	return nil, fmt.Errorf("gpu: program has no binary for %s (%s)", d.name(), d.fullName)
}

// writeBinary writes the program's device binary for d to path
// atomically: a temporary file in the same directory, renamed over path.
func writeBinary(prog *cl.Program, d *device, path string) error {
	bin, err := binaryFor(prog, d)
	if err != nil {
		return err
	}
	if len(bin) == 0 {
		return fmt.Errorf("gpu: program has an empty binary for %s", d.name())
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".clinfer-*.tmp")
	if err != nil {
		return err
	}
	sum := sha256.Sum256(bin)
	_, err = f.Write(append(append([]byte(cacheMagic), sum[:]...), bin...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// dropContext drops the cache's references to the programs of the context
// with key ctxKey, whose last user is gone.
func (c *programCache) dropContext(ctxKey string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for k, e := range c.entries {
		if !strings.HasPrefix(k, ctxKey+"/") || strings.Contains(k[len(ctxKey)+1:], "/") {
			continue
		}
		select {
		case <-e.ready:
			if e.prog != nil {
				errs = append(errs, e.prog.release())
			}
			delete(c.entries, k)
		default:
			// Being built: by a holder of the context, so not now.
		}
	}
	return errors.Join(errs...)
}

// close drops the cache's references; programs still used by compiled
// models are released with the last of them.
func (c *programCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for k, e := range c.entries {
		select {
		case <-e.ready:
			if e.prog != nil {
				errs = append(errs, e.prog.release())
			}
			delete(c.entries, k)
		default:
			// Being built: the builder sees closed and keeps no reference.
		}
	}
	return errors.Join(errs...)
}

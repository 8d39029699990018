package driver

// The model cache (CACHE_DIR): where Core.CompileModel looks for a compiled
// model before compiling, the key that names it, and the import of a blob.

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/clinfer/clinfer/graph"
)

// ImportModel imports a compiled model that device's plugin exported (see
// Importer). A plugin without Importer is an error wrapping
// ErrNotImplemented.
func (c *Core) ImportModel(ctx context.Context, r io.Reader, device string, props map[string]string) (CompiledModel, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, ref, props, err := c.target(device, props)
	if err != nil {
		return nil, err
	}
	imp, ok := p.(Importer)
	if !ok {
		return nil, errorf(ErrNotImplemented, "plugin: device %q does not implement ImportModel", ref.name)
	}
	return imp.ImportModel(ctx, r, props)
}

// cacheDir is the CACHE_DIR that applies to a compilation: the one in props,
// else the plugin's.
func cacheDir(p Plugin, props map[string]string) string {
	for k, v := range props {
		if CanonicalKey(k) == KeyCacheDir {
			return v
		}
	}
	v, err := p.Property(KeyCacheDir)
	if err != nil {
		return ""
	}
	return v
}

// cacheKey hashes what decides a compiled model: the model's encoding
// (streamed into the hash, never gathered in memory, its weights hashed on
// every core: treeHash), the device, its
// architecture and the effective read-write configuration (the plugin's
// values overridden by props), without CACHE_DIR.
func cacheKey(p Plugin, ref deviceRef, m *graph.Model, props map[string]string) (string, error) {
	cfg := ConfigFingerprint(p)
	caching := cachingKeys(p)
	for k, v := range props {
		if k = CanonicalKey(k); caching == nil || caching[k] {
			cfg[k] = v
		}
	}
	delete(cfg, KeyCacheDir)
	arch, _ := p.Property(KeyDeviceArchitecture)
	h := &treeHash{}
	fmt.Fprintf(h, "clinfer model cache\x00blob %d\x00graph %d\x00clinfer %s\x00device %s\x00arch %s\x00", ExportFormatVersion, graph.EncodingVersion, moduleVersion(), ref.name, arch)
	for _, k := range sortedNames(cfg) {
		fmt.Fprintf(h, "%s=%s\x00", k, cfg[k])
	}
	if ck, ok := p.(CacheKeyer); ok {
		extra, err := ck.CacheKey(props)
		if err != nil {
			return "", fmt.Errorf("plugin: model cache: %w", err)
		}
		fmt.Fprintf(h, "plugin %s\x00", extra)
	}
	if err := graph.WriteModel(h, m); err != nil {
		return "", errorf(ErrInvalidArgument, "plugin: model cache: %w", err)
	}
	sum := h.Sum()
	return hex.EncodeToString(sum[:]), nil
}

// moduleVersion is the clinfer build the model cache keys blobs by: the
// module's version (and checksum) when clinfer is a dependency, its VCS
// revision when the program is built from a clinfer checkout, "(devel)"
// when neither is known (tests). The blobs' own versions and the devices'
// checks of what they hold cover the rest.
var moduleVersion = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	const path = "github.com/clinfer/clinfer"
	if bi.Main.Path != path {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version + " " + d.Sum
			}
		}
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
			v += " " + s.Value
		}
	}
	return v
})

// CacheExporter is implemented by compiled models whose blob for the model
// cache can leave out what only a fresh compilation could need (the GPU:
// the weights its plan record holds packed). Core.CompileModel writes
// ExportCached's blob to CACHE_DIR instead of Export's; when ImportModel
// cannot use such a blob (another configuration, a stale record), the
// error wraps ErrIncompatible and the Core compiles the model again and
// replaces the blob.
type CacheExporter interface {
	ExportCached(w io.Writer) error
}

// CacheKeyer is implemented by plugins whose compiled models depend on
// more than their own properties (HETERO: the configuration of the devices
// it splits across). The Core's model cache mixes CacheKey's answer into
// the key, so changing that state compiles anew instead of reusing a stale
// blob.
type CacheKeyer interface {
	CacheKey(props map[string]string) (string, error)
}

// ConfigFingerprint returns a plugin's read-write properties with their
// current values, as the model cache keys them: those CACHING_PROPERTIES
// lists where the plugin has it (runtime-only keys left out), else all of
// them (CACHE_DIR included; callers drop what must not count).
func ConfigFingerprint(p Plugin) map[string]string {
	cfg := map[string]string{}
	keys, rw := readWriteKeys(p)
	caching := cachingKeys(p)
	for _, k := range keys {
		if rw[k] && (caching == nil || caching[k] || k == KeyCacheDir) {
			if v, err := p.Property(k); err == nil {
				cfg[k] = v
			}
		}
	}
	return cfg
}

// readWriteKeys returns the plugin's keys (SUPPORTED_PROPERTIES) and
// which are read-write; none when it cannot say.
func readWriteKeys(p Plugin) ([]string, map[string]bool) {
	sp, err := p.Property(KeySupportedProperties)
	if err != nil {
		return nil, nil
	}
	keys, rw, err := ParseSupportedProperties(sp)
	if err != nil {
		return nil, nil
	}
	return keys, rw
}

// cachingKeys returns the set CACHING_PROPERTIES lists, or nil when the
// plugin has no such key (every read-write key counts).
func cachingKeys(p Plugin) map[string]bool {
	v, err := p.Property(KeyCachingProperties)
	if err != nil {
		return nil
	}
	set := map[string]bool{}
	for _, k := range strings.Fields(v) {
		set[k] = true
	}
	return set
}

// runtimeProps returns props with the plugin's current value added for
// every runtime-only key (read-write, not in CACHING_PROPERTIES) props
// does not set: a blob the model cache imports was compiled under
// whatever values those keys had then, which the key leaves out, and the
// model must run under the values in force now.
func runtimeProps(p Plugin, props map[string]string) map[string]string {
	caching := cachingKeys(p)
	if caching == nil {
		return props
	}
	set := map[string]bool{}
	for k := range props {
		set[CanonicalKey(k)] = true
	}
	out := maps.Clone(props)
	keys, rw := readWriteKeys(p)
	for _, k := range keys {
		if !rw[k] || caching[k] || set[k] || k == KeyCacheDir {
			continue
		}
		if v, err := p.Property(k); err == nil {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// CachingConfig returns cfg without the keys props marks runtime-only
// (PropertySpec.RuntimeOnly): the part of a configuration that decides
// what compiling makes, which a device compares to accept a blob's
// recorded plan.
func CachingConfig(props *Properties, cfg map[string]string) map[string]string {
	out := make(map[string]string, len(cfg))
	for k, v := range cfg {
		if s, ok := props.Spec(k); ok && s.RuntimeOnly {
			continue
		}
		out[k] = v
	}
	return out
}

// CacheBlobPath returns the file Core.CompileModel caches the compiled
// model in for this model, device and properties under CACHE_DIR dir
// (dir/<hash>.blob). Tools use it to inspect or clear one entry.
func (c *Core) CacheBlobPath(dir string, m *graph.Model, device string, props map[string]string) (string, error) {
	p, ref, props, err := c.target(device, props)
	if err != nil {
		return "", err
	}
	key, err := cacheKey(p, ref, m, props)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, key+".blob"), nil
}

// compileCached is CompileModel with a model cache in dir: it imports
// dir/<hash>.blob when that blob is valid, and otherwise compiles and
// replaces the blob atomically (temporary file, then rename). A blob that
// fails to import for any reason but ctx is recompiled, not trusted.
// Devices that do not implement Importer, and compiled models that do not
// implement Exporter, are compiled without the cache.
func (c *Core) compileCached(ctx context.Context, p Plugin, ref deviceRef, m *graph.Model, props map[string]string, dir string) (CompiledModel, error) {
	imp, ok := p.(Importer)
	if !ok {
		return p.CompileModel(ctx, m, props)
	}
	key, err := cacheKey(p, ref, m, props)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, key+".blob")
	done, err := blobTurns.take(ctx, path)
	if err != nil {
		return nil, err
	}
	handed := false // done passed on to the background write
	defer func() {
		if !handed {
			done()
		}
	}()
	if f, err := os.Open(path); err == nil {
		cm, err := imp.ImportModel(ctx, &CacheBlobFile{f}, runtimeProps(p, props))
		f.Close()
		if err == nil {
			return cm, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		// Stale or corrupt: fall through, recompile and replace it.
	}
	cm, err := p.CompileModel(ctx, m, props)
	if err != nil {
		return nil, err
	}
	ex, ok := cm.(Exporter)
	if !ok {
		return cm, nil
	}
	export := ex.Export
	if ce, ok := cm.(CacheExporter); ok {
		export = ce.ExportCached
	}
	tmp, err := cacheTemp(dir, key)
	if err != nil {
		return nil, errors.Join(err, cm.Close())
	}
	if bg, ok := cm.(BackgroundRunner); ok {
		handed = true
		bg.Background("writing the model cache's blob", func() error {
			defer done()
			return writeCacheBlob(tmp, path, export)
		})
		return cm, nil
	}
	if err := writeCacheBlob(tmp, path, export); err != nil {
		return nil, errors.Join(err, cm.Close())
	}
	return cm, nil
}

// blobTurns orders the compilations of one model cache blob in this
// process.
var blobTurns = keyTurns{held: map[string]chan struct{}{}}

// keyTurns gives one caller at a time a turn at a key: the model cache's
// per-blob lock (OpenVINO's CoreImpl holds one per cache key through the
// compilation and the export). A second CompileModel of a model whose
// first compilation, or whose blob's background write, is still in
// flight in this process waits for it and then imports the blob, instead
// of compiling the model again beside it and writing the blob twice.
type keyTurns struct {
	mu   sync.Mutex
	held map[string]chan struct{} // closed when the turn ends
}

// take waits for key's turn (or ctx) and returns the function that ends
// it, which the caller calls exactly once.
func (k *keyTurns) take(ctx context.Context, key string) (done func(), err error) {
	for {
		k.mu.Lock()
		busy, ok := k.held[key]
		if !ok {
			ch := make(chan struct{})
			k.held[key] = ch
			k.mu.Unlock()
			return func() {
				k.mu.Lock()
				delete(k.held, key)
				k.mu.Unlock()
				close(ch)
			}, nil
		}
		k.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// BackgroundRunner is implemented by compiled models that can do work
// after CompileModel has returned them, beside their first inferences
// (the GPU: POCL makes a program's binary only by compiling its kernels
// once more). The Core writes the model cache's blob through it, so a
// compilation with an empty CACHE_DIR returns as soon as the model is
// usable: Background runs f on another goroutine after the model's
// earlier background work; an error of f is reported when it happens and
// returned by the model's Close, which waits for f before it releases
// anything f reads. The blob appears in CACHE_DIR (renamed into place
// whole) when f ends; a process that exits without closing the model may
// leave none, and the next compilation writes it.
type BackgroundRunner interface {
	Background(name string, f func() error)
}

// cacheTemp creates the temporary file a blob for key is written to in
// dir (creating dir), so that an unusable CACHE_DIR fails the compilation
// at once, even when the blob is written in the background.
func cacheTemp(dir, key string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, errorf(ErrInvalidArgument, "plugin: CACHE_DIR %q: %w", dir, err)
	}
	sweepCacheTemps(dir, key, time.Now().Add(-staleCacheTemp))
	tmp, err := os.CreateTemp(dir, key+".*.tmp")
	if err != nil {
		return nil, errorf(ErrInvalidArgument, "plugin: CACHE_DIR %q: %w", dir, err)
	}
	return tmp, nil
}

// staleCacheTemp is the age past which a blob's temporary file is taken
// for abandoned: a process that ended before its background write did
// (without Close) leaves it behind, and a write in progress touches its
// file far more often than this.
const staleCacheTemp = 10 * time.Minute

// sweepCacheTemps removes key's temporary blob files in dir last written
// before cutoff. Best effort: a file it cannot remove stays.
func sweepCacheTemps(dir, key string, cutoff time.Time) {
	old, _ := filepath.Glob(filepath.Join(dir, key+".*.tmp"))
	for _, f := range old {
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() && st.ModTime().Before(cutoff) {
			_ = os.Remove(f)
		}
	}
}

// writeCacheBlob exports into tmp (from cacheTemp) and renames it over
// path, so readers see the old blob or the new one, never a partial one;
// on an error tmp is removed.
func writeCacheBlob(tmp *os.File, path string, export func(io.Writer) error) error {
	name := tmp.Name()
	// No fsync before the rename: a blob that a crash leaves torn fails
	// its checksums on import and is compiled again, and syncing hundreds
	// of MB made the cold compile wait for the disk (IS-Net medium: seconds).
	bw := bufio.NewWriterSize(tmp, 1<<20)
	werr := export(bw)
	if werr == nil {
		werr = bw.Flush()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(name, path)
	}
	if werr != nil {
		os.Remove(name)
		return errorf(ErrDevice, "plugin: model cache %s: %w", path, werr)
	}
	return nil
}

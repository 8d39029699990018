package clbackend

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"sort"
	"strings"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Blob sections of an exported GPU model: the transformed graph, and one
// section per program binary, named "program:" + its program cache key
// ("program-in-thread:" + the key for a model whose plans run on the
// in-thread companion: inthread.go).
const (
	graphSection          = "graph"
	programSectionPrefix  = "program:"
	inThreadSectionPrefix = "program-in-thread:"
)

// Interface checks.
var (
	_ driver.Exporter      = (*CompiledModel)(nil)
	_ driver.Importer      = (*Plugin)(nil)
	_ driver.CacheExporter = (*CompiledModel)(nil)
)

// Export writes the compiled model: the shared blob header (device,
// DEVICE_ARCHITECTURE, configuration, ports), the transformed graph with
// its weights and the launch plan of the static input shapes with the
// weights the planner derived (export_plan.go); with CACHE_MODE=OPTIMIZE_SPEED also the device binary of
// every program its launch plans use, so ImportModel on a device of the
// same architecture builds no kernel from source. With OPTIMIZE_SIZE (the
// default on POCL, which compiles every kernel of a program again to hand
// out its binary, so that an export took longer than the compile) the
// blob is the same bytes for the same model and options, and an import
// builds the programs again through the driver's kernel cache. A model
// imported from a model cache blob (ExportCached) has not the weights that
// blob left out, and exports such a blob again.
func (c *CompiledModel) Export(w io.Writer) error { return c.export(w, false) }

// ExportCached writes the blob the model cache (CACHE_DIR) keeps
// (driver.CacheExporter): Export's, less the bytes of every Constant of at
// least elideMin bytes whose tensor the plan record does not read — the
// weights the planner repacked for its kernels (Winograd, blocked), which
// the record carries in their packed form (IS-Net medium fp32: 176 of the
// 441 MB Export writes). Those Constants stay in the graph, elided (see
// graph.ExtraElided), so the blob imports only with its plan record: a
// record ImportModel cannot use (other configuration, changed tuning
// records, a stale kernel) is an error wrapping driver.ErrIncompatible,
// and the model cache compiles the model again and replaces the blob. A
// model without a plan record is exported as Export does.
func (c *CompiledModel) ExportCached(w io.Writer) error { return c.export(w, true) }

// elideMin is the size from which ExportCached leaves a Constant's bytes
// out: smaller ones (shapes, axes, scales) cost nothing to keep, and
// shape inference on import may read them.
const elideMin = 16 << 10

func (c *CompiledModel) export(w io.Writer, lean bool) error {
	if c.blob != nil {
		// The plan's recorded tensors lie in the mapped blob: it stays
		// mapped until they are written.
		if !c.blob.tryAcquire() {
			return driver.Errorf(driver.ErrClosed, "gpu: export model %q: the compiled model is closed", c.model.Name)
		}
		defer c.blob.release()
	}
	rec, consts, err := c.planRecord()
	switch {
	case errors.Is(err, errNoRecord):
		rec, lean = nil, false
	case err != nil:
		return fmt.Errorf("gpu: export model %q: %w", c.model.Name, err)
	}
	model := c.model
	if lean {
		model = model.ElideValues(func(n *graph.Node) bool {
			size, ok := n.Value.Shape().Bytes(n.Value.Type())
			return ok && size >= elideMin && n.Value.Type() != tensor.String && !consts[n.Name]
		})
	}
	enc, err := c.core.ExportGraph(model)
	if err != nil {
		return err
	}
	sections := []driver.BlobSection{{Name: graphSection, Data: enc}}
	if rec != nil {
		sections = append(sections, driver.BlobSection{Name: planSection, Parts: rec, Align: recordAlign})
	}
	if c.binaries {
		progs, err := c.programSections()
		if err != nil {
			return err
		}
		sections = append(sections, progs...)
	}
	return driver.WriteBlob(w, &driver.Blob{
		Header:   c.core.Header(DeviceName, c.dev.architecture, exportConfig(c.core.Props())),
		Sections: sections,
	})
}

// exportConfig is the configuration recorded in a blob, without DEVICE_ID:
// the importer chooses the device.
func exportConfig(p *driver.Properties) map[string]string {
	cfg := driver.ExportConfig(p)
	delete(cfg, driver.KeyDeviceID)
	return cfg
}

// programSections returns one section per distinct program of the
// compiled model's plans: the build options and the device binary.
func (c *CompiledModel) programSections() ([]driver.BlobSection, error) {
	c.planMu.Lock()
	plans := make([]*plan, 0, len(c.plans))
	for _, k := range exportSortedKeys(c.plans) {
		plans = append(plans, c.plans[k])
	}
	c.planMu.Unlock()
	prefix := programSectionPrefix
	if c.run != c.dev {
		prefix = inThreadSectionPrefix
	}
	seen := map[string]bool{}
	var out []driver.BlobSection
	for _, pl := range plans {
		for _, l := range pl.launches {
			if l.prog == nil {
				continue
			}
			src, err := l.kernel.Source()
			if err != nil {
				return nil, fmt.Errorf("gpu: export model %q: %w", c.model.Name, err)
			}
			key := programKey(c.run, src, l.options)
			if seen[key] {
				continue
			}
			seen[key] = true
			bin, err := binaryFor(l.prog, c.run)
			if err != nil {
				return nil, driver.Errorf(driver.ErrDevice, "gpu: export model %q: program %s: %w", c.model.Name, l.kernel.File, err)
			}
			if len(bin) == 0 {
				// The driver keeps no binary (some do not): the importer
				// builds this program from source.
				continue
			}
			data := binary.AppendUvarint(nil, uint64(len(l.options)))
			data = append(data, l.options...)
			data = append(data, bin...)
			out = append(out, driver.BlobSection{Name: prefix + key, Data: data})
		}
	}
	return out, nil
}

func exportSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ImportModel rebuilds a compiled model that CompiledModel.Export wrote, on
// the device DEVICE_ID in props names (the default device without it). A
// blob of another format version or device architecture is an error
// wrapping driver.ErrIncompatible that names both values; a truncated or
// damaged one wraps driver.ErrCorrupt. The blob's program binaries go into
// the plugin's program cache first, so rebuilding the launch plans builds
// no program from source; a binary the driver refuses is rebuilt from
// source instead. The launch plan comes from the blob's plan record when
// props leave the exported configuration as it was and the record is
// sound and current; otherwise the model is planned again (see
// CacheStats.PlanRecordsRefused), except from a model cache blob
// (ExportCached), which has not the weights to plan from: its import is
// an error wrapping driver.ErrIncompatible. The imported model reports
// LOADED_FROM_CACHE=YES.
func (p *Plugin) ImportModel(ctx context.Context, r io.Reader, props map[string]string) (_ driver.CompiledModel, err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("gpu: import: %w", err)
	}
	d, base, err := p.target(map[string]string{driver.KeyDeviceID: deviceIDOf(props, p)})
	if err != nil {
		return nil, err
	}
	var blob *driver.Blob
	var unmap func() error
	if f, ok := r.(*driver.CacheBlobFile); ok {
		// The model cache's file: mapped, not read (see
		// driver.CacheBlobFile.Map); the plan record's tensors and the
		// weights used in place lie in the mapping.
		blob, unmap, err = f.Map(DeviceName, d.architecture)
	} else {
		blob, err = driver.ReadBlob(r, DeviceName, d.architecture)
	}
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	rec, _ := blob.Section(planSection)
	recMem := &hostMem{data: rec} // read: Go memory, pinned while used in place
	var mapped *hostMem
	if unmap != nil {
		// The import's reference to the mapping: handed to the compiled
		// model, or dropped on the way out (after the binaries' preload,
		// whose wait is deferred below).
		mapped = mappedMem(rec, unmap)
		recMem = mapped
		defer func() {
			if mapped != nil {
				mapped.release()
			}
		}()
	}
	data, ok := blob.Section(graphSection)
	if !ok {
		return nil, driver.Errorf(driver.ErrCorrupt, "gpu: import: the compiled model has no %q section", graphSection)
	}
	m := &graph.Model{}
	if err := m.UnmarshalBinary(data); err != nil {
		return nil, driver.Errorf(driver.ErrCorrupt, "gpu: import: %w", err)
	}
	rest := maps.Clone(props)
	delete(rest, driver.KeyDeviceID)
	cfg, err := driver.ImportConfig(base, blob.Header, rest)
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	if rec != nil && !needsHostParts(m) {
		// The plan is the compile's when the configuration is the
		// export's (props may change what planning decides); the
		// runtime-only keys (GPU_WAIT_SPIN_US...) do not count.
		if maps.Equal(driver.CachingConfig(cfg, exportConfig(cfg)), driver.CachingConfig(cfg, blob.Header.Config)) {
			ctx = withPlanRecord(ctx, rec, recMem)
		} else {
			p.cache.planRecordsRefused.Add(1)
		}
	}
	if planRecordOf(ctx) == nil && m.HasElided() {
		return nil, driver.Errorf(driver.ErrIncompatible, "gpu: import model %q: the model cache's blob leaves out the weights its plan record holds packed, and the record is not used under this configuration: compile the model again (with CACHE_DIR, Core.CompileModel does)", m.Name)
	}
	devCtx, err := d.context()
	if err != nil {
		return nil, err
	}
	preload := func() {
		for _, s := range blob.Sections {
			dev := devCtx.dev
			key, ok := strings.CutPrefix(s.Name, programSectionPrefix)
			if !ok {
				if key, ok = strings.CutPrefix(s.Name, inThreadSectionPrefix); !ok || devCtx.inThread == nil {
					continue
				}
				dev = devCtx.inThread
			}
			if err := p.cache.preload(devCtx, dev, key, s.Data); err != nil {
				p.cache.binaryRejects.Add(1)
			}
		}
	}
	if planRecordOf(ctx) == nil {
		preload()
	} else {
		// The driver loads the binaries while the record is decoded and
		// its weights uploaded (IS-Net medium: 0.1-0.3 s of binaries
		// beside 0.3-0.6 s of uploads); restorePlan waits for them before
		// it looks its programs up, and so does every way out of here.
		// The goroutine holds its own reference to the context:
		// compileModel releases the import's on an error, possibly the
		// last one (a Close of the plugin meanwhile), while the driver
		// may still be building a binary in it.
		done := make(chan struct{})
		devCtx.acquire()
		go func() {
			defer close(done)
			defer func() { _ = devCtx.release() }()
			preload()
		}()
		defer func() { <-done }()
		ctx = withPreload(ctx, done)
	}
	defer func() {
		if r := recover(); r != nil {
			err = driver.Errorf(driver.ErrCorrupt, "gpu: import model %q: bad graph: %v", m.Name, r)
		}
	}()
	c, err := compileModel(withOwnedModel(ctx), p, devCtx, m, cfg) // takes devCtx's reference
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("gpu: import: %w", ctx.Err())
		}
		if errors.Is(err, driver.ErrIncompatible) {
			return nil, fmt.Errorf("gpu: import: %w", err)
		}
		return nil, driver.Errorf(driver.ErrCorrupt, "gpu: import: %w", err)
	}
	if cm, ok := c.(*CompiledModel); ok && mapped != nil {
		cm.blob, mapped = mapped, nil
	}
	for _, chk := range []struct {
		kind            string
		header, rebuilt []driver.PortInfo
	}{{"input", blob.Header.Inputs, c.Inputs()}, {"output", blob.Header.Outputs, c.Outputs()}} {
		if err := driver.CheckPorts(chk.kind, chk.header, chk.rebuilt); err != nil {
			if cerr := c.Close(); cerr != nil {
				err = fmt.Errorf("%w (closing: %v)", err, cerr)
			}
			return nil, fmt.Errorf("gpu: %w", err)
		}
	}
	var core *driver.ModelCore
	switch c := c.(type) {
	case *CompiledModel:
		core = &c.core
	case *HostParts:
		core = &c.core
	}
	core.SetProps(core.Props().Extend(driver.ReadOnlySpec(driver.KeyLoadedFromCache, "YES")))
	return c, nil
}

// deviceIDOf is the DEVICE_ID an import targets: props', else the
// plugin's default device.
func deviceIDOf(props map[string]string, p *Plugin) string {
	for k, v := range props {
		if driver.CanonicalKey(k) == driver.KeyDeviceID {
			return v
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.devices[p.def].id()
}

// preload builds a program for d (cc's device or its in-thread companion)
// from a blob's binary section (options, then the device binary) and keeps it in the cache under key, unless the cache
// already has that program. A key that does not name a program the kernels
// could ask for is harmless: no plan ever looks it up.
func (c *programCache) preload(cc *clContext, d *device, key string, data []byte) error {
	ctx := cc.cl
	n, k := binary.Uvarint(data)
	if k <= 0 || n > uint64(len(data)-k) {
		return fmt.Errorf("gpu: import: program %s: bad options length", key)
	}
	options := string(data[k : k+int(n)])
	bin := data[k+int(n):]
	mkey := cc.key + "/" + key
	c.mu.Lock()
	_, have := c.entries[mkey]
	closed := c.closed
	c.mu.Unlock()
	if have || closed {
		return nil
	}
	prog, err := ctx.CreateProgramWithBinary([]*cl.Device{d.cl}, [][]byte{bin})
	if err != nil {
		return err
	}
	if err := prog.BuildProgram([]*cl.Device{d.cl}, options); err != nil {
		_ = prog.Close()
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[mkey]; ok || c.closed {
		// Built meanwhile by a compile, or the plugin closed.
		return prog.Close()
	}
	e := &progEntry{ready: make(chan struct{}), prog: newShared(prog)} // the cache's reference
	close(e.ready)
	c.entries[mkey] = e
	c.binaryLoads.Add(1)
	return nil
}

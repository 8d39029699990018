package clbackend

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/clbackend/tune"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/plugin/driver"
)

// Device-adaptive kernels: the lowerings of the hot op families
// (kernels.Families) pick a variant per node here, from GPU_KERNEL_VARIANTS,
// the tuning cache, the tuner (tuner.go) or the heuristics, and emit it.

// Properties of the kernel variant choice.
const (
	// KeyTuningMode is GPU_TUNING_MODE: NONE (the recorded choices and the
	// heuristics; the default), FAST (time a budgeted subset of the
	// candidates of every choice without a record) or EXHAUSTIVE (time
	// every candidate; replaces FAST records).
	KeyTuningMode = "GPU_TUNING_MODE"
	// KeyTuningFile is GPU_TUNING_FILE: the tuning cache file. Empty (the
	// default) means clinfer-tuning-<device hash>.json under CACHE_DIR,
	// and with no CACHE_DIR a cache in memory for the process.
	KeyTuningFile = "GPU_TUNING_FILE"
	// KeyShippedTuning is GPU_SHIPPED_TUNING: YES (the default) reads the
	// tuning database shipped for the device (kernels/tuning, chosen by
	// device name and driver version) after the tuning file; NO leaves it
	// out (the heuristics alone, for comparisons).
	KeyShippedTuning = "GPU_SHIPPED_TUNING"
	// KeyKernelVariants is GPU_KERNEL_VARIANTS: variants to use wherever
	// they apply, separated by ";" ("gemm/tiled:TS_M=64,...;conv/...");
	// one per family. For experiments and tests; it wins over the cache.
	KeyKernelVariants = "GPU_KERNEL_VARIANTS"
)

// tuningSpecs are the property specs of the variant choice.
func tuningSpecs() []driver.PropertySpec {
	return []driver.PropertySpec{
		{
			Key: KeyTuningMode, Mutable: true, Default: tune.None.String(),
			Accepted: strings.Join(tune.ModeNames(), ", "),
			Parse: func(s string) (string, error) {
				m, err := tune.ParseMode(s)
				return m.String(), err
			},
		},
		{Key: KeyTuningFile, Mutable: true, Accepted: "a file path (empty: under CACHE_DIR)"},
		driver.BoolSpec(KeyShippedTuning, true),
		{
			Key: KeyKernelVariants, Mutable: true,
			Accepted: "kernel variants separated by ';', one per family (" + strings.Join(kernels.FamilyNames(), ", ") + "), e.g. gemm/direct:VW=4,MR=4,NV=2,WG=1",
			Parse: func(s string) (string, error) {
				vs, err := parseVariants(s)
				if err != nil {
					return "", err
				}
				parts := make([]string, len(vs))
				for i, v := range vs {
					parts[i] = v.String()
				}
				return strings.Join(parts, ";"), nil
			},
		},
	}
}

// parseVariants reads a GPU_KERNEL_VARIANTS value.
func parseVariants(s string) ([]kernels.Variant, error) {
	var out []kernels.Variant
	for _, f := range strings.Split(s, ";") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := kernels.ParseVariant(f)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(o kernels.Variant) bool { return o.Family == v.Family }) {
			return nil, fmt.Errorf("two variants of family %s", v.Family)
		}
		out = append(out, v)
	}
	return out, nil
}

// tuning is a compiled model's variant configuration.
type tuning struct {
	mode    tune.Mode
	db      *tune.DB
	shipped *tune.Shipped              // the device's shipped database (nil: none, or GPU_SHIPPED_TUNING=NO)
	forced  map[string]kernels.Variant // family -> variant (GPU_KERNEL_VARIANTS)
}

// shippedFor returns the shipped tuning database of device d (nil when
// none serves it), chosen once per device; an unreadable shipped file is
// reported once.
func shippedFor(d *device) *tune.Shipped {
	d.shippedOnce.Do(func() {
		var err error
		if d.shipped, err = tune.ChooseShipped(d.fullName, d.driver); err != nil {
			warnf("gpu: %v", err)
		}
	})
	return d.shipped
}

// TuningDB returns the tuning cache the compiled model's plans read and
// record into (nil when it has none): cmd/tune replaces there the records
// its model-level confirmation drops. The GPU device keeps one DB per
// tuning file in a process, so a later compile naming the same file
// (GPU_TUNING_FILE = its Path) reads the replaced records.
func (c *CompiledModel) TuningDB() *tune.DB {
	if c.tuning == nil {
		return nil
	}
	return c.tuning.db
}

// dbs are the tuning caches of the process, one per file (or per device
// for the caches in memory), so that a file is read and reported once.
var dbs struct {
	sync.Mutex
	m map[string]*tune.DB
}

// warnf reports a tuning file that cannot be trusted; tests replace it.
var warnf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// tuningDevice is the identity tuning records are kept under.
func tuningDevice(d *device) tune.Device {
	return tune.Device{Architecture: d.architecture, Driver: d.driver}
}

// tuningOf reads the variant configuration of a compile on d under cfg and
// opens (once per process) the tuning cache it names.
func tuningOf(d *device, cfg *driver.Properties, cacheDir string) (*tuning, error) {
	get := func(k string) string { v, _ := cfg.Get(k); return v }
	mode, err := tune.ParseMode(get(KeyTuningMode))
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: %s: %w", KeyTuningMode, err)
	}
	vs, err := parseVariants(get(KeyKernelVariants))
	if err != nil {
		return nil, driver.Errorf(driver.ErrInvalidArgument, "gpu: %s: %w", KeyKernelVariants, err)
	}
	t := &tuning{mode: mode, forced: map[string]kernels.Variant{}}
	for _, v := range vs {
		t.forced[v.Family] = v
	}
	if ship, err := driver.ParseBool(get(KeyShippedTuning)); err != nil || ship {
		t.shipped = shippedFor(d)
	}
	dev := tuningDevice(d)
	path := get(KeyTuningFile)
	if path == "" && cacheDir != "" {
		path = tune.FileName(cacheDir, dev)
	}
	key := path
	if path == "" {
		key = "memory:" + dev.Architecture + "\x00" + dev.Driver
	}
	dbs.Lock()
	defer dbs.Unlock()
	if dbs.m == nil {
		dbs.m = map[string]*tune.DB{}
	}
	if db, ok := dbs.m[key]; ok {
		if err := db.Refresh(); err != nil {
			warnf("gpu: %v", err)
		}
		t.db = db
		return t, nil
	}
	db, err := tune.Open(path, dev)
	if err != nil {
		if !errors.Is(err, tune.ErrFile) {
			return nil, driver.Errorf(driver.ErrDevice, "gpu: %w", err)
		}
		warnf("gpu: %v", err)
	}
	dbs.m[key] = db
	t.db = db
	return t, nil
}

// limits are the variant limits of the plan's device (deviceLimits), read
// once per plan.
func (b *builder) limits() kernels.Limits {
	if b.lim == nil {
		lim := deviceLimits(b.c.dev)
		b.lim = &lim
	}
	return *b.lim
}

// deviceLimits are the variant limits of d (DeviceLimits).
func deviceLimits(d *device) kernels.Limits { return DeviceLimits(d.cl) }

// DeviceLimits are the variant limits of an OpenCL device, the ones the
// GPU device's planner applies: its preferred float vector width (4 at
// least: the kernels' default builds everywhere; a wider vector changes
// the builtins' call ABI on a CPU that lacks the registers, and a POCL
// device on it cannot build the program), its largest work group, its
// local memory and whether it has accelerated packed 4x8-bit integer dot
// products (cl_khr_integer_dot_product, Device.IntegerDot4x8Packed: the
// qconv family's dot4 forms). Every test that launches kernels on a device takes its
// limits from here, so that it launches what the planner would.
func DeviceLimits(d *cl.Device) kernels.Limits {
	lim := kernels.Limits{VectorWidth: kernels.MinVectorWidth}
	if w, err := d.PreferredVectorWidths(); err == nil {
		lim.VectorWidth = max(lim.VectorWidth, w.Float)
	}
	if n, err := d.MaxWorkGroupSize(); err == nil {
		lim.MaxWorkGroup = n
	}
	if n, err := d.LocalMemSize(); err == nil {
		lim.LocalMem = n
	}
	if _, acc, err := d.IntegerDot4x8Packed(); err == nil {
		lim.IntegerDot = acc // the qconv family's dot4 forms then run
	}
	return lim
}

// errUnfit is wrapped by the error of a variant the device cannot launch
// (work group or local memory over the kernel's limits).
var errUnfit = errors.New("gpu: kernel variant does not fit the device")

// variantChoice is one choice of a plan, for the tuning report.
type variantChoice struct {
	node, op, key   string
	chosen, heur    kernels.Variant
	source          string // "heuristic", "recorded", "shipped", "tuned", "forced"
	ms, heuristicMs float64
	tried, refused  int
	refusals        []string
}

// choose picks the variant of family fam for node n and emits it: the
// forced variant of GPU_KERNEL_VARIANTS where it applies, else the tuning
// cache's record for key, else (when tuning and the emission computes the
// node's outputs from its inputs: tunable) the fastest candidate the
// tuner finds, else heuristic. applies says why a declared variant cannot
// run this node ("" when it can). A variant whose emission fails (a
// program the driver refuses, a work group the kernel cannot take) falls
// back to the heuristic one, so a bad record never fails a compile; a
// choice the tuner cannot time (no CPU reference for its inputs) keeps the
// heuristic.
func (b *builder) choose(n *graph.Node, fam, key string, tunable bool, applies func(kernels.Variant) string, heuristic kernels.Variant, emit func(kernels.Variant) error) error {
	f, ok := kernels.LookupFamily(fam)
	if !ok {
		return fmt.Errorf("gpu: node %q: no kernel family %q: %w", n.Name, fam, kernels.ErrVariant)
	}
	var cands []kernels.Variant
	for _, v := range f.Variants(b.limits()) {
		if applies(v) == "" {
			cands = append(cands, v)
		}
	}
	if len(cands) == 0 {
		return fmt.Errorf("gpu: node %q: no variant of kernel family %s runs it on %s: %w", n.Name, fam, b.c.dev.name(), kernels.ErrVariant)
	}
	if !slices.ContainsFunc(cands, heuristic.Equal) {
		// The heuristics' point does not fit this device (a work group
		// over its limit): the family's first candidate.
		heuristic = cands[0]
	}
	key = fam + " " + key
	ch := variantChoice{node: n.Name, op: n.OpType, key: key, chosen: heuristic, heur: heuristic, source: "heuristic"}
	tn := b.c.tuning
	rec, recorded, shipped := tune.Record{}, false, false
	if tn != nil && tn.db != nil {
		rec, recorded = tn.db.Lookup(key)
	}
	if !recorded && tn != nil {
		// The user's own records first, then the shipped database's.
		rec, recorded = tn.shipped.Lookup(key)
		shipped = recorded
	}
	switch fv, forced := b.forcedVariant(fam); {
	case forced && slices.ContainsFunc(cands, fv.Equal):
		ch.chosen, ch.source = fv, "forced"
	case recorded && (tn.mode != tune.Exhaustive || rec.Mode == tune.Exhaustive.String()):
		v, err := kernels.ParseVariant(rec.Variant)
		if rec.KeepsHeuristic() {
			// Nothing beat the heuristics' choice: today's heuristics run.
			v, err = heuristic, nil
		}
		if err == nil && slices.ContainsFunc(cands, v.Equal) {
			ch.chosen, ch.source, ch.ms, ch.heuristicMs = v, "recorded", rec.Ms, rec.HeuristicMs
			if shipped {
				ch.source = "shipped"
			}
			if b.tunedKeys[key] {
				ch.source = "tuned" // by an earlier node of this plan
			}
		}
	}
	if ch.source == "heuristic" && tunable && tn != nil && tn.mode != tune.None && !b.probe {
		r, refusals, err := b.tune(n, key, cands, heuristic, emit)
		if err != nil && b.ctx.Err() != nil {
			return err
		}
		ch.refusals = refusals
		if err != nil {
			ch.refusals = append(ch.refusals, err.Error())
		}
		if v, perr := kernels.ParseVariant(r.Variant); err == nil && perr == nil {
			ch.chosen, ch.source, ch.ms, ch.heuristicMs, ch.tried, ch.refused = v, "tuned", r.Ms, r.HeuristicMs, r.Tried, r.Refused
			tn.db.Put(key, r)
			b.tuned = true
			if b.tunedKeys == nil {
				b.tunedKeys = map[string]bool{}
			}
			b.tunedKeys[key] = true
		}
	}
	mark := b.mark()
	err := emit(ch.chosen)
	if err != nil && !ch.chosen.Equal(heuristic) {
		b.rollback(mark)
		ch.chosen, ch.source = heuristic, "heuristic"
		err = emit(heuristic)
	}
	if err != nil {
		return err
	}
	b.pl.variants[n] = ch.chosen.String()
	b.choices = append(b.choices, ch)
	return nil
}

// forcedVariant is the GPU_KERNEL_VARIANTS variant of family fam.
func (b *builder) forcedVariant(fam string) (kernels.Variant, bool) {
	if b.c.tuning == nil {
		return kernels.Variant{}, false
	}
	v, ok := b.c.tuning.forced[fam]
	return v, ok
}

// planMark is the builder's state before a tentative emission.
type planMark struct{ values, launches, progs int }

func (b *builder) mark() planMark {
	return planMark{len(b.pl.values), len(b.pl.launches), len(b.pl.progs)}
}

// rollback drops what was emitted since m: values, launches and the
// program references they took.
func (b *builder) rollback(m planMark) {
	for _, p := range b.pl.progs[m.progs:] {
		_ = p.release()
	}
	b.pl.progs = b.pl.progs[:m.progs]
	b.pl.launches = b.pl.launches[:m.launches]
	b.pl.values = b.pl.values[:m.values]
}

// checkLaunchable fails with errUnfit when a launch of entry from prog
// with work group local cannot run on the device: more items than
// CL_KERNEL_WORK_GROUP_SIZE allows, or more local memory than the device
// has.
func (b *builder) checkLaunchable(prog *cl.Program, entry string, local []int) error {
	if local == nil {
		return nil
	}
	k, err := prog.CreateKernel(entry)
	if err != nil {
		return driver.Errorf(driver.ErrDevice, "kernel %s on %s: %w", entry, b.c.dev.name(), err)
	}
	defer k.Close()
	items := 1
	for _, l := range local {
		items *= l
	}
	d := b.c.run.cl
	if limit, err := k.WorkGroupSize(d); err == nil {
		if kernelGroupLimit > 0 {
			limit = min(limit, kernelGroupLimit)
		}
		if items > limit {
			return fmt.Errorf("kernel %s: work group of %d items, CL_KERNEL_WORK_GROUP_SIZE is %d: %w", entry, items, limit, errUnfit)
		}
	}
	if lm, err := k.LocalMemSize(d); err == nil {
		if dev := b.limits().LocalMem; dev > 0 && lm > dev {
			return fmt.Errorf("kernel %s: %d bytes of local memory, the device has %d: %w", entry, lm, dev, errUnfit)
		}
	}
	return nil
}

// kernelGroupLimit, when positive (tests), caps CL_KERNEL_WORK_GROUP_SIZE
// as a device whose kernels take smaller groups would.
var kernelGroupLimit int

// groupOf returns the work-group size of a register-blocked launch under
// policy wg (kernels' WG parameter): nil for the driver's choice, ones
// for one item per group.
func groupOf(wg, dims int) []int {
	if wg != 1 {
		return nil
	}
	l := make([]int, dims)
	for i := range l {
		l[i] = 1
	}
	return l
}

// roundGlobal rounds each global size up to a multiple of the work group
// (nil: unchanged) and converts it to int.
func roundGlobal(global []int64, local []int) []int {
	g := make([]int, len(global))
	for i, x := range global {
		g[i] = int(x)
		if local != nil {
			g[i] = (g[i] + local[i] - 1) / local[i] * local[i]
		}
	}
	return g
}

// group1D returns the work group of a 1-D launch of WG items (nil: the
// driver's choice) and its global size for n items, rounded up to the
// group (or to workGroupMultiple).
func group1D(n int64, wg int) ([]int, []int) {
	m := int64(workGroupMultiple)
	if wg > 0 {
		m = int64(wg)
	}
	g := []int{int((n + m - 1) / m * m)}
	if wg > 0 {
		return g, []int{wg}
	}
	return g, nil
}

// mustVariant builds a declared variant from its parameter values; the
// heuristics name points of the tables, so a miss is a programmer error
// that choose reports.
func mustVariant(fam, alg string, vals ...int) kernels.Variant {
	return kernels.Variant{Family: fam, Algorithm: alg, Values: vals}
}

// WriteShippedTuning writes the shipped tuning database (kernels/tuning's
// format, named tune.ShippedName) of the GPU device named device ("GPU",
// "GPU.1") into dir from that device's tuning file: file, or the one
// under cacheDir. source says how its records were made. It returns the
// path written. cmd/tune -ship calls it after tuning.
func WriteShippedTuning(dir, device, cacheDir, file, source string) (string, error) {
	p, err := New()
	if err != nil {
		return "", err
	}
	defer p.Close()
	d := p.devices[p.def]
	if device != "" && device != DeviceName {
		i, err := p.parseDeviceID(device)
		if err != nil {
			return "", err
		}
		d = p.devices[i]
	}
	if file == "" {
		file = tune.FileName(cacheDir, tuningDevice(d))
	}
	return tune.WriteShipped(dir, d.fullName, d.vendor, source, []string{file})
}

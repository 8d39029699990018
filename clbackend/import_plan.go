package clbackend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/clbackend/tune"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/wire"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

func decodeArg(d *wire.Decoder) any {
	tag := d.Byte("argument tag")
	switch tag {
	case argSlot:
		return slotArg(d.Varint("slot"))
	case argLocal:
		return cl.LocalBuffer(d.Varint("local buffer"))
	}
	typ, ok := argTypes[reflect.Kind(tag)]
	if !ok {
		d.Fail("unknown argument tag %d", tag)
		return nil
	}
	v := reflect.New(typ).Elem()
	switch {
	case v.CanInt():
		v.SetInt(d.Varint("argument"))
	case v.CanUint():
		v.SetUint(d.Uvarint("argument"))
	default:
		v.SetFloat(math.Float64frombits(d.U64("argument")))
	}
	return v.Interface()
}

func decodeInts(d *wire.Decoder, what string) []int {
	n := d.Count(what, 1)
	v := make([]int, 0, n)
	for range n {
		v = append(v, int(d.Varint(what)))
	}
	return v
}

func decodeByName[V any](d *wire.Decoder, what string, byName map[string]*graph.Node, val func() V) map[*graph.Node]V {
	n := d.Count(what, 1)
	m := make(map[*graph.Node]V, n)
	for range n {
		name := d.Str(what)
		v := val()
		node := byName[name]
		if d.Err == nil && node == nil {
			d.Fail("%s: node %q is not in the graph", what, name)
		}
		m[node] = v
	}
	return m
}

type ownedModelKey struct{}

// withOwnedModel tells compile that the model it is given is its own (one
// ImportModel decoded, or the clone CompileModel's passes made), so that
// it plans it without cloning it first (IS-Net medium: 0.12-0.24 s of
// copying 176 MB of weights).
func withOwnedModel(ctx context.Context) context.Context {
	return context.WithValue(ctx, ownedModelKey{}, true)
}

func ownsModel(ctx context.Context) bool { v, _ := ctx.Value(ownedModelKey{}).(bool); return v }

type preloadKey struct{}

// withPreload tells restorePlan and restoreOrBuild that the blob's
// program binaries are being loaded into the program cache until done
// closes.
func withPreload(ctx context.Context, done <-chan struct{}) context.Context {
	return context.WithValue(ctx, preloadKey{}, done)
}

// waitPreload waits until the blob's program binaries are in the program
// cache (see withPreload), so that no lookup builds one of them from
// source meanwhile.
func waitPreload(ctx context.Context) {
	if done, ok := ctx.Value(preloadKey{}).(<-chan struct{}); ok {
		<-done
	}
}

type planRecordKey struct{}

// recordOf is a blob's plan record and the memory it lies in.
type recordOf struct {
	rec []byte
	mem *hostMem
}

func withPlanRecord(ctx context.Context, rec []byte, mem *hostMem) context.Context {
	return context.WithValue(ctx, planRecordKey{}, recordOf{rec, mem})
}

func planRecordOf(ctx context.Context) []byte {
	r, _ := ctx.Value(planRecordKey{}).(recordOf)
	return r.rec
}

// planRecordMem is the memory the plan record lies in (see hostMem).
func planRecordMem(ctx context.Context) *hostMem {
	r, _ := ctx.Value(planRecordKey{}).(recordOf)
	return r.mem
}

func (c *CompiledModel) restorePlan(ctx context.Context, p *Plugin, key string, rec []byte) (_ *plan, err error) {
	d := wire.Decoder{Data: rec, Sentinel: driver.ErrCorrupt}
	if v := d.U32("plan record version"); d.Err == nil && v != planRecordVersion {
		return nil, fmt.Errorf("%w: plan record version %d, this build reads %d", errStaleRecord, v, planRecordVersion)
	}
	if k := d.Str("plan key"); d.Err == nil && k != key {
		return nil, fmt.Errorf("%w: plan record of input shapes %q, the model's are %q", errStaleRecord, k, key)
	}
	byName, err := c.nodesByName()
	if err != nil {
		return nil, err
	}
	pl := &plan{key: key, byName: byName, consts: map[int]*cl.MemObject{}}
	defer func() {
		if err != nil {
			_ = pl.release(c.ctx)
		}
	}()
	nv := d.Count("values", 8)
	dropped := map[int]bool{}
	pl.values = make([]value, 0, nv)
	for range nv {
		v := value{typ: tensor.ElementType(d.Byte("value type"))}
		v.shape = make(tensor.Shape, d.Count("value rank", 1))
		for j := range v.shape {
			v.shape[j] = d.Varint("value dim")
		}
		v.bytes = int(d.Varint("value bytes"))
		v.weight = d.Str("value weight")
		for _, x := range []*int{&v.held, &v.root, &v.off, &v.buf, &v.first, &v.last} {
			*x = int(d.Varint("value index"))
		}
		if d.Err == nil {
			if n, ok := v.shape.Bytes(v.typ); !v.typ.Valid() || !ok || n != int64(v.bytes) {
				d.Fail("value %d: %v%v is not %d bytes", len(pl.values), v.typ, v.shape, v.bytes)
			}
		}
		switch form := d.Byte("value host form"); form {
		case hostNone:
		case hostDropped:
			dropped[len(pl.values)] = true
		case hostConstant:
			n := byName[v.weight]
			if d.Err == nil && (n == nil || n.OpType != graph.OpConstant || n.Value == nil) {
				d.Fail("value %d: no Constant %q in the graph", len(pl.values), v.weight)
				break
			}
			if d.Err == nil {
				v.host = n.Value.Contiguous()
			}
		case hostData:
			n := d.Count("value data", 1)
			d.Bytes(int(d.Byte("value padding")), "value padding")
			raw := d.Bytes(n, "value data")
			if d.Err == nil {
				if v.host = hostTensor(v.typ, v.shape, raw); v.host == nil {
					d.Fail("value %d: %d bytes of data for %v%v", len(pl.values), n, v.typ, v.shape)
				}
			}
		default:
			d.Fail("value %d: unknown host form %d", len(pl.values), form)
		}
		if v.host != nil && (v.host.Type() != v.typ || !v.host.Shape().Equal(v.shape)) {
			d.Fail("value %d: host tensor %v%v, the plan says %v%v", len(pl.values), v.host.Type(), v.host.Shape(), v.typ, v.shape)
		}
		pl.values = append(pl.values, v)
	}
	nl := d.Count("launches", 8)
	var progKeys []string
	pl.launches = make([]launch, 0, nl)
	for range nl {
		var l launch
		name := d.Str("launch node")
		l.node = byName[name]
		if d.Err == nil && l.node == nil {
			d.Fail("launch of node %q, which the graph does not have", name)
		}
		k := &l.kernel
		for _, s := range []*string{&k.Name, &k.File, &k.Entry, &k.Options, &k.Generated, &l.options} {
			*s = d.Str("launch kernel")
		}
		progKeys = append(progKeys, d.Str("launch program key"))
		na := d.Count("launch arguments", 2)
		for range na {
			l.args = append(l.args, decodeArg(&d))
		}
		l.n = d.Varint("launch items")
		l.global = decodeInts(&d, "launch global size")
		if d.Byte("launch local flag") == 1 {
			l.local = decodeInts(&d, "launch local size")
		} else {
			decodeInts(&d, "launch local size")
		}
		l.bytes = d.Varint("launch bytes")
		pl.launches = append(pl.launches, l)
	}
	pl.params = decodeInts(&d, "plan inputs")
	pl.hostIn = make([]bool, d.Count("plan host inputs", 1))
	for i := range pl.hostIn {
		pl.hostIn[i] = d.Byte("plan host input") == 1
	}
	pl.results = decodeInts(&d, "plan outputs")
	pl.bufSizes = decodeInts(&d, "activation buffers")
	pl.seed = int(d.Varint("seed value"))
	pl.planned, pl.naive = d.Varint("planned bytes"), d.Varint("naive bytes")
	pl.impl = decodeByName(&d, "implementations", byName, func() string { return d.Str("implementation") })
	pl.order = decodeByName(&d, "execution order", byName, func() int { return int(d.Varint("order")) })
	pl.variants = decodeByName(&d, "variants", byName, func() string { return d.Str("variant") })
	nc := d.Count("choices", 6)
	for range nc {
		var ch TunedOp
		for _, s := range []*string{&ch.Node, &ch.Op, &ch.Key, &ch.Variant, &ch.Heuristic, &ch.Source} {
			*s = d.Str("choice")
		}
		ch.Ms, ch.HeuristicMs = math.Float64frombits(d.U64("choice ms")), math.Float64frombits(d.U64("choice ms"))
		ch.Tried, ch.Refused = int(d.Varint("choice tried")), int(d.Varint("choice refused"))
		for range d.Count("choice refusals", 1) {
			ch.Refusals = append(ch.Refusals, d.Str("choice refusal"))
		}
		pl.choices = append(pl.choices, ch)
	}
	if d.Err == nil && d.Pos != len(d.Data) {
		d.Fail("%d trailing bytes", len(d.Data)-d.Pos)
	}
	if d.Err != nil {
		return nil, fmt.Errorf("plan record: %w", d.Err)
	}
	if err := c.checkRecord(pl, dropped); err != nil {
		return nil, fmt.Errorf("%w: plan record: %v", driver.ErrCorrupt, err)
	}
	if err := c.checkChoices(pl.choices); err != nil {
		return nil, err
	}
	for i, v := range pl.values {
		if a := c.dev.subAlign; v.off != 0 && (a <= 0 || v.off%a != 0) {
			// Placed (plan_inplace.go) on a device with a finer
			// CL_DEVICE_MEM_BASE_ADDR_ALIGN: planned again here.
			return nil, fmt.Errorf("%w: value %d at offset %d, not a multiple of %s's sub-buffer alignment of %d bytes", errStaleRecord, i, v.off, c.dev.name(), a)
		}
	}
	srcs := make([]string, len(pl.launches))
	for i, l := range pl.launches {
		src, err := l.kernel.Source()
		if err != nil {
			return nil, fmt.Errorf("%w: plan record: node %q: %v", driver.ErrCorrupt, l.node.Name, err)
		}
		if programKey(c.run, src, l.options) != progKeys[i] {
			return nil, fmt.Errorf("%w: node %q: kernel %s (%s) is not the one the plan was made for", errStaleRecord, l.node.Name, l.kernel.Entry, l.kernel.File)
		}
		srcs[i] = src
	}
	b := &builder{p: p, c: c, pl: pl}
	if c.dev.inPlace > 0 {
		b.mem = planRecordMem(ctx)
	}
	if err := b.checkTotal(); err != nil {
		return nil, err
	}
	// The uploads first: the blob's binaries load meanwhile (ImportModel).
	if err := b.uploadConsts(); err != nil {
		return nil, err
	}
	waitPreload(ctx)
	for i := range pl.launches {
		l := &pl.launches[i]
		src := srcs[i]
		prog, err := p.cache.program(c.ctx, c.run, l.kernel.File, src, l.options, diskCache{c.cacheDir, c.binaries}, c.compilerLog)
		if err != nil {
			return nil, fmt.Errorf("gpu: node %q: %w", l.node.Name, err)
		}
		pl.progs = append(pl.progs, prog)
		l.prog = prog.val
	}
	return pl, nil
}

var errStaleRecord = errors.New("gpu: stale plan record")

func hostTensor(t tensor.ElementType, s tensor.Shape, raw []byte) *tensor.Tensor {
	if x, err := tensor.WrapBytes(t, s, raw); err == nil {
		return x
	}
	x, err := tensor.FromBytes(t, s, raw)
	if err != nil {
		return nil
	}
	return x
}

func (c *CompiledModel) checkRecord(pl *plan, dropped map[int]bool) error {
	nv := len(pl.values)
	inRange := func(i, n int) bool { return i >= 0 && i < n }
	for i, v := range pl.values {
		if !inRange(v.root, nv) || pl.values[v.root].root != v.root {
			return fmt.Errorf("value %d: bad root %d", i, v.root)
		}
		if v.held < 0 || v.held > len(c.core.Inputs()) {
			return fmt.Errorf("value %d: bad state input %d", i, v.held)
		}
		if v.root == i && v.host == nil && v.held == 0 && !dropped[i] && !inRange(v.buf, len(pl.bufSizes)) {
			return fmt.Errorf("value %d: bad buffer %d", i, v.buf)
		}
		if v.root != i && (v.off < 0 || pl.values[v.root].bytes-v.off < v.bytes) {
			return fmt.Errorf("value %d: %d bytes at %d over its root's %d", i, v.bytes, v.off, pl.values[v.root].bytes)
		}
		if v.off != 0 && (v.root == i || pl.values[v.root].host != nil) {
			return fmt.Errorf("value %d: offset %d in a value that is not an activation or state buffer", i, v.off)
		}
	}
	for i, s := range pl.bufSizes {
		if s < 0 {
			return fmt.Errorf("activation buffer %d: %d bytes", i, s)
		}
	}
	for i, v := range pl.values {
		if v.root == i && v.host == nil && v.held == 0 && !dropped[i] && v.bytes > pl.bufSizes[v.buf] {
			return fmt.Errorf("value %d: %d bytes in buffer %d of %d", i, v.bytes, v.buf, pl.bufSizes[v.buf])
		}
	}
	if len(pl.params) != len(c.core.Inputs()) || len(pl.hostIn) != len(pl.params) || len(pl.results) != len(c.core.Outputs()) {
		return fmt.Errorf("%d inputs and %d outputs for a model of %d and %d", len(pl.params), len(pl.results), len(c.core.Inputs()), len(c.core.Outputs()))
	}
	for _, v := range slices.Concat(pl.params, pl.results) {
		if !inRange(v, nv) {
			return fmt.Errorf("port value %d out of range", v)
		}
	}
	if pl.seed < 0 || pl.seed > nv {
		return fmt.Errorf("seed value %d out of range", pl.seed-1)
	}
	for _, l := range pl.launches {
		if _, err := kernels.Lookup(l.kernel.Name); err != nil && l.kernel.Generated == "" {
			return fmt.Errorf("node %q: %w", l.node.Name, err)
		}
		for _, a := range l.args {
			if s, ok := a.(slotArg); ok && !inRange(int(s), nv) {
				return fmt.Errorf("node %q: argument value %d out of range", l.node.Name, s)
			}
		}
		if len(l.global) < 1 || len(l.global) > 3 || (l.local != nil && len(l.local) != len(l.global)) {
			return fmt.Errorf("node %q: work sizes %v, %v", l.node.Name, l.global, l.local)
		}
	}
	for v := range pl.deviceReads() {
		if dropped[v] {
			return fmt.Errorf("value %d is read on the device, and the record left its data out", v)
		}
	}
	return nil
}

func (c *CompiledModel) checkChoices(choices []TunedOp) error {
	tn := c.tuning
	for _, ch := range choices {
		var rec tune.Record
		ok := false
		if tn != nil && tn.db != nil {
			rec, ok = tn.db.Lookup(ch.Key)
		}
		if !ok && tn != nil {
			rec, ok = tn.shipped.Lookup(ch.Key)
		}
		fam, _, _ := strings.Cut(ch.Key, " ")
		var forced kernels.Variant
		isForced := false
		if tn != nil {
			forced, isForced = tn.forced[fam]
		}
		switch ch.Source {
		case "recorded", "shipped", "tuned":
			if !ok || (rec.KeepsHeuristic() && ch.Variant != ch.Heuristic) || (!rec.KeepsHeuristic() && rec.Variant != ch.Variant) {
				return fmt.Errorf("%w: node %q: the tuning records now say %q for %s, the plan ran %q", errStaleRecord, ch.Node, rec.Variant, ch.Key, ch.Variant)
			}
		case "forced":
			if !isForced || forced.String() != ch.Variant {
				return fmt.Errorf("%w: node %q: %s no longer forces %s", errStaleRecord, ch.Node, KeyKernelVariants, ch.Variant)
			}
		default:
			if ok {
				return fmt.Errorf("%w: node %q: the tuning records now have %q for %s", errStaleRecord, ch.Node, rec.Variant, ch.Key)
			}
			if isForced {
				return fmt.Errorf("%w: node %q: %s now forces a variant of %s", errStaleRecord, ch.Node, KeyKernelVariants, fam)
			}
		}
	}
	return nil
}

func (c *CompiledModel) restoreOrBuild(ctx context.Context, p *Plugin, key string, shapes []tensor.Shape) (*plan, error) {
	if rec := planRecordOf(ctx); rec != nil {
		pl, err := c.restorePlan(ctx, p, key, rec)
		if errors.Is(err, errStaleRecord) && c.run == c.dev && c.ctx.inThread != nil {
			// Made for the in-thread companion (inthread.go)?
			run, cmdbufs, shared := c.run, c.commandBuffers, c.sharedIO
			c.runOn(c.ctx.inThread)
			if pl, err = c.restorePlan(ctx, p, key, rec); err != nil {
				c.run, c.commandBuffers, c.sharedIO = run, cmdbufs, shared
			}
		}
		if err == nil {
			p.cache.plansRestored.Add(1)
			return pl, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p.cache.planRecordsRefused.Add(1)
		if c.elided {
			return nil, driver.Errorf(driver.ErrIncompatible, "gpu: import of %q: the model cache's blob leaves out the weights its plan record holds packed, and the record is not used (%v): compile the model again (with CACHE_DIR, Core.CompileModel does)", c.model.Name, err)
		}
		if !errors.Is(err, errStaleRecord) {
			warnf("gpu: import of %q: planning again: %v", c.model.Name, err)
		}
	}
	waitPreload(ctx)
	return c.buildPlan(ctx, p, key, shapes, nil)
}

package hetero

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/wire"
	"github.com/clinfer/clinfer/plugin/driver"
)

// Blob sections of an exported HETERO model: the affinity graph (the
// user's model, every node with its device), the split (which subgraph
// runs where and how values flow between them), and one section per
// subgraph holding the blob its device exported.
const (
	modelSection     = "hetero:model"
	splitSection     = "hetero:split"
	subSectionPrefix = "hetero:sub"
)

// Interface checks.
var (
	_ driver.Exporter = (*CompiledModel)(nil)
	_ driver.Importer = (*Plugin)(nil)
)

// Export writes the compiled model: the shared blob header (device
// HETERO, the configuration, the ports), the affinity graph, the split and
// every subgraph's compiled model as its device exports it (with, for the
// GPU, the program binaries). A subgraph whose device cannot export is an
// error wrapping driver.ErrNotImplemented naming the device.
func (c *CompiledModel) Export(w io.Writer) error {
	enc, err := c.core.ExportGraph(c.model)
	if err != nil {
		return err
	}
	sections := []driver.BlobSection{
		{Name: modelSection, Data: enc},
		{Name: splitSection, Data: encodeSplit(c.subs)},
	}
	for k, sub := range c.compiled {
		ex, ok := sub.(driver.Exporter)
		if !ok {
			return driver.Errorf(driver.ErrNotImplemented, "hetero: export model %q: %s on %s: the device cannot export compiled models", c.model.Name, c.subs[k].name, c.subs[k].device)
		}
		var buf bytes.Buffer
		if err := ex.Export(&buf); err != nil {
			return fmt.Errorf("hetero: export model %q: %s on %s: %w", c.model.Name, c.subs[k].name, c.subs[k].device, err)
		}
		sections = append(sections, driver.BlobSection{Name: fmt.Sprintf("%s%d", subSectionPrefix, k), Data: buf.Bytes()})
	}
	return driver.WriteBlob(w, &driver.Blob{
		Header:   c.core.Header(DeviceName, DeviceName, driver.ExportConfig(c.core.Props())),
		Sections: sections,
	})
}

// ImportModel rebuilds a compiled model that CompiledModel.Export wrote:
// each subgraph is imported on its device (through HETERO's own devices),
// and each device checks its part's header, so a subgraph exported for
// another device architecture is an error wrapping driver.ErrIncompatible
// that names both. A truncated, damaged or inconsistent blob wraps
// driver.ErrCorrupt. props override the exported configuration and are
// handed on to the devices as in CompileModel. The imported model reports
// LOADED_FROM_CACHE=YES.
func (p *Plugin) ImportModel(ctx context.Context, r io.Reader, props map[string]string) (_ driver.CompiledModel, err error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("hetero: import: %w", err)
	}
	blob, err := driver.ReadBlob(r, DeviceName, DeviceName)
	if err != nil {
		return nil, fmt.Errorf("hetero: %w", err)
	}
	cfg, err := driver.ImportConfig(p.state.Props(), blob.Header, props)
	if err != nil {
		return nil, fmt.Errorf("hetero: %w", err)
	}
	mdata, ok := blob.Section(modelSection)
	if !ok {
		return nil, corruptf("the compiled model has no %q section", modelSection)
	}
	model := &graph.Model{}
	if err := model.UnmarshalBinary(mdata); err != nil {
		return nil, corruptf("%v", err)
	}
	sdata, ok := blob.Section(splitSection)
	if !ok {
		return nil, corruptf("the compiled model has no %q section", splitSection)
	}
	subs, err := decodeSplit(sdata)
	if err != nil {
		return nil, corruptf("split: %v", err)
	}
	cm := &CompiledModel{model: model, subs: subs}
	defer func() {
		if err != nil {
			_ = cm.closeSubs()
		}
	}()
	// A crafted blob can hold an affinity graph no compiler produced;
	// reading its ports must not panic.
	defer func() {
		if rec := recover(); rec != nil {
			err = corruptf("model %q: bad graph: %v", model.Name, rec)
		}
	}()
	for k, sg := range subs {
		if err = ctx.Err(); err != nil {
			return nil, fmt.Errorf("hetero: import: %w", err)
		}
		data, ok := blob.Section(fmt.Sprintf("%s%d", subSectionPrefix, k))
		if !ok {
			return nil, corruptf("the compiled model has no section for %s", sg.name)
		}
		var dprops map[string]string
		if dprops, err = p.deviceProps(cfg, sg.device); err != nil {
			return nil, fmt.Errorf("hetero: import model %q: %s on %s: %w", model.Name, sg.name, sg.device, err)
		}
		var sub driver.CompiledModel
		if sub, err = p.core.ImportModel(ctx, bytes.NewReader(data), sg.device, dprops); err != nil {
			return nil, fmt.Errorf("hetero: import model %q: %s on %s: %w", model.Name, sg.name, sg.device, err)
		}
		cm.compiled = append(cm.compiled, sub)
	}
	if len(blob.Sections) != 2+len(subs) {
		return nil, corruptf("%d sections for %d subgraphs", len(blob.Sections), len(subs))
	}
	if err = checkSplit(cm); err != nil {
		return nil, err
	}
	if err = cm.init(model.Name, cfg); err != nil {
		return nil, err
	}
	if err = driver.CheckPorts("input", blob.Header.Inputs, cm.core.Inputs()); err != nil {
		return nil, fmt.Errorf("hetero: %w", err)
	}
	if err = driver.CheckPorts("output", blob.Header.Outputs, cm.core.Outputs()); err != nil {
		return nil, fmt.Errorf("hetero: %w", err)
	}
	cm.core.SetProps(cm.core.Props().Extend(driver.ReadOnlySpec(driver.KeyLoadedFromCache, "YES")))
	return cm, nil
}

// corruptError is a damaged or inconsistent HETERO blob; like the blob
// errors of package plugin it matches driver.ErrCorrupt and
// driver.ErrInvalidArgument.
type corruptError struct{ msg string }

func (e *corruptError) Error() string   { return e.msg }
func (e *corruptError) Unwrap() []error { return []error{driver.ErrCorrupt, driver.ErrInvalidArgument} }

func corruptf(format string, args ...any) error {
	return &corruptError{msg: "hetero: import: " + fmt.Sprintf(format, args...)}
}

// checkSplit checks that the decoded split fits the affinity graph and the
// imported models (before init reads it), so a
// request built from it cannot index out of range or bind a port that
// does not exist: every subgraph input comes from a model input or from a
// link of an earlier subgraph and is an input of its compiled model, and
// every model output is produced by exactly one subgraph under its name.
func checkSplit(c *CompiledModel) error {
	results := c.model.Results
	produced := make([]bool, len(results))
	for k, sg := range c.subs {
		ins := c.compiled[k].Inputs()
		outs := c.compiled[k].Outputs()
		if len(ins) != len(sg.inputs) {
			return corruptf("%s: the split lists %d inputs, its compiled model has %d", sg.name, len(sg.inputs), len(ins))
		}
		seen := map[string]bool{}
		for _, in := range sg.inputs {
			if _, ok := portNamed(ins, in.name); !ok || seen[in.name] {
				return corruptf("%s: input %q is not an input of its compiled model, or is listed twice", sg.name, in.name)
			}
			seen[in.name] = true
			switch f := in.from; {
			case f.sub < 0:
				if f.input >= len(c.model.Parameters) {
					return corruptf("%s: input %q reads model input %d of %d", sg.name, in.name, f.input, len(c.model.Parameters))
				}
			case f.sub >= k:
				return corruptf("%s: input %q reads a later subgraph (%d)", sg.name, in.name, f.sub)
			default:
				if !contains(c.subs[f.sub].links, f.name) {
					return corruptf("%s: input %q reads %q, which %s does not pass on", sg.name, in.name, f.name, c.subs[f.sub].name)
				}
			}
		}
		for _, l := range sg.links {
			if _, ok := portNamed(outs, l); !ok {
				return corruptf("%s: link %q is not an output of its compiled model", sg.name, l)
			}
		}
		for _, o := range sg.outputs {
			if o.index >= len(results) || produced[o.index] || o.name != results[o.index].Name {
				return corruptf("%s: output %q (model output %d) does not match the model's outputs", sg.name, o.name, o.index)
			}
			if _, ok := portNamed(outs, o.name); !ok {
				return corruptf("%s: output %q is not an output of its compiled model", sg.name, o.name)
			}
			produced[o.index] = true
		}
	}
	for i, ok := range produced {
		if !ok {
			return corruptf("no subgraph produces model output %q", results[i].Name)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// encodeSplit writes the subgraph table: per subgraph its name, device,
// inputs with their sources, model outputs and links.
func encodeSplit(subs []*subgraph) []byte {
	var b []byte
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(subs)))
	for _, sg := range subs {
		str(sg.name)
		str(sg.device)
		b = binary.AppendUvarint(b, uint64(len(sg.inputs)))
		for _, in := range sg.inputs {
			str(in.name)
			b = binary.AppendVarint(b, int64(in.from.sub))
			b = binary.AppendUvarint(b, uint64(in.from.input))
			str(in.from.name)
		}
		b = binary.AppendUvarint(b, uint64(len(sg.outputs)))
		for _, o := range sg.outputs {
			str(o.name)
			b = binary.AppendUvarint(b, uint64(o.index))
		}
		b = binary.AppendUvarint(b, uint64(len(sg.links)))
		for _, l := range sg.links {
			str(l)
		}
	}
	return b
}

// splitDecoder reads what encodeSplit wrote (see wire.Decoder).
type splitDecoder struct {
	wire.Decoder
}

// index reads a non-negative index below 1<<30.
func (d *splitDecoder) index(what string) int {
	v := d.Uvarint(what)
	if d.Err == nil && v >= 1<<30 {
		d.Fail("%s: index %d is too large", what, v)
		return 0
	}
	return int(v)
}

// decodeSplit reads the subgraph table and checks what can be checked
// without the compiled models: device names, and sources that refer to
// earlier subgraphs.
func decodeSplit(data []byte) ([]*subgraph, error) {
	d := &splitDecoder{wire.Decoder{Data: data}}
	n := d.Count("subgraphs", 1)
	subs := make([]*subgraph, 0, n)
	for k := 0; k < n && d.Err == nil; k++ {
		sg := &subgraph{name: d.Str("subgraph name"), device: d.Str("subgraph device")}
		if d.Err != nil {
			break
		}
		name, _, prio, err := driver.ParseDeviceName(sg.device)
		if err != nil || name == DeviceName || prio != "" {
			d.Fail("%s: bad device %q", sg.name, sg.device)
			break
		}
		ni := d.Count("inputs", 1)
		for range ni {
			in := subInput{name: d.Str("input name")}
			sub := d.Varint("input source subgraph")
			in.from = source{input: d.index("input source index"), name: d.Str("input source name")}
			if d.Err == nil && (sub < -1 || sub >= int64(k)) {
				d.Fail("%s: input %q reads subgraph %d", sg.name, in.name, sub)
			}
			in.from.sub = int(sub)
			sg.inputs = append(sg.inputs, in)
		}
		no := d.Count("outputs", 1)
		for range no {
			sg.outputs = append(sg.outputs, subOutput{name: d.Str("output name"), index: d.index("output index")})
		}
		nl := d.Count("links", 1)
		for range nl {
			sg.links = append(sg.links, d.Str("link"))
		}
		subs = append(subs, sg)
	}
	if d.Err == nil && d.Pos != len(d.Data) {
		d.Fail("%d trailing bytes", len(d.Data)-d.Pos)
	}
	if d.Err != nil {
		return nil, d.Err
	}
	return subs, nil
}

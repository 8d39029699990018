package driver

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"sort"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/wire"
	"github.com/clinfer/clinfer/tensor"
)

// ExportFormatVersion is the version of the compiled-model blob format that
// WriteBlob writes and ReadBlob reads. ReadBlob rejects every other version.
const ExportFormatVersion uint32 = 2

// blobMagic opens every exported compiled model.
const blobMagic = "CLINFER\x00"

// Errors of exported compiled models. Both also match ErrInvalidArgument.
var (
	// ErrIncompatible: the blob was exported by another format version,
	// for another device or for another device architecture.
	ErrIncompatible = errors.New("plugin: incompatible compiled model")
	// ErrCorrupt: the blob is truncated or damaged.
	ErrCorrupt = errors.New("plugin: corrupt compiled model")
)

// Exporter is implemented by compiled models that can be written out and
// imported again, by the same device, with Importer.
type Exporter interface {
	// Export writes the compiled model to w: a header (see BlobHeader)
	// followed by what the device needs to rebuild it without compiling.
	Export(w io.Writer) error
}

// Importer is implemented by plugins that can rebuild a compiled model that
// one of their compiled models exported.
type Importer interface {
	// ImportModel reads an exported compiled model from r. A blob of another
	// format version, device or device architecture is an error wrapping
	// ErrIncompatible that names both values; a damaged one wraps
	// ErrCorrupt. props override the configuration the blob was exported
	// with. The imported model reports LOADED_FROM_CACHE=YES.
	ImportModel(ctx context.Context, r io.Reader, props map[string]string) (CompiledModel, error)
}

// BlobHeader is the device-independent part of an exported compiled model.
type BlobHeader struct {
	// FormatVersion is the blob format version; WriteBlob sets it.
	FormatVersion uint32
	// Device is the plugin name that exported the blob ("CPU").
	Device string
	// Architecture is the device's DEVICE_ARCHITECTURE at export.
	Architecture string
	// Config is the compiled model's read-write configuration.
	Config map[string]string
	// Inputs and Outputs describe the compiled model's ports.
	Inputs, Outputs []PortInfo
}

// BlobSection is one named, checksummed part of a blob's payload ("graph",
// a program binary).
type BlobSection struct {
	Name string
	Data []byte
	// Parts, when not nil, are what WriteBlob writes as the section's data
	// instead of Data: its bytes in pieces, one after another, so that a
	// device need not copy hundreds of MB of weights into one buffer to
	// export them. ReadBlob returns a section's data in Data.
	Parts [][]byte
	// Align, when above 0, makes WriteBlob start the section's frame (its
	// name, then its data) at a multiple of Align bytes from the blob's
	// start, after a PaddingSection it writes before it: a blob mapped
	// from its file (CacheBlobFile.Map) then has the section as aligned as
	// ReadBlob's allocation of it (a device uses the plan record's weights
	// in place only at its CL_DEVICE_MEM_BASE_ADDR_ALIGN).
	Align int
}

// PaddingSection names the sections WriteBlob writes to align the next one
// (BlobSection.Align); importers skip them.
const PaddingSection = "padding"

// Blob is an exported compiled model: its header and its sections.
type Blob struct {
	Header   BlobHeader
	Sections []BlobSection
}

// Section returns the data of the first section with that name.
func (b *Blob) Section(name string) ([]byte, bool) {
	for _, s := range b.Sections {
		if s.Name == name {
			return s.Data, true
		}
	}
	return nil, false
}

type blobError struct {
	msg  string
	kind error
}

func (e *blobError) Error() string   { return e.msg }
func (e *blobError) Unwrap() []error { return []error{e.kind, ErrInvalidArgument} }

func corrupt(format string, args ...any) error {
	return &blobError{msg: "plugin: import: " + fmt.Sprintf(format, args...), kind: ErrCorrupt}
}

func incompatible(format string, args ...any) error {
	return &blobError{msg: "plugin: import: " + fmt.Sprintf(format, args...), kind: ErrIncompatible}
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// WriteBlob writes b to w: the magic, the format version, the header and
// each section, every part with its length and a CRC-32C, so truncation and
// corruption are detected on import. Sections go to w as they are (a
// model's weights are hundreds of MB: gathering the blob first copied
// them over and over).
func WriteBlob(w io.Writer, b *Blob) error {
	var e blobEncoder
	h := b.Header
	e.str(h.Device)
	e.str(h.Architecture)
	keys := make([]string, 0, len(h.Config))
	for k := range h.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.str(k)
		e.str(h.Config[k])
	}
	e.ports(h.Inputs)
	e.ports(h.Outputs)
	sections := padSections(b.Sections)
	e.uvarint(uint64(len(sections)))

	var head bytes.Buffer
	head.WriteString(blobMagic)
	head.Write(binary.LittleEndian.AppendUint32(nil, ExportFormatVersion))
	at := head.Len() + 8 + e.buf.Len() + 4 // where the next frame starts
	err := frame(w, head.Bytes(), e.buf.Bytes())
	for i, s := range sections {
		if err != nil {
			break
		}
		var name blobEncoder
		name.str(s.Name)
		parts := append([][]byte{name.buf.Bytes()}, s.Parts...)
		if s.Parts == nil {
			parts = append(parts, s.Data)
		}
		if s.Name == PaddingSection && i+1 < len(sections) && sections[i+1].Align > 0 {
			// Zeros up to the aligned start of the next frame's data:
			// this frame is 8+len(name)+n+4 bytes, the next one's data
			// starts 8 bytes into it.
			a := sections[i+1].Align
			n := (a - (at+8+len(name.buf.Bytes())+4+8)%a) % a
			parts = append(parts[:1], make([]byte, n))
		}
		for _, p := range parts {
			at += len(p)
		}
		at += 12
		err = frame(w, nil, parts...)
	}
	if err != nil {
		return errorf(ErrDevice, "plugin: export %s model: %w", h.Device, err)
	}
	return nil
}

// frame writes pre, then a frame of parts: their total length, the parts
// and their CRC-32C.
func frame(w io.Writer, pre []byte, parts ...[]byte) error {
	n, sum := 0, uint32(0)
	for _, p := range parts {
		n += len(p)
		sum = crc32.Update(sum, crcTable, p)
	}
	head := binary.LittleEndian.AppendUint64(pre, uint64(n))
	if _, err := w.Write(head); err != nil {
		return err
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, sum))
	return err
}

// readFrame reads one frame. Memory grows with the bytes actually read, not
// with the length the stream claims.
func readFrame(r io.Reader, what string) ([]byte, error) {
	var n [8]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, corrupt("%s: truncated (%v)", what, err)
	}
	size := binary.LittleEndian.Uint64(n[:])
	var data []byte
	if left := remaining(r); left >= 0 && size <= uint64(left) {
		// The reader holds that much: read it into one allocation (a
		// model's weights are hundreds of MB; growing a buffer copies them
		// over and over).
		data = make([]byte, size)
		if got, err := io.ReadFull(r, data); err != nil {
			return nil, corrupt("%s: truncated: %d of %d bytes", what, got, size)
		}
	} else {
		// A size the reader cannot vouch for grows as bytes arrive, so a
		// corrupt size allocates no more than the data there is.
		var buf bytes.Buffer
		buf.Grow(int(min(size, 1<<20)))
		got, err := io.CopyN(&buf, r, int64(min(size, 1<<62)))
		if err != nil || uint64(got) != size {
			return nil, corrupt("%s: truncated: %d of %d bytes", what, got, size)
		}
		data = buf.Bytes()
	}
	var sum [4]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil {
		return nil, corrupt("%s: truncated checksum", what)
	}
	if want := binary.LittleEndian.Uint32(sum[:]); crc32.Checksum(data, crcTable) != want {
		return nil, corrupt("%s: checksum mismatch", what)
	}
	return data, nil
}

// remaining returns how many bytes r has left to read when it can tell (a
// file, a bytes.Reader), else -1.
func remaining(r io.Reader) int64 {
	switch r := r.(type) {
	case interface{ Len() int }:
		return int64(r.Len())
	case interface {
		io.Seeker
		Stat() (fs.FileInfo, error)
	}:
		st, err := r.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return -1
		}
		pos, err := r.Seek(0, io.SeekCurrent)
		if err != nil || pos > st.Size() {
			return -1
		}
		return st.Size() - pos
	}
	return -1
}

// ReadBlob reads a blob written by WriteBlob and checks it is meant for this
// device: a format version other than ExportFormatVersion, another device
// name or another architecture is an error wrapping ErrIncompatible that
// names both values; a truncated or damaged blob wraps ErrCorrupt. Devices
// call it first in ImportModel. It never panics on bad input.
func ReadBlob(r io.Reader, device, architecture string) (*Blob, error) {
	return readBlob(r, func(what string) ([]byte, error) { return readFrame(r, what) }, device, architecture)
}

// padSections returns sections with a PaddingSection before each one that
// asks for an alignment (its size is WriteBlob's to choose).
func padSections(sections []BlobSection) []BlobSection {
	out := make([]BlobSection, 0, len(sections))
	for _, s := range sections {
		if s.Align > 0 {
			out = append(out, BlobSection{Name: PaddingSection})
		}
		out = append(out, s)
	}
	return out
}

// ParseBlob is ReadBlob of a blob in memory: its sections' data are
// slices of data, not copies.
func ParseBlob(data []byte, device, architecture string) (*Blob, error) {
	r := bytes.NewReader(data)
	return readBlob(r, func(what string) ([]byte, error) {
		at := len(data) - r.Len()
		frame, err := sliceFrame(data[at:], what)
		if err == nil {
			_, err = r.Seek(int64(at+8+len(frame)+4), io.SeekStart)
		}
		return frame, err
	}, device, architecture)
}

// sliceFrame is readFrame of the frame data starts with, without a copy.
func sliceFrame(data []byte, what string) ([]byte, error) {
	if len(data) < 8 {
		return nil, corrupt("%s: truncated (%v)", what, io.ErrUnexpectedEOF)
	}
	size := binary.LittleEndian.Uint64(data)
	if size > uint64(len(data)-8) {
		return nil, corrupt("%s: truncated: %d of %d bytes", what, len(data)-8, size)
	}
	frame := data[8 : 8+size]
	if uint64(len(data)-8)-size < 4 {
		return nil, corrupt("%s: truncated checksum", what)
	}
	if want := binary.LittleEndian.Uint32(data[8+size:]); crc32.Checksum(frame, crcTable) != want {
		return nil, corrupt("%s: checksum mismatch", what)
	}
	return frame, nil
}

// readBlob reads the magic and the version from r, then the header's and
// the sections' frames with frame.
func readBlob(r io.Reader, frame func(what string) ([]byte, error), device, architecture string) (*Blob, error) {
	var head [len(blobMagic) + 4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, corrupt("not a clinfer compiled model: truncated header (%v)", err)
	}
	if string(head[:len(blobMagic)]) != blobMagic {
		return nil, corrupt("not a clinfer compiled model (bad magic %q)", head[:len(blobMagic)])
	}
	if v := binary.LittleEndian.Uint32(head[len(blobMagic):]); v != ExportFormatVersion {
		return nil, incompatible("blob format version %d, this build reads version %d; export the model again", v, ExportFormatVersion)
	}
	hb, err := frame("header")
	if err != nil {
		return nil, err
	}
	d := blobDecoder{wire.Decoder{Data: hb}}
	b := &Blob{Header: BlobHeader{FormatVersion: ExportFormatVersion}}
	h := &b.Header
	h.Device = d.Str("device")
	h.Architecture = d.Str("architecture")
	if d.Err == nil && h.Device != device {
		return nil, incompatible("compiled model was exported by device %q, not %q", h.Device, device)
	}
	if d.Err == nil && h.Architecture != architecture {
		return nil, incompatible("compiled model was exported for %s architecture %q, this device's architecture is %q", device, h.Architecture, architecture)
	}
	nc := d.Count("config", 2)
	h.Config = make(map[string]string, nc)
	for range nc {
		k := d.Str("config key")
		h.Config[k] = d.Str("config value")
	}
	h.Inputs = d.ports()
	h.Outputs = d.ports()
	ns := d.Count("sections", 0)
	if d.Err != nil {
		return nil, corrupt("header: %v", d.Err)
	}
	if d.Pos != len(d.Data) {
		return nil, corrupt("header: %d trailing bytes", len(d.Data)-d.Pos)
	}
	for i := range ns {
		data, err := frame(fmt.Sprintf("section %d of %d", i+1, ns))
		if err != nil {
			return nil, err
		}
		sd := blobDecoder{wire.Decoder{Data: data}}
		name := sd.Str("section name")
		if sd.Err != nil {
			return nil, corrupt("section %d: %v", i+1, sd.Err)
		}
		b.Sections = append(b.Sections, BlobSection{Name: name, Data: data[sd.Pos:]})
		if len(data) > 1<<20 {
		}
	}
	return b, nil
}

// CheckPorts compares the ports a device rebuilt on import with the ports
// the header recorded; a difference is an error wrapping ErrCorrupt that
// names the port.
func CheckPorts(kind string, header, rebuilt []PortInfo) error {
	if len(header) != len(rebuilt) {
		return corrupt("header lists %d %ss, the model has %d", len(header), kind, len(rebuilt))
	}
	for i, h := range header {
		r := rebuilt[i]
		if h.Name != r.Name || h.Type != r.Type || h.Shape.String() != r.Shape.String() {
			return corrupt("%s %d: header says %q %v%v, the model has %q %v%v", kind, i, h.Name, h.Type, h.Shape, r.Name, r.Type, r.Shape)
		}
	}
	return nil
}

// ExportConfig returns the read-write values of a compiled model's
// configuration for BlobHeader.Config, without CACHE_DIR (where the blob is
// cached says nothing about how it was compiled).
func ExportConfig(p *Properties) map[string]string {
	out := map[string]string{}
	for _, k := range p.Keys() {
		s, ok := p.Spec(k)
		if !ok || !s.Mutable || s.Get != nil || k == KeyCacheDir {
			continue
		}
		if v, err := p.Get(k); err == nil {
			out[k] = v
		}
	}
	return out
}

// ImportConfig returns a copy of a device's configuration with the blob's
// configuration and then props applied (later wins). A blob key the device
// does not know is an error wrapping ErrIncompatible.
func ImportConfig(device *Properties, h BlobHeader, props map[string]string) (*Properties, error) {
	cfg := device.Clone()
	for _, k := range sortedNames(h.Config) {
		if !cfg.Has(k) {
			return nil, incompatible("compiled model was exported with property %s, which device %s does not have", k, h.Device)
		}
	}
	if err := cfg.Set(h.Config); err != nil {
		return nil, incompatible("compiled model configuration: %v", err)
	}
	if err := cfg.Set(props); err != nil {
		return nil, err
	}
	return cfg, nil
}

// blobEncoder writes the header's fields.
type blobEncoder struct{ buf bytes.Buffer }

func (e *blobEncoder) uvarint(v uint64) { e.buf.Write(binary.AppendUvarint(nil, v)) }
func (e *blobEncoder) varint(v int64)   { e.buf.Write(binary.AppendVarint(nil, v)) }
func (e *blobEncoder) str(s string)     { e.uvarint(uint64(len(s))); e.buf.WriteString(s) }

func (e *blobEncoder) ports(ps []PortInfo) {
	e.uvarint(uint64(len(ps)))
	for _, p := range ps {
		e.str(p.Name)
		e.buf.WriteByte(byte(p.Type))
		e.buf.WriteByte(byte(p.Kind))
		if !p.Shape.RankKnown {
			e.buf.WriteByte(0)
			continue
		}
		e.buf.WriteByte(1)
		e.uvarint(uint64(len(p.Shape.Dims)))
		for _, d := range p.Shape.Dims {
			e.varint(d.Size)
			e.str(d.Name)
		}
	}
}

// blobDecoder reads the header's fields (see wire.Decoder).
type blobDecoder struct {
	wire.Decoder
}

func (d *blobDecoder) ports() []PortInfo {
	n := d.Count("ports", 3)
	ps := make([]PortInfo, 0, n)
	for i := 0; i < n && d.Err == nil; i++ {
		p := PortInfo{Name: d.Str("port name")}
		p.Type = tensor.ElementType(d.Byte("port type"))
		if d.Err == nil && !p.Type.Valid() && p.Type != tensor.Undefined {
			d.Fail("port %q: unknown element type %d", p.Name, uint8(p.Type))
		}
		p.Kind = tensor.Kind(d.Byte("port kind"))
		if d.Err == nil && p.Kind > tensor.KindOptionalSequence {
			d.Fail("port %q: unknown kind %d", p.Name, uint8(p.Kind))
		}
		switch d.Byte("port rank flag") {
		case 0:
		case 1:
			nd := d.Count("port rank", 2)
			p.Shape = graph.PartialShape{RankKnown: true, Dims: make([]graph.Dim, nd)}
			for j := 0; j < nd && d.Err == nil; j++ {
				p.Shape.Dims[j].Size = d.Varint("port dim")
				p.Shape.Dims[j].Name = d.Str("port dim name")
			}
		default:
			d.Fail("port %q: bad rank flag", p.Name)
		}
		ps = append(ps, p)
	}
	return ps
}

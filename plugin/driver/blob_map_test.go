package driver_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/plugin/driver"
)

// TestParseBlob: a blob in memory parses as ReadBlob reads it, its
// sections' data slices of the memory, and every prefix or flipped byte of
// it is refused as ReadBlob refuses it.
func TestParseBlob(t *testing.T) {
	data := encodeBlob(t, sampleBlob())
	want, err := driver.ReadBlob(bytes.NewReader(data), "TESTDEV", "arch-1")
	require.NoError(t, err)
	got, err := driver.ParseBlob(data, "TESTDEV", "arch-1")
	require.NoError(t, err)
	assert.Equal(t, want.Header, got.Header)
	require.Len(t, got.Sections, len(want.Sections))
	for i, s := range want.Sections {
		assert.Equal(t, s.Name, got.Sections[i].Name)
		assert.Equal(t, s.Data, got.Sections[i].Data)
	}
	last := got.Sections[2].Data
	assert.Equal(t, unsafe.SliceData(data[len(data)-4-len(last):]), unsafe.SliceData(last), "a slice of the memory, not a copy")

	for n := range len(data) {
		_, err := driver.ParseBlob(data[:n], "TESTDEV", "arch-1")
		require.ErrorIs(t, err, driver.ErrCorrupt, "prefix %d of %d", n, len(data))
	}
	for i := range data {
		c := bytes.Clone(data)
		c[i] ^= 0x5a
		_, err := driver.ParseBlob(c, "TESTDEV", "arch-1")
		require.Error(t, err, "flip at %d", i)
	}
	forged := binary.LittleEndian.AppendUint64(bytes.Clone(data[:12]), 1<<62)
	_, err = driver.ParseBlob(append(forged, 1, 2, 3), "TESTDEV", "arch-1")
	require.ErrorIs(t, err, driver.ErrCorrupt)
}

// TestBlobPartsAndAlign: a section written in Parts reads back as their
// concatenation, and a section with Align starts its frame's data (its
// name, then its data) at a multiple of it from the blob's start, after a
// PaddingSection, whatever came before.
func TestBlobPartsAndAlign(t *testing.T) {
	for _, lead := range []int{0, 1, 7, 100, 127, 128, 4000} {
		b := sampleBlob()
		b.Sections = append(b.Sections[:1:1],
			driver.BlobSection{Name: "lead", Data: make([]byte, lead)},
			driver.BlobSection{Name: "plan", Parts: [][]byte{[]byte("ab"), nil, []byte("cde")}, Align: 128},
			driver.BlobSection{Name: "tail", Data: []byte{9}})
		data := encodeBlob(t, b)
		got, err := driver.ParseBlob(data, "TESTDEV", "arch-1")
		require.NoError(t, err)
		var names []string
		for _, s := range got.Sections {
			names = append(names, s.Name)
		}
		require.Equal(t, []string{"graph", "lead", driver.PaddingSection, "plan", "tail"}, names, "lead %d", lead)
		plan := got.Sections[3].Data
		assert.Equal(t, []byte("abcde"), plan)
		// The frame's data: the name's length byte and "plan" before it.
		at := int(uintptr(unsafe.Pointer(unsafe.SliceData(plan))) - uintptr(unsafe.Pointer(unsafe.SliceData(data))))
		assert.Zero(t, (at-1-len("plan"))%128, "lead %d: the section's frame data at %d", lead, at-5)
		again, err := driver.ReadBlob(bytes.NewReader(data), "TESTDEV", "arch-1")
		require.NoError(t, err)
		assert.Equal(t, []byte("abcde"), again.Sections[3].Data)
	}
}

// TestCacheBlobFileMap: Map parses the file's blob as ReadBlob does, and
// its sections stay readable after the file is removed, until unmap.
func TestCacheBlobFileMap(t *testing.T) {
	data := encodeBlob(t, sampleBlob())
	path := filepath.Join(t.TempDir(), "m.blob")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	b, unmap, err := (&driver.CacheBlobFile{File: f}).Map("TESTDEV", "arch-1")
	require.NoError(t, f.Close())
	require.NoError(t, err)
	require.NoError(t, os.Remove(path))
	require.Len(t, b.Sections, 3)
	assert.Equal(t, []byte("abc"), b.Sections[0].Data)
	assert.Equal(t, []byte{0, 1, 2}, b.Sections[2].Data)
	if runtime.GOOS == "linux" {
		require.NotNil(t, unmap, "mapped, not read")
	}
	if unmap != nil { // nil where the file was read, not mapped
		require.NoError(t, unmap())
	}

	require.NoError(t, os.WriteFile(path, data[:len(data)-1], 0o600))
	f, err = os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	_, _, err = (&driver.CacheBlobFile{File: f}).Map("TESTDEV", "arch-1")
	assert.ErrorIs(t, err, driver.ErrCorrupt)
}

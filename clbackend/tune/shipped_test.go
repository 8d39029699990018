package tune_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/clbackend/tune"
	"github.com/clinfer/clinfer/kernels"
)

// shippedJSON is a shipped database for devices named by match, made with
// driver, holding key -> variant.
func shippedJSON(t *testing.T, driver string, match []string, key, variant string) []byte {
	t.Helper()
	b, err := json.Marshal(tune.ShippedFile{Format: tune.ShippedFormat, Device: tune.Device{Architecture: "arch", Driver: driver},
		Name: "dev", Vendor: "v", Match: match, Source: "test",
		Entries: map[string]tune.Record{key: {Variant: variant, Ms: 1, Mode: "EXHAUSTIVE", Updated: "2026-01-01T00:00:00Z"}}})
	require.NoError(t, err)
	return b
}

// TestChooseShipped chooses among shipped databases by device name and
// driver: the longest matching name prefix, then the same driver; a
// broken file is reported and skipped; no match is nil.
func TestChooseShipped(t *testing.T) {
	const key = "gemm M=64 N=64 K=64 batch=[] a=rows mode=0"
	names := []string{"a.json", "b.json", "c.json", "d.json"}
	data := [][]byte{
		shippedJSON(t, "1.0", []string{"NVIDIA"}, key, "gemm/tiled:TS_M=32,TS_N=32,TS_K=16,WPT_M=2,WPT_N=2,VW=1"),
		shippedJSON(t, "1.0", []string{"NVIDIA H100"}, key, "gemm/tiled:TS_M=64,TS_N=64,TS_K=16,WPT_M=4,WPT_N=4,VW=4"),
		shippedJSON(t, "2.0", []string{"NVIDIA H100"}, key, "gemm/tiled:TS_M=128,TS_N=128,TS_K=16,WPT_M=8,WPT_N=8,VW=4"),
		[]byte(`{"format": "clinfer-shipped-tuning-1", "match": ["NVIDIA H100"], "entries": {"k": {"variant": "gemm/bogus"}}}`),
	}
	for _, c := range []struct {
		name, driver, file string
		same               bool
	}{
		{"NVIDIA H100 80GB HBM3", "2.0", "c.json", true}, // longest prefix, same driver
		{"NVIDIA H100 80GB HBM3", "1.0", "b.json", true},
		{"NVIDIA H100 80GB HBM3", "3.0", "b.json", false}, // no same driver: the first of the longest
		{"NVIDIA A100", "2.0", "a.json", false},
		{"pthread-haswell-AMD EPYC", "3.1", "", false},
	} {
		s, err := tune.ChooseShippedFrom(names, data, c.name, c.driver)
		require.ErrorIs(t, err, tune.ErrFile, "d.json is broken")
		assert.ErrorContains(t, err, "d.json")
		if c.file == "" {
			assert.Nil(t, s, c.name)
			_, ok := s.Lookup(key)
			assert.False(t, ok, "a nil database has no records")
			continue
		}
		require.NotNil(t, s, c.name)
		assert.Equal(t, c.file, s.File, "%s, driver %s", c.name, c.driver)
		assert.Equal(t, c.same, s.SameDriver, "%s, driver %s", c.name, c.driver)
		_, ok := s.Lookup(key)
		assert.True(t, ok)
	}
}

// TestWriteShipped makes a shipped database from a tuning file (as cmd/tune
// -ship does) and reads it back: named after the device, serving its POCL
// target, with the file's records.
func TestWriteShipped(t *testing.T) {
	dir := t.TempDir()
	dev := tune.Device{Architecture: "GenuineIntel; pthread-skylake-avx512-Intel(R) Xeon(R) Processor; OpenCL 3.0 PoCL; driver 3.1", Driver: "3.1"}
	path := filepath.Join(dir, "clinfer-tuning-x.json")
	db, err := tune.Open(path, dev)
	require.NoError(t, err)
	db.Put("conv k", tune.Record{Variant: "conv/direct:VW=16,MR=16,NV=1,WG=1", Ms: 2, Mode: "FAST"})
	require.NoError(t, db.Save())

	// The directory need not exist yet (devicereport's OUTDIR/tuning).
	shipDir := filepath.Join(dir, "report", "tuning")
	out, err := tune.WriteShipped(shipDir, "pthread-skylake-avx512-Intel(R) Xeon(R) Processor", "GenuineIntel", "test", []string{path})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(shipDir, "pocl-pthread-skylake-avx512.json"), out)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	f, err := tune.ParseShipped(b)
	require.NoError(t, err)
	assert.Equal(t, []string{"pthread-skylake-avx512"}, f.Match)
	assert.Equal(t, dev, f.Device)
	assert.Equal(t, "conv/direct:VW=16,MR=16,NV=1,WG=1", f.Entries["conv k"].Variant)

	_, err = tune.WriteShipped(dir, "x", "y", "test", []string{filepath.Join(dir, "missing.json")})
	assert.Error(t, err)
	for name, want := range map[[2]string]string{
		{"NVIDIA H100 80GB HBM3", "NVIDIA Corporation"}:            "nvidia-nvidia-h100-80gb-hbm3.json",
		{"gfx1100", "Advanced Micro Devices, Inc."}:                "amd-gfx1100.json",
		{"pthread-haswell-AMD EPYC 7B13", "AuthenticAMD"}:          "pocl-pthread-haswell.json",
		{"Intel(R) Arc(TM) A770 Graphics", "Intel(R) Corporation"}: "intel-intel-r-arc-tm-a770-graphics.json",
	} {
		assert.Equal(t, want, tune.ShippedName(name[0], name[1]))
	}
}

// TestShippedDatabases checks every database shipped in kernels/tuning:
// its format, its records' variants (declared points), and its file name
// (ShippedName of the device it was made on).
func TestShippedDatabases(t *testing.T) {
	names, data := kernels.ShippedTuning()
	for i, name := range names {
		f, err := tune.ParseShipped(data[i])
		require.NoError(t, err, name)
		assert.Equal(t, tune.ShippedName(f.Name, f.Vendor), name, "kernels/tuning/%s is named after another device (%s, %s)", name, f.Name, f.Vendor)
		assert.NotEmpty(t, f.Entries, name)
	}
}

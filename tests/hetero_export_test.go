// Export, import and the model cache of HETERO over the GPU and CPU
// devices need a build with OpenCL; the HETERO blob format itself is
// tested without it in package hetero.

//go:build cgo && !noopencl

package tests

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/hetero"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// exact is the tolerance of outputs that must be identical: the same
// kernels on the same devices with the same inputs.
var exact = conformance.Tolerance{}

// runCompiled runs one inference of cm on the case's inputs and returns
// copies of the outputs by name.
func runCompiled(t *testing.T, cm driver.CompiledModel, c *conformance.RealCase) map[string]*tensor.Tensor {
	t.Helper()
	r, err := cm.CreateInferRequest()
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	bindCase(t, r, c)
	require.NoError(t, r.Infer(context.Background()))
	out := map[string]*tensor.Tensor{}
	for _, o := range cm.Outputs() {
		y, err := r.Tensor(o.Name)
		require.NoError(t, err)
		out[o.Name] = y.Clone()
	}
	return out
}

// TestHeteroExportImportGPUCPU exports the cls model split GPU -> CPU ->
// GPU (MaxPool disabled on the GPU) and imports it through another Core:
// same ports and split, identical outputs, and the GPU parts' programs
// come from the blob.
func TestHeteroExportImportGPUCPU(t *testing.T) {
	m, c, _ := clsCase(t)
	want, cm := infer(t, heteroCore(t, "MaxPool"), m, heteroGPUCPU, c)
	var blob bytes.Buffer
	require.NoError(t, cm.(driver.Exporter).Export(&blob))

	core := heteroCore(t, "")
	imported, err := core.ImportModel(context.Background(), bytes.NewReader(blob.Bytes()), heteroGPUCPU, nil)
	require.NoError(t, err)
	defer func() { assert.NoError(t, imported.Close()) }()
	assert.Equal(t, cm.Inputs(), imported.Inputs())
	assert.Equal(t, cm.Outputs(), imported.Outputs())
	for _, k := range []string{hetero.KeyNumberOfSubmodels, driver.KeyExecutionDevices} {
		w, err := cm.Property(k)
		require.NoError(t, err)
		g, err := imported.Property(k)
		require.NoError(t, err)
		assert.Equal(t, w, g, "%s", k)
	}
	loaded, err := imported.Property(driver.KeyLoadedFromCache)
	require.NoError(t, err)
	assert.Equal(t, "YES", loaded)
	devs, _ := imported.(*hetero.CompiledModel).Submodels()
	assert.Equal(t, []string{"GPU", "CPU", "GPU"}, devs)
	got := runCompiled(t, imported, c)
	require.Len(t, got, len(want))
	for name, w := range want {
		assert.NoError(t, conformance.Compare(got[name], w, exact), "output %q", name)
	}

	// A blob cut short is an error, not a panic.
	_, err = core.ImportModel(context.Background(), bytes.NewReader(blob.Bytes()[:blob.Len()*2/3]), heteroGPUCPU, nil)
	assert.ErrorIs(t, err, driver.ErrCorrupt)
}

// TestHeteroModelCacheGPUCPU compiles the split cls model twice through a
// Core with CACHE_DIR: compiled then imported, one blob in the directory,
// identical outputs.
func TestHeteroModelCacheGPUCPU(t *testing.T) {
	m, c, _ := clsCase(t)
	dir := t.TempDir()
	core := heteroCore(t, "MaxPool")
	props := map[string]string{driver.KeyCacheDir: dir}
	compile := func(loaded string) map[string]*tensor.Tensor {
		t.Helper()
		cm, err := core.CompileModel(context.Background(), m, heteroGPUCPU, props)
		require.NoError(t, err)
		defer func() { assert.NoError(t, cm.Close()) }()
		v, err := cm.Property(driver.KeyLoadedFromCache)
		require.NoError(t, err)
		assert.Equal(t, loaded, v, "%s", driver.KeyLoadedFromCache)
		devs, err := cm.Property(driver.KeyExecutionDevices)
		require.NoError(t, err)
		assert.Equal(t, "GPU CPU", devs)
		return runCompiled(t, cm, c)
	}
	want := compile("NO")
	files, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, files, 1, "one blob per model+device+config")
	path, err := core.CacheBlobPath(dir, m, heteroGPUCPU, props)
	require.NoError(t, err)
	assert.Equal(t, filepath.Base(path), files[0].Name())
	got := compile("YES")
	for name, w := range want {
		assert.NoError(t, conformance.Compare(got[name], w, exact), "output %q", name)
	}
	files, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, files, 1)
}

// Deadlines during a GPU inference need a build with OpenCL.

//go:build cgo && !noopencl

package tests

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tests/conformance"
)

// TestDeadlineDuringGPUInference runs PP-OCR det 1x3x640x640 on the GPU
// with a 5 ms deadline, synchronously and asynchronously: the run returns
// context.DeadlineExceeded once the kernels already queued have run (the
// request feeds the device a window of kernels at a time and checks the
// deadline in between, so it stops long before the whole inference), it
// leaves no OpenCL command or event behind, and the next run on the same
// request is right. The times are logged beside a full inference's.
func TestDeadlineDuringGPUInference(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	root, err := conformance.RepoRoot()
	require.NoError(t, err)
	c, err := conformance.ReadRealCase(filepath.Join(root, "tests", "testdata", "realmodels", "det_640", "case.json"))
	require.NoError(t, err)
	path, err := conformance.ModelPath(c.Model)
	require.NoError(t, err, "run `make models`")
	m, err := onnx.ReadFile(path)
	require.NoError(t, err)
	core := driver.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	cm, err := core.CompileModel(context.Background(), m, "GPU", nil)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cm.Close()) })
	r, err := driver.CreateAsyncInferRequest(cm)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	bindCase(t, r, c)
	outName := cm.Outputs()[0].Name
	// The reference, and the time of a whole inference.
	require.NoError(t, r.Infer(context.Background()))
	t0 := time.Now()
	require.NoError(t, r.Infer(context.Background()))
	full := time.Since(t0)
	y, err := r.Tensor(outName)
	require.NoError(t, err)
	want := y.Clone()

	runtime.GC()
	base := cl.LiveObjects()
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
			defer cancel()
			t0 := time.Now()
			if mode == "sync" {
				err = r.Infer(ctx)
			} else {
				require.NoError(t, r.StartAsync(ctx))
				err = r.Wait(context.Background())
			}
			took := time.Since(t0)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			t.Logf("%s: a 5 ms deadline returned after %v; a whole inference takes %v", mode, took, full)
			// A hang check, not a speed claim: a stopped inference must not
			// take many times a whole one.
			assert.Less(t, took, 10*full+time.Second, "the deadline was not honoured")
			assert.Equal(t, base, cl.LiveObjects(), "the stopped inference left OpenCL objects behind")

			require.NoError(t, r.Infer(context.Background()), "the next run")
			y, err := r.Tensor(outName)
			require.NoError(t, err)
			assert.NoError(t, conformance.Compare(y, want, exact))
		})
	}
}

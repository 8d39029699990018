// Fault injection at every OpenCL call needs a build with OpenCL.

//go:build cgo && !noopencl

package tests

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/hetero"
	"github.com/clinfer/clinfer/internal/faultinject"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
	"github.com/clinfer/clinfer/tests/conformance"
)

// faultCodes are the statuses the walk fails calls with, in turn.
var faultCodes = []cl.ErrorCode{cl.ErrOutOfResources, cl.ErrMemObjectAllocationFailure, cl.ErrOutOfHostMemory}

// envFaultStride names the variable that sets the walk's stride: every
// Nth call is failed. `make faults` walks every call (1). Without it the
// walk samples (each failed call costs a whole compile): the first call of
// every kind (sampleCalls).
const envFaultStride = "CLINFER_FAULT_STRIDE"

// faultExtra is how many calls the sampled walk fails besides the first
// of each kind, drawn with a fixed seed from the rest (later calls of a
// kind: a program's second build, a release on the error path).
const faultExtra = 12

// sampleCalls returns the 1-based calls a walk fails, given the op of
// every call of a counting run: with stride > 0 every stride-th call from
// the first; otherwise the first call of each kind (callKind: the op with
// its query, "clGetProgramInfo(CL_PROGRAM_BINARIES)") and faultExtra more,
// in call order.
func sampleCalls(ops []string, stride int) []int64 {
	var out []int64
	if stride > 0 {
		for n := 1; n <= len(ops); n += stride {
			out = append(out, int64(n))
		}
		return out
	}
	seen := map[string]bool{}
	var rest []int64
	for i, op := range ops {
		if k := callKind(op); !seen[k] {
			seen[k] = true
			out = append(out, int64(i+1))
		} else {
			rest = append(rest, int64(i+1))
		}
	}
	rng := rand.New(rand.NewPCG(37, 3))
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	out = append(out, rest[:min(faultExtra, len(rest))]...)
	slices.Sort(out)
	return out
}

// callKind is the kind of call op is for the sampled walk: the op with
// its query, but clSetKernelArg by its kernel only, not the argument's
// index ("clSetKernelArg(conv2d, 3)" is "clSetKernelArg(conv2d)"): every
// argument of every kernel goes through the one cl.Kernel.SetArgs loop of
// a request's setup, which returns at the first error, so failing a
// kernel's arguments in turn walks the same path with the same objects
// live. Keyed by argument, PP-OCR cls's walk failed 61 clSetKernelArg
// calls of 119 (206 s of a unit run under load); `make faults` still
// fails every one.
func callKind(op string) string {
	if rest, ok := strings.CutPrefix(op, "clSetKernelArg("); ok {
		if i := strings.LastIndex(rest, ", "); i >= 0 {
			return "clSetKernelArg(" + rest[:i] + ")"
		}
	}
	return op
}

// faultRun compiles m on device through a new Core, runs one inference,
// closes everything, and returns the outputs and every error on the way
// (a panic becomes an error too).
func faultRun(m *graph.Model, device string, c *conformance.RealCase, setup func(*driver.Core) error) (out map[string]*tensor.Tensor, err error) {
	defer func() {
		if p := recover(); p != nil {
			buf := make([]byte, 64<<10)
			err = fmt.Errorf("panic: %v\n%s", p, buf[:runtime.Stack(buf, false)])
		}
	}()
	var errs []error
	core := driver.NewCore()
	defer func() { err = errors.Join(append(errs, core.Close())...) }()
	if setup != nil {
		if err := setup(core); err != nil {
			errs = append(errs, err)
			return nil, nil
		}
	}
	cm, err := core.CompileModel(context.Background(), m, device, nil)
	if err != nil {
		errs = append(errs, err)
		return nil, nil
	}
	defer func() { errs = append(errs, cm.Close()) }()
	r, err := cm.CreateInferRequest()
	if err != nil {
		errs = append(errs, err)
		return nil, nil
	}
	defer func() { errs = append(errs, r.Close()) }()
	for _, in := range c.Inputs {
		x, err := in.Tensor()
		if err != nil {
			errs = append(errs, err)
			return nil, nil
		}
		if err := r.SetTensor(in.Name, x); err != nil {
			errs = append(errs, err)
			return nil, nil
		}
	}
	if err := r.Infer(context.Background()); err != nil {
		errs = append(errs, err)
		return nil, nil
	}
	out = map[string]*tensor.Tensor{}
	for _, o := range cm.Outputs() {
		y, err := r.Tensor(o.Name)
		if err != nil {
			errs = append(errs, err)
			return nil, nil
		}
		out[o.Name] = y.Clone()
	}
	return out, nil
}

// TestFaultInjectionEveryOpenCLCall fails each OpenCL call that compiling
// and running PP-OCR cls makes, one at a time, on GPU and on a HETERO split
// of it (MaxPool on the CPU), as SQLite's tests fail each allocation. For
// every call it checks: no panic; an error wrapping driver.ErrDevice that
// names the call, or, where the runtime tolerates the failure (an optional
// device query, a release whose error has no one to go to), the right
// answer; every OpenCL object released (cl.LiveObjects back to its
// baseline); and afterwards no goroutine left and a fresh compile + infer
// right. See envFaultStride for how many calls it walks.
func TestFaultInjectionEveryOpenCLCall(t *testing.T) {
	stride := 0 // the sample of sampleCalls
	if v := os.Getenv(envFaultStride); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, envFaultStride)
		require.Positive(t, n, envFaultStride)
		stride = n
	}
	m, c, _ := clsCase(t)
	configs := []struct {
		name, device string
		setup        func(*driver.Core) error
	}{
		{"GPU", "GPU", nil},
		{"HETERO", heteroGPUCPU, func(core *driver.Core) error {
			p, err := core.Plugin(heteroGPUCPU)
			if err != nil {
				return err
			}
			return p.(*hetero.Plugin).SetDeviceProperties("GPU", map[string]string{clbackend.KeyDisabledOps: "MaxPool"})
		}},
	}
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			want, err := faultRun(m, cfg.device, c, cfg.setup)
			require.NoError(t, err, "reference run")
			runtime.GC()
			base := cl.LiveObjects()

			faultinject.Trace()
			_, err = faultRun(m, cfg.device, c, cfg.setup)
			total, _ := faultinject.Disarm()
			require.NoError(t, err, "counting run")
			require.Positive(t, total, "the run made no OpenCL call")
			walk := sampleCalls(faultinject.Ops(), stride)

			var failed, tolerated, unreached int
			ops := map[string]int{}
			for _, n := range walk {
				code := faultCodes[int(n)%len(faultCodes)]
				faultinject.Arm(n, int32(code))
				got, err := faultRun(m, cfg.device, c, cfg.setup)
				_, op := faultinject.Disarm()
				if op == "" {
					unreached++ // this run made fewer calls
					continue
				}
				ops[strings.SplitN(op, "(", 2)[0]]++
				if err == nil {
					tolerated++
					for name, w := range want {
						if !assert.NoError(t, conformance.Compare(got[name], w, exact), "call %d (%s) failed and was tolerated, but output %q differs", n, op, name) {
							break
						}
					}
				} else {
					failed++
					if assert.ErrorIs(t, err, driver.ErrDevice, "call %d (%s)", n, op) {
						assert.Contains(t, err.Error(), strings.SplitN(op, "(", 2)[0], "call %d: the error names the call", n)
					}
					assert.NotContains(t, err.Error(), "panic:", "call %d (%s)", n, op)
				}
				live := cl.LiveObjects()
				if !assert.Equal(t, base, live, "call %d (%s): OpenCL objects left after Close", n, op) {
					break
				}
			}
			t.Logf("%s: %d OpenCL calls per compile+infer+close, %d of them failed in turn (stride %d; 0: the first of each kind and %d more): %d failed with an error, %d tolerated with the right answer, %d not reached; calls by kind %v",
				cfg.name, total, len(walk), stride, faultExtra, failed, tolerated, unreached, ops)

			got, err := faultRun(m, cfg.device, c, cfg.setup)
			require.NoError(t, err, "a fresh compile + infer after the walk")
			for name, w := range want {
				assert.NoError(t, conformance.Compare(got[name], w, exact), "output %q after the walk", name)
			}
			// Cleanups of released objects run on their own goroutines.
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) && !assert.ObjectsAreEqual(base, cl.LiveObjects()) {
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestSampleCalls: the sampled walk fails the first call of every kind and
// faultExtra more, the same ones every run; a stride walks every
// stride-th call.
func TestSampleCalls(t *testing.T) {
	var ops []string
	for i := range 400 {
		ops = append(ops, fmt.Sprintf("op%d", i%7))
	}
	ops = append(ops, "clReleaseMemObject")
	walk := sampleCalls(ops, 0)
	assert.Len(t, walk, 8+faultExtra)
	assert.True(t, slices.IsSorted(walk))
	kinds := map[string]bool{}
	for _, n := range walk {
		kinds[ops[n-1]] = true
	}
	assert.Len(t, kinds, 8, "every kind of call is failed once at least")
	assert.Equal(t, walk, sampleCalls(ops, 0), "the same sample every run")
	// clSetKernelArg's kind is its kernel: the first argument set of
	// each kernel is failed, not every argument.
	assert.Equal(t, "clSetKernelArg(conv2d)", callKind("clSetKernelArg(conv2d, 3)"))
	assert.Equal(t, "clGetDeviceInfo(CL_DEVICE_NAME)", callKind("clGetDeviceInfo(CL_DEVICE_NAME)"))
	var args []string
	for i := range 300 {
		args = append(args, fmt.Sprintf("clSetKernelArg(k%d, %d)", i/100, i%10))
	}
	walk = sampleCalls(args, 0)
	assert.Len(t, walk, 3+faultExtra)
	assert.Subset(t, walk, []int64{1, 101, 201}, "each kernel's first argument")

	assert.Equal(t, []int64{1, 101, 201, 301, 401}, sampleCalls(ops, 100))
	assert.Len(t, sampleCalls(ops, 1), len(ops))
}

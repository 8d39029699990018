package clbackend

import (
	"bytes"
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// inThreadModel is x f32[1,ic,hw,hw] -> Conv(oc, 3x3, pad 1) -> Relu ->
// GlobalAveragePool -> Flatten -> MatMul(oc x 10) -> Softmax -> y, with
// seeded weights: a small model of several kernel families.
func inThreadModel(t testing.TB, ic, oc, hw int64) *graph.Model {
	t.Helper()
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1, ic, hw, hw))
	wv, err := tensor.FromF32(tensor.Shape{oc, ic, 3, 3}, seeded.Float32s(11, int(oc*ic*9), -0.5, 0.5))
	require.NoError(t, err)
	bv, err := tensor.FromF32(tensor.Shape{oc}, seeded.Float32s(12, int(oc), -1, 1))
	require.NoError(t, err)
	mv, err := tensor.FromF32(tensor.Shape{oc, 10}, seeded.Float32s(13, int(oc*10), -1, 1))
	require.NoError(t, err)
	conv := graph.NewNode("Conv", "conv", []graph.Output{x.Out(0), graph.NewConstant("w", wv).Out(0), graph.NewConstant("b", bv).Out(0)},
		graph.Attrs{"pads": []int64{1, 1, 1, 1}}, 1)
	relu := graph.NewNode("Relu", "relu", []graph.Output{conv.Out(0)}, nil, 1)
	gap := graph.NewNode("GlobalAveragePool", "gap", []graph.Output{relu.Out(0)}, nil, 1)
	flat := graph.NewNode("Flatten", "flatten", []graph.Output{gap.Out(0)}, nil, 1)
	mm := graph.NewNode("MatMul", "matmul", []graph.Output{flat.Out(0), graph.NewConstant("m", mv).Out(0)}, nil, 1)
	sm := graph.NewNode("Softmax", "softmax", []graph.Output{mm.Out(0)}, nil, 1)
	return graph.NewModel("inthread", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", sm.Out(0)), graph.NewResult("features", relu.Out(0))})
}

// needInThread skips a test on a device without an in-thread companion.
func needInThread(t *testing.T, p *Plugin) {
	t.Helper()
	if p.devices[p.def].inThread == nil {
		t.Skip("GPU.0 has no in-thread companion: it needs GPU.0 to be POCL's pthread device with POCL's basic driver beside it, which clinfer lists when POCL_DEVICES is unset and pthread and basic are POCL's only installed drivers (`make deps` installs Debian's pocl-opencl-icd, which has both); with POCL_DEVICES set it must list basic, and POCL then lists basic as GPU.0")
	}
}

// TestInThreadSameResults: a small model forced onto each OpenCL device
// of the GPU device gives bit-identical outputs (the two POCL drivers
// share the compiler and the target), and GPU_OPENCL_DEVICE and the
// runtime model name the device that ran it.
func TestInThreadSameResults(t *testing.T) {
	p := newGPU(t)
	needInThread(t, p)
	x, err := tensor.FromF32(tensor.Shape{1, 8, 12, 12}, seeded.Float32s(14, 8*12*12, -2, 2))
	require.NoError(t, err)
	outs := map[string][]*tensor.Tensor{}
	for _, mode := range []string{inThreadNo, inThreadYes} {
		cm, err := p.CompileModel(context.Background(), inThreadModel(t, 8, 16, 12), map[string]string{KeyInThread: mode})
		require.NoError(t, err, mode)
		defer cm.Close()
		dev, err := cm.Property(KeyOpenCLDevice)
		require.NoError(t, err)
		want := map[string]string{inThreadNo: "pthread-", inThreadYes: "basic-"}[mode]
		assert.True(t, strings.HasPrefix(dev, want), "%s=%s runs on %q", KeyInThread, mode, dev)
		ed, err := cm.Property(driver.KeyExecutionDevices)
		require.NoError(t, err)
		assert.Equal(t, "GPU.0", ed, "the companion is no device of its own")
		rm, err := cm.RuntimeModel()
		require.NoError(t, err)
		assert.Equal(t, dev, rm.Node("softmax").RT.Extra[KeyOpenCLDevice])
		r, err := cm.CreateInferRequest()
		require.NoError(t, err)
		defer r.Close()
		require.NoError(t, r.SetTensor("x", x))
		for range 2 { // the second inference reuses what the first set up
			require.NoError(t, r.Infer(context.Background()), mode)
		}
		for _, name := range []string{"y", "features"} {
			y, err := r.Tensor(name)
			require.NoError(t, err)
			outs[name] = append(outs[name], y.Clone())
		}
	}
	for name, o := range outs {
		require.Len(t, o, 2)
		a, b := o[0].Contiguous().F32(), o[1].Contiguous().F32()
		require.Len(t, b, len(a), name)
		same := 0
		for i := range a {
			if math.Float32bits(a[i]) == math.Float32bits(b[i]) {
				same++
			}
		}
		assert.Equal(t, len(a), same, "%s: elements bit-identical on the pthread and the basic device", name)
	}
	// Exported and imported (the model cache's way: the plan record and
	// the companion's binaries), the model still runs in the thread and
	// gives the same outputs.
	cm, err := p.CompileModel(context.Background(), inThreadModel(t, 8, 16, 12), map[string]string{KeyInThread: inThreadYes, driver.KeyCacheMode: driver.CacheModeOptimizeSpeed})
	require.NoError(t, err)
	defer cm.Close()
	var blob bytes.Buffer
	require.NoError(t, cm.(*CompiledModel).ExportCached(&blob))
	before := p.ProgramCacheStats()
	im, err := p.ImportModel(context.Background(), bytes.NewReader(blob.Bytes()), map[string]string{KeyInThread: inThreadYes, driver.KeyCacheMode: driver.CacheModeOptimizeSpeed})
	require.NoError(t, err)
	defer im.Close()
	after := p.ProgramCacheStats()
	assert.Equal(t, before.PlansRestored+1, after.PlansRestored, "the plan record is used")
	dev, err := im.Property(KeyOpenCLDevice)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(dev, "basic-"), dev)
	y := inferOnce(t, im, x)
	for i, v := range y.Contiguous().F32() {
		assert.Equal(t, math.Float32bits(outs["y"][1].Contiguous().F32()[i]), math.Float32bits(v), "imported y[%d]", i)
	}
	// The softmax sums to one: the outputs are results, not zeros.
	var sum float32
	for _, v := range outs["y"][0].Contiguous().F32() {
		sum += v
	}
	assert.InDelta(t, 1, sum, 1e-5)
}

// TestInThreadAuto: under AUTO (the default: no property) a small plan
// runs in the thread and a large one on the pthread device, as
// inThreadPays says for their work; the small plan's kernel binaries are
// pinned by its warm-up.
func TestInThreadAuto(t *testing.T) {
	p := newGPU(t)
	needInThread(t, p)
	for _, c := range []struct {
		name        string
		ic, oc, hw  int64
		wantBasic   bool
		minMACs     int64
		maxLaunches int
	}{
		{"small", 8, 16, 12, true, 8 * 16 * 9 * 144, 8},
		{"large", 64, 64, 96, false, 64 * 64 * 9 * 96 * 96, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, props := range []map[string]string{{KeyInThread: inThreadAuto}, nil} {
				cm, err := p.CompileModel(context.Background(), inThreadModel(t, c.ic, c.oc, c.hw), props)
				require.NoError(t, err)
				dev, err := cm.Property(KeyOpenCLDevice)
				require.NoError(t, err)
				assert.Equal(t, c.wantBasic, strings.HasPrefix(dev, "basic-"), "%v: %s", props, dev)
				static := cm.(*CompiledModel).static
				require.NotNil(t, static)
				assert.Equal(t, c.wantBasic, atomic.LoadUint32(&static.pinned) == 1, "binaries pinned by the warm-up in the thread only")
				require.NoError(t, cm.Close())
			}
			cm, err := p.CompileModel(context.Background(), inThreadModel(t, c.ic, c.oc, c.hw), nil)
			require.NoError(t, err)
			defer cm.Close()
			gm := cm.(*CompiledModel)
			// Both estimates hold the convolution's multiply-adds, and
			// not many times more.
			macs, launches := gm.plansWork()
			gmacs, glaunches, ok := graphWork(gm.model)
			require.True(t, ok, "static shapes")
			for _, w := range []int64{macs, gmacs} {
				assert.GreaterOrEqual(t, w, c.minMACs)
				assert.Less(t, w, 3*c.minMACs)
			}
			for _, l := range []int{launches, glaunches} {
				assert.Positive(t, l)
				assert.LessOrEqual(t, l, c.maxLaunches)
			}
		})
	}
}

// TestInThreadPays: the decision of the cost model for the plans it was
// measured on (POCL 3.1, 2 cores) and its edges.
func TestInThreadPays(t *testing.T) {
	for _, c := range []struct {
		name            string
		macs            int64
		launches, units int
		want            bool
	}{
		{"wake-word head", 230402, 1, 2, true},
		{"Silero v5", 181318, 12, 2, true},
		{"PP-OCR cls", 17319998, 48, 2, true},
		{"PP-OCR rec", 163920393, 76, 2, false},
		{"PP-OCR det 320", 229636496, 66, 2, false},
		{"one launch of 1 G", 1 << 30, 1, 16, false},
		{"one compute unit", 1 << 40, 1, 1, true},
		{"nothing", 0, 0, 2, false}, // no hand-off to save
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, inThreadPays(c.macs, c.launches, c.units, smallMACsPerUS(2600, 16)))
		})
	}
}

// TestSmallMACsPerUS: the rate measured on a 2600 MHz AVX-512 core, scaled
// by clock and vector width; the measured one where either is unknown.
func TestSmallMACsPerUS(t *testing.T) {
	assert.InDelta(t, 20000, smallMACsPerUS(2600, 16), 1e-6)
	assert.InDelta(t, 10000, smallMACsPerUS(2600, 8), 1e-6, "AVX2")
	assert.InDelta(t, 15000, smallMACsPerUS(3900, 8), 1e-6)
	assert.InDelta(t, float64(defaultMACsPerUS), smallMACsPerUS(0, 16), 0)
	assert.InDelta(t, float64(defaultMACsPerUS), smallMACsPerUS(2600, 0), 0)
	// PP-OCR cls (17.3 M multiply-adds, 48 launches, 2 cores) pays in the
	// thread on skylake and not on an AVX2 core of 2600 MHz.
	assert.True(t, inThreadPays(17319998, 48, 2, smallMACsPerUS(2600, 16)))
	assert.False(t, inThreadPays(17319998, 48, 2, smallMACsPerUS(2600, 8)))
}

// TestInThreadProperty: GPU_IN_THREAD takes AUTO, YES and NO in any case;
// anything else is an error naming the key and the accepted values.
func TestInThreadProperty(t *testing.T) {
	p := newGPU(t)
	v, err := p.Property(KeyInThread)
	require.NoError(t, err)
	assert.Equal(t, inThreadAuto, v, "the default")
	require.NoError(t, p.SetProperties(map[string]string{KeyInThread: "no"}))
	v, err = p.Property(KeyInThread)
	require.NoError(t, err)
	assert.Equal(t, inThreadNo, v)
	require.NoError(t, p.SetProperties(map[string]string{KeyInThread: "yes"}))
	v, err = p.Property(KeyInThread)
	require.NoError(t, err)
	assert.Equal(t, inThreadYes, v)
	require.NoError(t, p.SetProperties(map[string]string{KeyInThread: "AUTO"}))
	err = p.SetProperties(map[string]string{KeyInThread: "MAYBE"})
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.Contains(t, err.Error(), KeyInThread)
	assert.Contains(t, err.Error(), "AUTO, YES, NO")
	_, err = p.CompileModel(context.Background(), chainModel(t), map[string]string{KeyInThread: "sometimes"})
	require.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.Contains(t, err.Error(), KeyInThread)
}

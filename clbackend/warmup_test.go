package clbackend

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/faultinject"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// dynamicReluModel is x f32[N,3] -> Relu -> y: the GPU plans its probe
// shape at compile time.
func dynamicReluModel() *graph.Model {
	x := graph.NewParameter("x", tensor.F32, graph.PartialShape{RankKnown: true, Dims: []graph.Dim{graph.DynamicDim("N"), graph.StaticDim(3)}})
	relu := graph.NewNode("Relu", "relu", []graph.Output{x.Out(0)}, nil, 1)
	return graph.NewModel("dynamic_relu", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", relu.Out(0))})
}

// TestCompileWarmsUp: compiling launches the planned kernels once (the
// warm-up that puts the driver's first-launch work in CompileModel), for
// static input shapes and for the probe shape of a dynamic one; the
// warm-up's times stay out of the runtime model's PERF_COUNTER; and a
// launch that fails in the warm-up fails the compilation with
// driver.ErrDevice naming the call.
func TestCompileWarmsUp(t *testing.T) {
	p := newGPU(t)
	cases := []struct {
		name  string
		model func() *graph.Model
	}{
		{"Static", func() *graph.Model { return chainModel(t) }},
		{"DynamicDim", dynamicReluModel},
	}
	props := map[string]string{driver.KeyEnableProfiling: "YES"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			faultinject.ArmMatching("clEnqueueNDRangeKernel", 0, 0)
			cm, err := p.CompileModel(context.Background(), tc.model(), props)
			launches, _ := faultinject.Disarm()
			require.NoError(t, err)
			defer func() { assert.NoError(t, cm.Close()) }()
			assert.Positive(t, launches, "kernel launches while compiling")
			rm, err := cm.RuntimeModel()
			require.NoError(t, err)
			nodes, err := rm.Nodes()
			require.NoError(t, err)
			for _, n := range nodes {
				assert.NotContains(t, n.RT.Extra, "PERF_COUNTER", "node %q has a time before any inference", n.Name)
			}
		})
	}
	t.Run("LaunchFails", func(t *testing.T) {
		faultinject.ArmMatching("clEnqueueNDRangeKernel", 1, -5) // CL_OUT_OF_RESOURCES
		cm, err := p.CompileModel(context.Background(), chainModel(t), nil)
		faultinject.Disarm()
		if cm != nil {
			assert.NoError(t, cm.Close())
		}
		require.Error(t, err)
		assert.ErrorIs(t, err, driver.ErrDevice)
		assert.Contains(t, err.Error(), "warm-up")
		assert.Contains(t, err.Error(), "clEnqueueNDRangeKernel")
	})
}

// TestWarmUpGlobal: the warm-up launches one work group where the plan
// sets the group (the driver prepares the kernel per group size, not per
// grid), at least largeGrid items along a dimension that has them (POCL's
// function for wide grids), and the plan's grid where the driver picks
// the group from it.
func TestWarmUpGlobal(t *testing.T) {
	cases := []struct {
		global, local, want []int
	}{
		{[]int{1024, 1024}, []int{8, 8}, []int{8, 8}},
		{[]int{64, 1, 3}, []int{1, 1, 1}, []int{1, 1, 1}},
		{[]int{4, 256}, []int{16, 64}, []int{4, 64}}, // never past the grid
		{[]int{1 << 20}, []int{256}, []int{65536}},   // a wide grid: POCL's function for wide ones
		{[]int{16, 65535}, []int{16, 5}, []int{16, 65535}},
		{[]int{16, 65534}, []int{16, 2}, []int{16, 2}},
		{[]int{4096, 512}, nil, []int{4096, 512}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, warmUpGlobal(launch{global: tc.global, local: tc.local}), "global %v local %v", tc.global, tc.local)
	}
}

// TestWarmedUpWideGrid: launches of one kernel with one work group are
// warmed up once, except that a launch whose grid is largeGrid or more
// wide along some dimension and one narrower in every dimension are two
// (POCL builds a work-group function for each kind of grid: a kernel
// warmed up at 128x128 would build its wide function in the first
// inference at 1024x1024).
func TestWarmedUpWideGrid(t *testing.T) {
	r := &InferRequest{}
	l := func(global ...int) launch {
		return launch{kernel: kernels.Kernel{Entry: "k"}, global: global, local: []int{256}}
	}
	assert.False(t, r.warmedUp(l(16384)), "the first narrow launch")
	assert.True(t, r.warmedUp(l(4096)), "another narrow grid: the same function")
	assert.False(t, r.warmedUp(l(1<<20)), "the first wide launch: the wide function")
	assert.True(t, r.warmedUp(l(65536)), "another wide grid")
	assert.False(t, r.warmedUp(launch{kernel: kernels.Kernel{Entry: "k"}, global: []int{256, largeGrid}, local: []int{256, 1}}),
		"wide along the second dimension, with another group: its own launch")
}

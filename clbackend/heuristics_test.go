package clbackend

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpufallback "github.com/clinfer/clinfer/cpu_fallback"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
)

// Profiles of devices the heuristics are planned for, from what their
// drivers report (clinfo): this project's POCL machines and three GPU
// classes.
var (
	poclSkylake = deviceProfile{name: "pthread-skylake-avx512", vectorWidth: 16, computeUnits: 2, maxWorkGroup: 4096, wgMultiple: 8, localMem: 2 << 20}
	// POCL on an AVX2 machine (CI's pthread-haswell on AMD EPYC): float8,
	// 16 vector registers, a smaller per-core cache.
	poclHaswell = deviceProfile{name: "pthread-haswell", vectorWidth: 8, computeUnits: 2, maxWorkGroup: 4096, wgMultiple: 8, localMem: 512 << 10}
	nvidiaH100  = deviceProfile{name: "NVIDIA H100 80GB HBM3", gpu: true, vectorWidth: 1, computeUnits: 132, maxWorkGroup: 1024, wgMultiple: 32, localMem: 48 << 10}
	amdGPU      = deviceProfile{name: "gfx1100", gpu: true, vectorWidth: 1, computeUnits: 48, maxWorkGroup: 256, wgMultiple: 32, localMem: 64 << 10}
	intelGPU    = deviceProfile{name: "Intel(R) Arc(TM) A770", gpu: true, vectorWidth: 1, computeUnits: 512, maxWorkGroup: 1024, wgMultiple: 16, localMem: 64 << 10, subgroups: true}
	smallGPU    = deviceProfile{name: "Mali-G78", gpu: true, vectorWidth: 4, computeUnits: 8, maxWorkGroup: 128, wgMultiple: 16, localMem: 32 << 10}
	profiles    = []deviceProfile{poclSkylake, poclHaswell, nvidiaH100, amdGPU, intelGPU, smallGPU}
)

// heuristicChoices returns every variant the profile's heuristics pick on
// a set of shapes from the real models (PP-OCR det 640 and rec, IS-Net
// medium, the wake-word heads), named by family and shape.
func heuristicChoices(p deviceProfile) map[string]kernels.Variant {
	out := map[string]kernels.Variant{}
	for _, g := range []gemmGeom{
		{M: 1, N: 128, K: 2400}, {M: 25, N: 96, K: 96}, // wake word
		{M: 64, N: 160 * 160, K: 96}, {M: 96, N: 20 * 20, K: 480}, {M: 16, N: 320 * 320, K: 16}, // det 640
		{M: 40, N: 6625, K: 120}, {M: 480, N: 40, K: 120}, // rec
		{M: 1024, N: 1024, K: 1024, batch: []int64{1}}, {M: 4096, N: 4096, K: 4096}, // SGEMM
	} {
		out[fmt.Sprintf("gemm M=%d N=%d K=%d", g.M, g.N, g.K)] = p.gemm(g)
	}
	for _, g := range []conv2D{
		{N: 1, C: 3, OC: 48, OH: 320, OW: 320, KH: 3, KW: 3, SH: 2, SW: 2}, // det stem
		{N: 1, C: 96, OC: 96, OH: 40, OW: 40, KH: 3, KW: 3, SH: 1, SW: 1},
		{N: 1, C: 64, OC: 64, OH: 512, OW: 512, KH: 3, KW: 3, SH: 1, SW: 1}, // IS-Net
		{N: 1, C: 512, OC: 512, OH: 32, OW: 32, KH: 3, KW: 3, SH: 1, SW: 1},
		{N: 1, C: 1024, OC: 256, OH: 64, OW: 64, KH: 3, KW: 3, SH: 1, SW: 1},
		{N: 1, C: 256, OC: 256, OH: 32, OW: 32, KH: 3, KW: 3, SH: 1, SW: 1, DH: 8, DW: 8},
	} {
		out[fmt.Sprintf("conv C=%d OC=%d %dx%d s%d", g.C, g.OC, g.OH, g.OW, g.SH)] = p.conv(g, g.SH == 1)
	}
	for _, g := range []conv2D{
		{OH: 320, KH: 3, KW: 3, SH: 1}, {OH: 160, KH: 3, KW: 3, SH: 2}, // det 640
		{OH: 12, KH: 5, KW: 5, SH: 1}, {OH: 6, KH: 5, KW: 5, SH: 2}, {OH: 3, KH: 5, KW: 5, SH: 1}, // rec
	} {
		out[fmt.Sprintf("dwconv %d rows %dx%d s%d", g.OH, g.KH, g.KW, g.SH)] = p.dwconv(g, true)
		out[fmt.Sprintf("dwconv %dx%d s%d dynamic", g.KH, g.KW, g.SH)] = p.dwconv(g, false)
	}
	for _, oc := range []int64{1, 24, 96} {
		if v, ok := p.deconv(oc, 2); ok {
			out[fmt.Sprintf("deconv OC=%d", oc)] = v
		}
	}
	for _, fam := range []string{"eltwise", "se", "copy"} {
		out[fam] = p.runs(fam)
	}
	out["reduce long"] = p.reduce(1<<16, 8)
	out["reduce short"] = p.reduce(16, 1<<12)
	for _, kind := range []string{"upsample", "gather", "linear2d", "taps"} {
		out["resize "+kind] = p.resize(kind)
	}
	return out
}

// cpuShaped says what makes v a CPU-shaped variant ("" when nothing does):
// one work item per group, vectors wider than float4 per item, or runs of
// 16 elements per item.
func cpuShaped(v kernels.Variant) string {
	f, _ := kernels.LookupFamily(v.Family)
	for _, a := range f.Algorithms {
		if a.Name != v.Algorithm {
			continue
		}
		for i, prm := range a.Params {
			switch x := v.Values[i]; {
			case prm.Name == "WG" && x == 1:
				return "one work item per group"
			case prm.Name == "VW" && x > 4:
				return fmt.Sprintf("vectors of %d floats per item", x)
			case prm.Name == "EPT" && x >= 16:
				return fmt.Sprintf("runs of %d elements per item", x)
			}
		}
	}
	return ""
}

// TestHeuristicsFollowTheProfile plans representative shapes of the real
// models for the profiles of this project's POCL machines and of three GPU
// classes and checks what the heuristics choose: a declared point that
// the device can launch (vector width, work group, local memory); on a GPU
// never a CPU-shaped variant (one item per group, wide vectors, long
// runs: cpuShaped) but work groups that are multiples of the device's
// SIMD width; on a CPU register blocks within its vector registers (no
// float16 on an AVX2 POCL, at most 8 accumulators with 16 registers, 12
// for fused_gemm, whose operands are fewer).
func TestHeuristicsFollowTheProfile(t *testing.T) {
	for _, p := range profiles {
		t.Run(p.name, func(t *testing.T) {
			lim := kernels.Limits{VectorWidth: max(kernels.MinVectorWidth, p.vectorWidth), MaxWorkGroup: p.maxWorkGroup, LocalMem: p.localMem}
			for what, v := range heuristicChoices(p) {
				f, ok := kernels.LookupFamily(v.Family)
				require.True(t, ok, what)
				assert.True(t, slices.ContainsFunc(f.Variants(lim), v.Equal), "%s: %s is not a point of the tables this device can launch", what, v)
				alg, _ := f.Algorithm(v.Algorithm)
				if p.gpu {
					assert.Empty(t, cpuShaped(v), "%s: the GPU heuristics chose %s", what, v)
					if alg.WorkGroup != nil {
						if wg := alg.WorkGroup(v.Point()); wg > 0 {
							assert.Zero(t, wg%p.wgMultiple, "%s: %s has groups of %d items, not a multiple of %d", what, v, wg, p.wgMultiple)
						}
					}
					continue
				}
				if wg := v.WorkGroup(); slices.ContainsFunc(alg.Params, isGroupPolicy) {
					assert.Equal(t, 1, wg, "%s: %s: a CPU runs one item per group", what, v)
				}
				if vw := v.Get("VW"); vw > 0 && !alg.GPUShaped && v.Family != "resize" {
					assert.Equal(t, p.vw(), vw, "%s: %s is not at the device's vector width", what, v)
				}
				if mr, nv := v.Get("MR"), max(v.Get("NV"), 1); mr > 0 && v.Family == "gemm" {
					// fused_gemm's operands: nv vectors of B, one broadcast of A.
					assert.LessOrEqual(t, mr*nv+nv+1, p.vectorRegisters(), "%s: %s keeps more vectors than %s has registers for", what, v, p.name)
				} else if mr > 0 {
					assert.LessOrEqual(t, mr*nv, p.accumulators(), "%s: %s keeps more accumulators than %s has registers for", what, v, p.name)
				}
				if rb := v.Get("RB"); rb > 0 {
					assert.LessOrEqual(t, rb, p.accumulators(), "%s: %s keeps more rows (one accumulator each) than %s has registers for", what, v, p.name)
				}
			}
		})
	}
}

// isGroupPolicy reports whether q is the WG policy parameter of the
// register-blocked kernels (1: one item per group, 0: the driver's).
func isGroupPolicy(q kernels.Param) bool {
	return q.Name == "WG" && slices.Equal(q.Values, []int{1, 0})
}

// TestHeuristicsWinogradFollowsTheCache checks the CPU conv heuristics'
// cache-dependent choices: Winograd where the direct kernel's weight block
// per item outgrows an eighth of the device's cache (local memory on
// POCL), which on an AVX2 POCL with a smaller cache comes at fewer
// channels than on AVX-512 with 2 MiB per core, never below 256 and only
// for planes whose transformed rows are less than a page apart (32x32
// outputs: 256 tiles), or on AVX-512 up to 64x64 where C*OC is at least
// 2^18 (1024->256); else the grouped kernel wherever the output
// channels span two blocks, in chunks of 64 input channels where they
// fit a 32nd of the cache (AVX-512's 2 MiB), of 32 on the AVX2 POCL.
func TestHeuristicsWinogradFollowsTheCache(t *testing.T) {
	conv := func(p deviceProfile, c, hw, oc int64) kernels.Variant {
		return p.conv(conv2D{N: 1, C: c, OC: oc, OH: hw, OW: hw, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1}, true)
	}
	for _, c := range []struct {
		p      deviceProfile
		ch, hw int64
		want   string
	}{
		{poclSkylake, 128, 32, "grouped"}, {poclSkylake, 256, 32, "grouped"}, {poclSkylake, 512, 32, "winograd_2x2_3x3"},
		{poclHaswell, 128, 32, "grouped"}, {poclHaswell, 256, 32, "winograd_2x2_3x3"}, {poclHaswell, 512, 32, "winograd_2x2_3x3"},
		{poclSkylake, 512, 64, "broadcast"}, {poclSkylake, 1024, 128, "broadcast"}, {poclHaswell, 512, 64, "grouped"},
		{poclSkylake, 1024, 64, "winograd_2x2_3x3"}, {poclHaswell, 1024, 64, "grouped"},
	} {
		assert.Equal(t, c.want, conv(c.p, c.ch, c.hw, 256).Algorithm, "%s, C=%d, %dx%d", c.p.name, c.ch, c.hw, c.hw)
	}
	assert.Equal(t, "grouped", poclSkylake.conv(conv2D{N: 1, C: 512, OC: 256, OH: 32, OW: 32, KH: 3, KW: 3, SH: 2, SW: 2, DH: 1, DW: 1}, false).Algorithm,
		"strided windows are not Winograd's")
	one := conv(poclSkylake, 64, 32, 16)
	assert.Equal(t, []any{"grouped", 16, 8}, []any{one.Algorithm, one.Get("MR"), one.Get("OCG")}, "one block of a vector of output channels: the grouped program (%s)", one)
	assert.Equal(t, "direct", conv(poclSkylake, 64, 32, 1).Algorithm, "one block of fewer rows than a vector (MR 8)")
	sky, has := conv(poclSkylake, 64, 32, 64), conv(poclHaswell, 64, 64, 64)
	assert.Equal(t, []int{8, 64}, []int{sky.Get("OCG"), sky.Get("CK")}, "skylake (4 blocks of 16: OCG 8 runs them as 4 would): %s", sky)
	assert.Equal(t, []int{8, 32}, []int{has.Get("OCG"), has.Get("CK")}, "haswell (8 channels per block): %s", has)
}

// TestHeuristicsBroadcastConv checks where the broadcast convolution is
// the heuristics' choice: AVX-512 (24 accumulators) with two vectors of
// output channels and rows of 64 pixels or more, dilated windows too;
// its chunk of input channels follows the cache (32 where the chunk's 3x3
// weights stay within a 48th of the local memory, 16 for 5x5); narrower
// rows, output channels that fill less than three quarters of one or two
// vectors (bcastVectors) and AVX2 keep the others.
func TestHeuristicsBroadcastConv(t *testing.T) {
	conv := func(p deviceProfile, c, hw, oc, k, d int64) kernels.Variant {
		return p.conv(conv2D{N: 1, C: c, OC: oc, OH: hw, OW: hw, KH: k, KW: k, SH: 1, SW: 1, DH: d, DW: d}, k == 3)
	}
	for _, c := range []struct {
		p                deviceProfile
		ch, hw, oc, k, d int64
		want             string
		ob, np, tl, ck   int
	}{
		{poclSkylake, 128, 512, 64, 3, 1, "broadcast", 2, 8, 8, 32},
		{poclSkylake, 64, 256, 32, 3, 2, "broadcast", 2, 8, 8, 32},
		{poclSkylake, 64, 128, 32, 5, 1, "broadcast", 2, 8, 8, 16},
		{poclSkylake, 96, 160, 24, 3, 1, "broadcast", 2, 8, 8, 32}, // 24 of 32 lanes
		{poclSkylake, 64, 512, 16, 3, 1, "broadcast", 1, 8, 8, 32},
		{poclSkylake, 64, 256, 12, 3, 1, "broadcast", 1, 8, 8, 32}, // 12 of 16
		{poclSkylake, 64, 256, 20, 3, 1, "direct", 0, 0, 0, 0},     // 20 of 32
		{poclSkylake, 32, 256, 8, 3, 1, "direct", 0, 0, 0, 0},      // 8 of 16
		{poclSkylake, 128, 32, 128, 3, 1, "grouped", 0, 0, 0, 0},
		{poclSkylake, 64, 32, 16, 3, 1, "grouped", 0, 0, 0, 0}, // one block of 16: the grouped program
		{poclHaswell, 128, 512, 64, 3, 1, "grouped", 0, 0, 0, 0},
		{poclHaswell, 64, 512, 16, 3, 1, "grouped", 0, 0, 0, 0}, // two blocks of 8
	} {
		v := conv(c.p, c.ch, c.hw, c.oc, c.k, c.d)
		if assert.Equal(t, c.want, v.Algorithm, "%s, C=%d OC=%d %dx%d, %dx%d window", c.p.name, c.ch, c.oc, c.hw, c.hw, c.k, c.k) && c.want == "broadcast" {
			assert.Equal(t, []int{16, c.ob, c.np, c.tl, c.ck}, []int{v.Get("VW"), v.Get("OB"), v.Get("NP"), v.Get("TL"), v.Get("CK")}, "%s", v)
		}
	}
}

// TestGPUHeuristicsOnPOCL plans the variant cases of the hot families for
// an NVIDIA H100's profile on this machine's device: the GPU-shaped
// variants the heuristics choose there run here too (POCL; oclgrind runs
// every declared variant in make oclgrind) and compute what the CPU
// reference does.
func TestGPUHeuristicsOnPOCL(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	p := nvidiaH100
	testProfile = &p
	t.Cleanup(func() { testProfile = nil })
	cases := variantCases()
	// M >= 32: the GPU heuristics' tiled GEMM (the variant cases' GEMMs
	// are narrower).
	cases["gemm"] = append(cases["gemm"], lowerCase{"matmul_40x33x50", func(g *caseGen) *graph.Model {
		return g.one("MatMul", nil, g.x("a", 40, 33), g.x("b", 33, 50))
	}})
	gpuShaped := map[string]bool{}
	for _, fam := range []string{"gemm", "conv", "dwconv", "resize", "eltwise", "reduce", "copy"} {
		for ci, c := range cases[fam] {
			t.Run(fam+"/"+c.name, func(t *testing.T) {
				m, ins := c.instance(t, fam, ci)
				// On the worker threads, where TestVariantsMatchCPU runs
				// these cases: POCL builds a program once per OpenCL device.
				got, cm := inferAllWith(t, gpu, m, ins, map[string]string{KeyInThread: inThreadNo})
				want, _ := inferAll(t, cpu, m, ins)
				assertOutputsClose(t, want, got, 1e-4, 1e-3)
				rm, err := cm.RuntimeModel()
				require.NoError(t, err)
				nodes, err := rm.Nodes()
				require.NoError(t, err)
				for _, n := range nodes {
					if s := n.RT.Extra[KeyKernelVariant]; s != "" {
						v, err := kernels.ParseVariant(s)
						require.NoError(t, err)
						assert.Empty(t, cpuShaped(v), "node %s ran %s", n.Name, s)
						f, _ := kernels.LookupFamily(v.Family)
						alg, _ := f.Algorithm(v.Algorithm)
						gpuShaped[v.Family] = gpuShaped[v.Family] || alg.GPUShaped
					}
				}
			})
		}
	}
	for _, fam := range []string{"gemm", "conv", "dwconv"} {
		assert.True(t, gpuShaped[fam], "no %s case ran a GPU-shaped algorithm (local-memory tiles) under the GPU profile", fam)
	}
}

// TestCPUGroup: a CPU device's launches without a work-group size get
// powers of two that divide the grid, at most cpuGroupItems items, with
// cpuGroupsPerUnit groups per core left where the grid has them; the
// layers of a large-image network share one size (one work-group function
// for POCL to build), and an empty grid gets none.
func TestCPUGroup(t *testing.T) {
	cases := []struct {
		global, want []int
	}{
		{[]int{1 << 20}, []int{256}},
		{[]int{4096, 512}, []int{256, 1}},
		{[]int{8, 64, 64}, []int{8, 32, 1}},
		{[]int{8, 64, 32}, []int{8, 32, 1}}, // the same group as the layer above
		{[]int{96, 3}, []int{32, 1}},        // 288 items: 36 per group for 8 groups, so 32
		{[]int{64}, []int{8}},               // small grids keep 8 groups
		{[]int{3}, []int{1}},
		{[]int{0, 64}, nil},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, cpuGroup(tc.global, poclSkylake), "global %v", tc.global)
	}
	one := poclSkylake
	one.maxWorkGroup = 16
	assert.Equal(t, []int{16}, cpuGroup([]int{1 << 20}, one), "within CL_DEVICE_MAX_WORK_GROUP_SIZE")
}

// TestShareCPUGroups: the launches of one kernel whose groups cpuGroup
// chose take the largest group among them that divides their grid within
// their budget (of two of one size, the one that fits more launches, even
// when the other is more used; a small grid up to one group per core), so
// POCL compiles fewer work-group functions; a launch keeps its own group when none other fits, never
// gets fewer items, and launches of other kernels or with groups the
// lowering set are left alone.
func TestShareCPUGroups(t *testing.T) {
	k := kernels.Kernel{Entry: "k"}
	other := kernels.Kernel{Entry: "other"}
	wino := kernels.Kernel{Entry: "wino"}
	mk := func(kern kernels.Kernel, global []int, auto bool, local ...int) launch {
		if local == nil {
			local = cpuGroup(global, poclSkylake)
		}
		return launch{kernel: kern, global: global, local: local, cpuGroup: auto}
	}
	ls := []launch{
		mk(k, []int{4, 2048}, true),              // [4 64]
		mk(k, []int{2, 4096}, true),              // [2 128]
		mk(k, []int{8, 1024}, true),              // [8 32]
		mk(k, []int{2, 96}, true),                // [2 16]: only its own fits
		mk(other, []int{8, 1024}, true),          // another kernel
		mk(k, []int{8, 1024}, false, 8, 4),       // set by the lowering
		mk(k, []int{4, 2048, 1}, true, 4, 64, 1), // another rank
		mk(wino, []int{256, 512}, true),          // [256 1]
		mk(wino, []int{256, 512}, true),          // [256 1]
		mk(wino, []int{64, 512}, true),           // [64 4]: fits all three
		mk(k, []int{2, 512}, true),               // [2 64]: a small grid takes [2 128] (2 groups per core)
	}
	before := make([][]int, len(ls))
	for i, l := range ls {
		before[i] = l.local
	}
	require.Equal(t, []int{4, 64}, before[0])
	require.Equal(t, []int{2, 128}, before[1])
	require.Equal(t, []int{8, 32}, before[2])
	require.Equal(t, []int{256, 1}, before[7])
	require.Equal(t, []int{64, 4}, before[9])
	shareCPUGroups(ls, poclSkylake)
	require.Equal(t, []int{2, 64}, before[10])
	want := [][]int{{2, 128}, {2, 128}, {2, 128}, before[3], {8, 32}, {8, 4}, {4, 64, 1}, {64, 4}, {64, 4}, {64, 4}, {2, 128}}
	for i, l := range ls {
		assert.Equal(t, want[i], l.local, "launch %d (global %v, was %v)", i, l.global, before[i])
		assert.GreaterOrEqual(t, items(l.local), items(before[i]), "launch %d: fewer items per group", i)
		for d := range l.global {
			assert.Zero(t, l.global[d]%l.local[d], "launch %d: the group divides the grid", i)
		}
	}
}

// TestSoftmaxRowsOnEveryProfile runs last-axis Softmax and LogSoftmax as
// planned for POCL on AVX-512 and AVX2 (one item per row, 16 and 8 wide)
// and for an H100 (groups covering the row in float4s) on this machine's
// device, against the CPU reference.
func TestSoftmaxRowsOnEveryProfile(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	assert.Equal(t, [2]int{8, 1}, pair(poclHaswell.softmaxRows(6625, 1024)), "haswell: its vector width, one item per row")
	assert.Equal(t, [2]int{4, 256}, pair(nvidiaH100.softmaxRows(6625, 1024)), "a GPU: a group of 256 float4 columns")
	assert.Equal(t, [2]int{4, 16}, pair(nvidiaH100.softmaxRows(40, 1024)), "a GPU: the smallest group covering a short row")
	assert.Equal(t, [2]int{4, 128}, pair(nvidiaH100.softmaxRows(6625, 128)), "a GPU whose kernel takes 128 items (CL_KERNEL_WORK_GROUP_SIZE): within it")
	t.Cleanup(func() { testProfile = nil })
	all := lowerCases()
	for _, p := range []deviceProfile{poclSkylake, poclHaswell, nvidiaH100} {
		testProfile = &p
		for _, op := range []string{"Softmax", "LogSoftmax"} {
			for ci, c := range all[op] {
				if c.name != "last_axis_rows" {
					continue
				}
				t.Run(p.name+"/"+op, func(t *testing.T) {
					m, ins := c.instance(t, op, ci)
					got, _ := inferAll(t, gpu, m, ins)
					want, _ := inferAll(t, cpu, m, ins)
					assertOutputsClose(t, want, got, 1e-5, 1e-4)
				})
			}
		}
	}
}

// TestRowGroupsWithinKernelLimit plans the kernels that size a work group
// to their rows (softmax_rows, dense_chain, se_block) for an H100 on this machine's
// device while its kernels take groups of at most 4 items
// (CL_KERNEL_WORK_GROUP_SIZE below the device's limit, as a barrier
// kernel's may be on a GPU): the groups stay within the kernel's limit
// (a larger one fails the compile) and the results match the CPU.
func TestRowGroupsWithinKernelLimit(t *testing.T) {
	gpu := newGPU(t)
	cpu, err := cpufallback.New()
	require.NoError(t, err)
	defer cpu.Close()
	p := nvidiaH100
	testProfile, kernelGroupLimit = &p, 4
	t.Cleanup(func() { testProfile, kernelGroupLimit = nil, 0 })
	all := lowerCases()
	ran := 0
	for _, op := range []string{"Softmax", "KernelFusion"} {
		for ci, c := range all[op] {
			if c.name != "last_axis_rows" && !strings.HasPrefix(c.name, "dense_chain") && !strings.HasPrefix(c.name, "se_block") {
				continue
			}
			ran++
			t.Run(op+"/"+c.name, func(t *testing.T) {
				m, ins := c.instance(t, op, ci)
				got, _ := inferAll(t, gpu, m, ins)
				want, _ := inferAll(t, cpu, m, ins)
				assertOutputsClose(t, want, got, 1e-5, 1e-4)
			})
		}
	}
	assert.Equal(t, 5, ran, "the softmax_rows, dense_chain and se_block cases of lowerCases")
}

// pair makes an array of two results, for comparing them at once.
func pair(a, b int) [2]int { return [2]int{a, b} }

// TestHeuristicsDilatedShareOneVariant: on a CPU device the dilated
// convolutions that neither Winograd nor broadcast takes (IS-Net medium's
// 16x16 and 32x32 layers) pick one variant, grouped with 8 blocks,
// whatever their channels, so that they share one program built with
// run-time dilations; their undilated twins keep direct, or grouped by 8
// (by 4 only for 5 to 7 blocks).
func TestHeuristicsDilatedShareOneVariant(t *testing.T) {
	conv := func(c, hw, oc, d int64) kernels.Variant {
		return poclSkylake.conv(conv2D{N: 1, C: c, OC: oc, H: hw, W: hw, OH: hw, OW: hw, KH: 3, KW: 3, SH: 1, SW: 1, PH: d, PW: d, DH: d, DW: d}, true)
	}
	first := conv(32, 16, 32, 2)
	assert.Equal(t, "grouped", first.Algorithm, "%s", first)
	assert.Equal(t, 8, first.Get("OCG"), "%s", first)
	for _, c := range [][4]int64{{64, 16, 64, 2}, {128, 16, 128, 2}, {256, 32, 256, 4}, {256, 32, 256, 8}, {32, 16, 16, 2}} {
		assert.Equal(t, first.String(), conv(c[0], c[1], c[2], c[3]).String(), "C=%d %dx%d OC=%d dilation %d", c[0], c[1], c[1], c[2], c[3])
	}
	assert.Equal(t, first.String(), conv(32, 16, 16, 1).String(), "undilated, one block of 16: grouped by 8 (its own undilated program)")
	assert.Equal(t, 8, conv(32, 16, 32, 1).Get("OCG"), "undilated, two blocks: OCG 8 runs them as OCG 4 does, in the same program as 8 blocks")
	assert.Equal(t, 8, conv(64, 16, 64, 1).Get("OCG"), "undilated, four blocks")
	assert.Equal(t, 4, conv(64, 16, 80, 1).Get("OCG"), "undilated, five blocks: two items")
	assert.Equal(t, 8, conv(128, 16, 128, 1).Get("OCG"), "undilated, eight blocks")
}

// TestHeuristicsOneBlockOfAVector checks that one block of output channels
// takes the grouped program only where it holds more rows than direct's
// smallest block (a whole AVX-512 vector of 9 to 16 channels): on an 8-wide
// target every convolution of up to 8 output channels has MR = VW = 8 and
// stays direct, as measured before ae172fd.
func TestHeuristicsOneBlockOfAVector(t *testing.T) {
	conv := func(p deviceProfile, oc, hw int64) kernels.Variant {
		return p.conv(conv2D{N: 1, C: 64, OC: oc, OH: hw, OW: hw, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1}, true)
	}
	for _, oc := range []int64{1, 4, 8} {
		assert.Equal(t, "direct", conv(poclHaswell, oc, 64).Algorithm, "haswell OC=%d", oc)
		assert.Equal(t, "direct", conv(poclSkylake, oc, 32).Algorithm, "skylake OC=%d", oc)
	}
	assert.Equal(t, "grouped", conv(poclSkylake, 16, 32).Algorithm, "skylake OC=16")
}

// TestHeuristicsGEMMRowsFitTheRegisters: fused_gemm's rows per item come
// from the device's vector registers: on a 16-register CPU (AVX2, SSE) 6
// rows of 2 vectors for every product (12 accumulators beside 2 vectors of
// B and a broadcast of A; one program for every size, as 4 rows were), on
// AVX-512's 32 the row-count rules (4 up to 128 rows, else 8 or 12).
func TestHeuristicsGEMMRowsFitTheRegisters(t *testing.T) {
	sse := poclHaswell
	sse.name, sse.vectorWidth = "pthread-athlon64", 4
	for _, c := range []struct {
		p      deviceProfile
		m      int64
		vw, mr int
	}{
		{poclHaswell, 480, 8, 6}, {poclHaswell, 96, 8, 6}, {poclHaswell, 16, 8, 6}, {sse, 480, 4, 6},
		{poclSkylake, 96, 16, 4}, {poclSkylake, 180, 16, 12}, {poclSkylake, 512, 16, 8},
	} {
		v := c.p.gemm(gemmGeom{M: c.m, N: 1600, K: 96})
		assert.Equal(t, c.vw, v.Get("VW"), "%s M=%d: %s", c.p.name, c.m, v)
		assert.Equal(t, c.mr, v.Get("MR"), "%s M=%d: %s", c.p.name, c.m, v)
		assert.Equal(t, 2, v.Get("NV"), "%s M=%d: %s", c.p.name, c.m, v)
	}
}

// TestHeuristicsDWRowsFollowTheHeight: a static depthwise convolution
// takes the rows per item of the table, at most 8 and within the
// device's accumulators (4 for strided windows), whose items' work over
// the plane's height is a tenth or more below 8's (rec's 5x5 layers of
// 12, 6 and 3 rows), else 8 (det's 320 rows, and every height of a model
// with dynamic dims).
func TestHeuristicsDWRowsFollowTheHeight(t *testing.T) {
	for _, c := range []struct {
		p      deviceProfile
		g      conv2D
		static bool
		rb     int
	}{
		{poclSkylake, conv2D{OH: 12, KH: 5, KW: 5, SH: 1}, true, 6},
		{poclSkylake, conv2D{OH: 12, KH: 5, KW: 5, SH: 1}, false, 8},
		{poclSkylake, conv2D{OH: 6, KH: 5, KW: 5, SH: 1}, true, 6},
		{poclSkylake, conv2D{OH: 3, KH: 5, KW: 5, SH: 1}, true, 4},
		{poclSkylake, conv2D{OH: 24, KH: 3, KW: 3, SH: 1}, true, 8},
		{poclSkylake, conv2D{OH: 320, KH: 3, KW: 3, SH: 1}, true, 8},
		{poclSkylake, conv2D{OH: 6, KH: 5, KW: 5, SH: 2}, true, 4},
		{poclHaswell, conv2D{OH: 12, KH: 5, KW: 5, SH: 1}, true, 6},
		{poclHaswell, conv2D{OH: 3, KH: 5, KW: 5, SH: 1}, true, 4},
		{poclHaswell, conv2D{OH: 320, KH: 3, KW: 3, SH: 1}, true, 8},
	} {
		v := c.p.dwconv(c.g, c.static)
		assert.Equal(t, c.rb, v.Get("RB"), "%s %d rows %dx%d s%d static %v: %s", c.p.name, c.g.OH, c.g.KH, c.g.KW, c.g.SH, c.static, v)
		assert.LessOrEqual(t, v.Get("RB"), c.p.accumulators())
	}
}

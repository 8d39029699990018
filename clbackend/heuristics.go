package clbackend

import (
	"strings"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/kernels"
)

// The heuristics: the variant of each hot family a node runs when no
// tuning record, forced variant or tuning pass says otherwise. They read
// the device through a deviceProfile, never a device handle, so that tests
// can plan for devices this machine does not have (a discrete GPU, a POCL
// without AVX-512) and check what the planner would choose there.

// deviceProfile is what the heuristics know of a device: its class and the
// properties OpenCL reports for it.
type deviceProfile struct {
	// name is CL_DEVICE_NAME, for messages.
	name string
	// gpu is set for GPU and accelerator devices (CL_DEVICE_TYPE_GPU or
	// _ACCELERATOR): work groups of many items sharing local memory; a
	// CPU device (POCL) runs one item's register blocks at a time.
	gpu bool
	// vectorWidth is the preferred float vector width (4 at least): 16 on
	// an AVX-512 CPU, 8 on AVX2, 4 on SSE and NEON; 1 on most GPUs.
	vectorWidth int
	// computeUnits is CL_DEVICE_MAX_COMPUTE_UNITS: cores on a CPU,
	// streaming multiprocessors or compute units on a GPU.
	computeUnits int
	// maxWorkGroup is CL_DEVICE_MAX_WORK_GROUP_SIZE.
	maxWorkGroup int
	// wgMultiple is CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE (a
	// kernel's where the device query is missing): 32 on NVIDIA, 64 or 32
	// on AMD, 8-32 on Intel, 8 on POCL.
	wgMultiple int
	// localMem is CL_DEVICE_LOCAL_MEM_SIZE: on a GPU the shared memory of a
	// work group, on POCL a core's cache (the memory local arrays live
	// in), which the CPU heuristics read as the cache a kernel's working
	// set should stay within.
	localMem int64
	// subgroups is set when the device has cl_khr_subgroups or
	// cl_intel_subgroups.
	subgroups bool
}

// profileOf reads the profile of device d; a query that fails leaves the
// field at a safe value (the variant limits already keep every choice
// launchable).
func profileOf(d *device) deviceProfile {
	p := deviceProfile{name: d.fullName, gpu: d.typ&(cl.DeviceTypeGPU|cl.DeviceTypeAccelerator) != 0,
		vectorWidth: kernels.MinVectorWidth, computeUnits: 1, maxWorkGroup: 256, wgMultiple: 1}
	if w, err := d.cl.PreferredVectorWidths(); err == nil {
		p.vectorWidth = max(p.vectorWidth, w.Float)
	}
	if n, err := d.cl.MaxComputeUnits(); err == nil && n > 0 {
		p.computeUnits = n
	}
	if n, err := d.cl.MaxWorkGroupSize(); err == nil && n > 0 {
		p.maxWorkGroup = n
	}
	if n, err := d.cl.PreferredWorkGroupSizeMultiple(); err == nil && n > 0 {
		p.wgMultiple = n
	} else if p.gpu {
		p.wgMultiple = vendorWGMultiple(d.vendor)
	}
	if n, err := d.cl.LocalMemSize(); err == nil {
		p.localMem = n
	}
	if exts, err := d.cl.Extensions(); err == nil {
		for _, e := range exts {
			p.subgroups = p.subgroups || e == "cl_khr_subgroups" || e == "cl_intel_subgroups"
		}
	}
	return p
}

// vendorWGMultiple is the SIMD width of an OpenCL 1.2 GPU that does not
// answer the device query: NVIDIA's warp, AMD's wavefront, Intel's widest
// subgroup; 32 otherwise.
func vendorWGMultiple(vendor string) int {
	switch v := strings.ToLower(vendor); {
	case strings.Contains(v, "advanced micro devices"), strings.Contains(v, "amd"):
		return 64
	case strings.Contains(v, "intel"):
		return 16
	}
	return 32
}

// profile is the plan's device profile: testProfile when a test sets one,
// else the device's (read once per plan).
func (b *builder) profile() deviceProfile {
	if b.prof == nil {
		p := profileOf(b.c.dev)
		if testProfile != nil {
			p = *testProfile
		}
		b.prof = &p
	}
	return *b.prof
}

// testProfile, when set (tests), replaces the device's profile in the
// heuristics: the plan is made as for that device, on this one (whose
// variant limits still apply).
var testProfile *deviceProfile

// vw is the CPU heuristics' vector width: the preferred one, 4, 8 or 16.
func (p deviceProfile) vw() int {
	switch {
	case p.vectorWidth >= 16:
		return 16
	case p.vectorWidth >= 8:
		return 8
	}
	return 4
}

// vectorRegisters is how many vector registers a CPU device's ISA has, as
// its preferred vector width tells: 32 where it is 16 floats (AVX-512), 16
// below (AVX, AVX2 and SSE on x86-64).
func (p deviceProfile) vectorRegisters() int {
	if p.vw() >= 16 {
		return 32
	}
	return 16
}

// accumulators is how many vector accumulators a CPU work item may keep in
// registers with room for its operands (a convolution's input vectors,
// weight broadcasts, an edge item's lane masks): the vector registers less
// 8, 24 of AVX-512's 32 registers, 8 of the 16 of AVX2 and SSE.
func (p deviceProfile) accumulators() int { return p.vectorRegisters() - 8 }

// gemmRowsFit is the most rows of a fused_gemm block of nv vectors per row
// whose accumulators fit in the vector registers beside its operands, the
// nv vectors of B and one broadcast of A: 6 with nv 2 on a 16-register
// ISA (12 accumulators, the classic AVX2 SGEMM block: FMA's 5-cycle
// latency on two ports wants 10 independent sums, which 4 x 2 does not
// have), 14 with 32 registers.
func (p deviceProfile) gemmRowsFit(nv int) int { return (p.vectorRegisters() - nv - 1) / nv }

// groupPolicy is the WG of the register-blocked kernels: on a CPU device
// each work item is its own work group (POCL then runs items one after
// another with their blocks in registers, 2-6x faster than larger groups
// on the PP-OCR shapes); on a GPU the driver picks.
func (p deviceProfile) groupPolicy() int {
	if p.gpu {
		return 0
	}
	return 1
}

// group1D is the 1-D work group of the GPU heuristics' element-wise and
// gather kernels: 256 items (a multiple of every warp and wavefront), or
// 64 where the device takes fewer.
func (p deviceProfile) group1D() int {
	if p.maxWorkGroup >= 256 {
		return 256
	}
	return 64
}

// tiled picks fused_gemm_tiled's tiling (gemm/tiled and conv/implicit_gemm
// share it) for an M x N product over batch on a GPU: the largest square
// tile of 128, 64 or 32 that M and N each fill at least once and that
// still makes two work groups per compute unit (so every unit has work
// and a second group to hide latency), else the smallest;
// 128 tiles keep 8x8 outputs per item in float4 columns, 64 tiles 4x4 in
// float4, 32 tiles 2x2 in scalars, each in groups of 256 items (a multiple
// of every warp and wavefront), or of 64 where the device takes fewer.
func (p deviceProfile) tiled(fam, alg string, m, n, batch int64) kernels.Variant {
	type tiling struct{ ts, wpt, vw int }
	big := []tiling{{128, 8, 4}, {64, 4, 4}, {32, 2, 1}}
	if p.maxWorkGroup < 256 {
		big = []tiling{{64, 8, 4}, {32, 4, 4}}
	}
	pick := big[len(big)-1]
	for _, t := range big {
		ts := int64(t.ts)
		if groups := ceilDiv(m, ts) * ceilDiv(n, ts) * max(batch, 1); ts <= m && ts <= n && groups >= int64(2*p.computeUnits) {
			pick = t
			break
		}
	}
	return mustVariant(fam, alg, pick.ts, pick.ts, 16, pick.wpt, pick.wpt, pick.vw)
}

// gemm is the gemm variant of an M x N x K product over batch: on a GPU
// the tiled form (tiled); elsewhere fused_gemm at the device's vector
// width with gemmRows rows (4 for up to 128 rows, what FAST tuning chose
// for PP-OCR det and cls on POCL: more items for the threads), or on a
// 16-register CPU the rows whose accumulators its registers hold
// (gemmRowsFit: 6 x 2 vectors, every product: one program, as 4 was),
// one item per group.
// On a CPU the build options depend on M (a convolution's output
// channels), not on N (the pixels), so a model with dynamic spatial dims
// re-plans new shapes from built programs.
func (p deviceProfile) gemm(g gemmGeom) kernels.Variant {
	if p.gpu && g.M >= 32 {
		return p.tiled("gemm", "tiled", g.M, g.N, prod(g.batch))
	}
	if p.gpu {
		// A few rows (a GEMV, a classifier head): narrow blocks, the
		// driver's groups.
		return mustVariant("gemm", "direct", 4, 4, 2, 0)
	}
	vw, nv := p.vw(), 2
	mr := gemmRows(g.M)
	switch {
	case p.vectorRegisters() < 32:
		mr = p.gemmRowsFit(nv)
	case g.M <= 128:
		mr = 4
	}
	return mustVariant("gemm", "direct", vw, mr, nv, p.groupPolicy())
}

// conv is the conv variant of a KxK convolution (one group) of geometry g
// with a Winograd-able window (winograd: 3x3, stride 1). On a GPU the
// implicit GEMM (tiled as for a GEMM of OC x OH*OW per image). On a CPU
// the register-blocked direct kernel, MR output channels per block
// (convRows, within the registers' accumulators):
//   - Winograd F(2x2,3x3) (GEMMs K = C deep) where the direct kernel's
//     weight block per item (C*KH*KW*MR floats, streamed once per row of
//     pixels) outgrows an eighth of the cache local memory stands for, C
//     is at least 256 and the GEMMs' rows of transformed input (P tiles
//     of 2x2 outputs, P floats apart) are less than a page (4 KiB) apart,
//     which the CPU's stride prefetchers follow. On
//     pthread-skylake-avx512 (2 MiB per core): C=512 and 1024 at 32x32
//     (1.3x faster than grouped in CPU time per inference; at 16x16
//     within 10% of it); at 64x64 and 128x128 grouped ran 1.4x faster;
//     on AVX-512 (24 accumulators) also up to 1024 tiles (64x64) where
//     C*OC is at least 2^18: with V's rows padded (winogradPad) IS-Net's
//     1024->256 at 64x64 takes 106-110 ms CPU against broadcast's
//     149-164; with fewer channels the transforms' share wins no more
//     (256->256 and 512->128 tie, 256->128 and 256->64 lose);
//   - broadcast (AVX-512's 24 accumulators: bcastVectors vectors of
//     output channels x 8 pixels, 8 tiles per item, chunks of bcastChunk
//     input channels) where OC fills one or two vectors (bcastVectors: at
//     least three quarters of their lanes) and rows are at least 64
//     pixels (one item's 8 tiles): the inner loop broadcasts an input
//     value against weight vectors, each weight vector feeding 8 fmas and
//     each input value OB, the chunk's weights serving the item's tiles
//     from L1. IS-Net medium's convolutions of 64x64 to 512x512 (C 64 to
//     1024, OC 32 to 512) take 13-27% less CPU time than with grouped or
//     direct on pthread-skylake-avx512; below 64 columns (16x16, 32x32)
//     grouped stays 15% faster. AVX2 and SSE targets (8 accumulators)
//     keep grouped and direct: the tuner may try broadcast there;
//   - grouped (convGroups) where OC spans two blocks or more: each item
//     runs up to 8 blocks over chunks of input channels, so that the
//     chunk's input rows come from the cache once for all of them (IS-Net
//     medium: 18-23% less CPU time per inference than direct); a dilated
//     convolution takes grouped with 8 blocks whatever its OC, so that a
//     model's dilated convolutions share one program (built with run-time
//     dilations, windowDefines) instead of one per OCG and direct: IS-Net
//     medium's 16x16 and 32x32 dilated layers built three. One block of
//     a whole vector of rows (MR = VW) takes grouped too: with one block
//     below OC an item runs direct's work (its sums kept in private
//     memory between chunks of CK input channels), in the program the
//     model's grouped convolutions build anyway (IS-Net medium's 16x16
//     and 32x32 layers of 16 output channels, 0.2 ms of its run, built
//     direct with MR 16 for themselves: a build and a work-group
//     compilation of 1-1.5 s on POCL); only where that block holds more
//     rows than direct's smallest (MR 8): on an 8-wide target (AVX2) every
//     convolution of up to 8 output channels has MR = VW = 8, and those
//     stay direct as they were measured;
//   - direct, one block per item, otherwise (fewer rows than a vector:
//     IS-Net's one-channel side outputs, MR 8).
func (p deviceProfile) conv(g conv2D, winograd bool) kernels.Variant {
	if p.gpu {
		return p.tiled("conv", "implicit_gemm", g.OC, g.OH*g.OW, g.N)
	}
	vw := p.vw()
	mr := convRows(g.OC, vw)
	if p.accumulators() < 16 {
		mr = 8
	}
	block := g.C * g.KH * g.KW * int64(mr) * 4
	limit := p.cacheBudget(8)
	tiles := max(g.N, 1) * winogradTiles(g)
	wide := p.accumulators() >= 24 && tiles <= 1024 && g.C*g.OC >= 1<<18
	if winograd && g.C >= 256 && block > limit && (tiles*4 < 4096 || wide) {
		wmr := 8
		if p.accumulators() < 16 {
			wmr = 4
		}
		return mustVariant("conv", "winograd_2x2_3x3", vw, wmr, 2, p.groupPolicy())
	}
	if ob := bcastVectors(g.OC, vw); ob > 0 && p.accumulators() >= 24 && g.OW >= 64 {
		return mustVariant("conv", "broadcast", vw, ob, 8, 8, p.bcastChunk(g, int64(ob*vw)))
	}
	dilated := g.DH != 1 || g.DW != 1
	if blocks := ceilDiv(g.OC, int64(mr)); blocks >= 2 || dilated || (mr == vw && mr > 8) {
		ocg, ck := p.convGroups(g, mr, blocks)
		if dilated {
			ocg = 8
		}
		return mustVariant("conv", "grouped", vw, mr, ocg, ck)
	}
	return mustVariant("conv", "direct", vw, mr, 1, p.groupPolicy())
}

// bcastVectors is the broadcast conv's OB (vectors of vw output channels
// per item) for oc output channels: 2 where they fill two vectors, or
// three quarters of two (24 to 31 of 32 on AVX-512), 1 where they fill
// three quarters of one (12 to 16); 0 (not the broadcast kernel)
// otherwise. On pthread-skylake-avx512, CPU time per inference against
// the direct kernel (MR 24, 16, 8): 96->24 3x3 at 160x160 (PP-OCR det's)
// 11-14 ms against 15-18; 64->16 at 512x512 (IS-Net's) 67-73 against
// 110-119 (OB 2, half its lanes idle: 88-92); 32->8 at 256x256 with OB 1
// (half idle) 6.4-6.9 against 5.4-5.6, so less than three quarters stays
// direct.
func bcastVectors(oc int64, vw int) int {
	switch v := int64(vw); {
	case oc >= 2*v || oc > v && 4*oc >= 6*v:
		return 2
	case oc <= v && 4*oc >= 3*v:
		return 1
	}
	return 0
}

// bcastChunk is the broadcast conv's CK for blocks of ocv output
// channels: 32 input channels where a chunk's weights (CK*KH*KW*ocv
// floats, read once from memory and then from the cache by the item's 8
// tiles) stay within a 48th of the cache local memory stands for (43 KiB
// of pthread-skylake-avx512's 2 MiB; its L1d is 48 KiB), else 16.
func (p deviceProfile) bcastChunk(g conv2D, ocv int64) int {
	if 32*g.KH*g.KW*ocv*4 <= p.cacheBudget(48) {
		return 32
	}
	return 16
}

// convGroups is the grouped conv's OCG and CK for blocks blocks of mr
// output channels: 8 blocks per item, except 4 where there are 5 to 7
// (two items' worth of parallelism instead of one). An item runs only the
// blocks below OC (nb in conv_blocked.cl), so with up to 4 blocks OCG 8
// does OCG 4's work item for item, and a model's grouped convolutions
// share one program instead of one per OCG: each is a build and a
// work-group compilation of 1-2 s on POCL (IS-Net medium's 20 layers of
// 2 and 4 blocks, 23 ms of its run, built their own); chunks of
// 64 input channels where a chunk's input rows (two cache lines per
// kernel row) and one block's weights for it stay within a 32nd of the
// cache local memory stands for (the share of a core's L1 that
// pthread-skylake-avx512's 2 MiB gives), else 32.
func (p deviceProfile) convGroups(g conv2D, mr int, blocks int64) (ocg, ck int) {
	ocg, ck = 8, 32
	if blocks > 4 && blocks < 8 {
		ocg = 4
	}
	if chunk := 64 * (g.KH*2*64 + g.KH*g.KW*int64(mr)*4); chunk <= p.cacheBudget(32) {
		ck = 64
	}
	return ocg, ck
}

// cacheBudget is the nth part of the cache a CPU device's local memory
// stands for (256 KiB when the device reports none).
func (p deviceProfile) cacheBudget(n int64) int64 {
	if p.localMem <= 0 {
		return (256 << 10) / n
	}
	return p.localMem / n
}

// winogradTiles is the number of 2x2 output tiles Winograd F(2x2,3x3)
// makes of g per image (tiles a dilation apart on each axis).
func winogradTiles(g conv2D) int64 {
	dh, dw := max(g.DH, 1), max(g.DW, 1)
	return ceilDiv(g.OH, 2*dh) * dh * ceilDiv(g.OW, 2*dw) * dw
}

// poolGroup is pool_rows.cl's outputs per work item (RUN: max_pool2d,
// max_pool2d_2x2, avg_pool2d) and work group: on a GPU runs of 8 (its
// neighbouring items then read neighbouring columns) in the driver's
// groups (nil); on a CPU device runs of 32, where an item's index
// arithmetic (a division by the output height, the row's pointers) costs
// as much as a few of its 2x2 windows (IS-Net medium's 2x2 stride-2 pools
// over 512x512 to 16x16 ran 2.5-3x slower than ONNX Runtime's with 8, on
// pthread-skylake-avx512), in groups of one item by up to 64 rows for
// every pooling: one work-group function per program (the groups cpuGroup
// picks from the grids differ between the largest and the smallest
// pools, and POCL compiles one per group size).
func (p deviceProfile) poolGroup() (run int64, local []int) {
	if p.gpu {
		return 8, nil
	}
	return 32, []int{1, min(64, max(1, p.maxWorkGroup))}
}

// poolVector is max_pool2d_2x2's vector width (PV): the device's vector
// width on a CPU device, 4 on a GPU (whose items take runs of 8). On
// pthread-skylake-avx512 (AMD EPYC) IS-Net medium's 64-channel 512x512
// pool alone ran in 12.6-16.2 ms (minima of 15) with float4, 2.6-5.5 with
// float16; 128 channels at 256x256 3.0-5.7 against 2.5-2.8.
func (p deviceProfile) poolVector() int {
	if p.gpu {
		return 4
	}
	return p.vw()
}

// dwconv is the dwconv variant of a depthwise convolution of geometry g:
// on a GPU work groups of 16 x 8 output pixels staging their input tile
// in local memory (16 x 4 where the device takes fewer than 128 items); on
// a CPU the register-blocked kernel, one item per group, RB output rows
// per item (dwRows). rows says whether g's output height is the plan's
// for every request (a static model): a model with dynamic spatial dims
// re-plans new shapes from the programs its compile built, so its choice
// does not follow the height.
func (p deviceProfile) dwconv(g conv2D, rows bool) kernels.Variant {
	if p.gpu {
		if p.maxWorkGroup < 128 {
			return mustVariant("dwconv", "local", 16, 4)
		}
		return mustVariant("dwconv", "local", 16, 8)
	}
	return mustVariant("dwconv", "direct", p.vw(), p.dwRows(g, rows), p.groupPolicy())
}

// dwRows is the CPU depthwise kernel's RB: 8 output rows per item (4 for
// strided windows), within the registers' accumulators (one vector per
// row, beside the input vector and the broadcast weight: 8 of AVX2's 16
// registers); POCL pays a fixed cost per work group, and a depthwise item
// has little work per row (KW loads, KH*KW fmas per output row): on
// pthread-skylake-avx512 PP-OCRv4 rec's 5x5 layers at 12x80 took 236 us
// with 4 rows per item, 177 with 8; at 6x80 267 against 162; det 640's
// 3x3 at 320x320 2.3-2.6 ms against 2.0-2.2. Where the output height is
// known (rows) and a smaller RB of the table cuts an item's work summed
// over the plane by a tenth or more, that RB: an item's work is its fmas
// (RB*KH*KW, the rows past the plane's end included), its input rows'
// loads (KW each) and its weights' (KH*KW). PP-OCRv4 rec's 5x5 layers of
// 12, 6 and 3 rows computed 16, 8 and 8 rows with 8 per item; with 6, 6
// and 4, 12, 6 and 4 (skylake, per-node minima of three alternated
// profiles at load 3-4: 120 -> 105-109 us at 12x80); heights that 8
// divides (det's) keep 8. No RB above 8: 12 per item ran those layers
// 3% faster still, for a program per height and rec's cold compile
// 23 -> 25 POCL builds, 28-31 -> 36-38 s.
func (p deviceProfile) dwRows(g conv2D, rows bool) int {
	limit := min(8, p.accumulators())
	if g.SH >= 2 {
		limit = min(4, limit)
	}
	rb := limit
	if !rows || g.OH <= 0 {
		return rb
	}
	work := func(r int) int64 {
		in := (int64(r)-1)*g.SH + g.KH
		return ceilDiv(g.OH, int64(r)) * (int64(r)*g.KH*g.KW + in*g.KW + g.KH*g.KW)
	}
	base := work(rb)
	best := base
	for _, r := range tableValues("dwconv", "direct", "RB") {
		if w := work(r); r <= limit && 10*w <= 9*base && w < best {
			rb, best = r, w
		}
	}
	return rb
}

// tableValues are the values parameter name of family fam's algorithm
// alg takes in the variant tables.
func tableValues(fam, alg, name string) []int {
	f, _ := kernels.LookupFamily(fam)
	a, _ := f.Algorithm(alg)
	for _, prm := range a.Params {
		if prm.Name == name {
			return prm.Values
		}
	}
	return nil
}

// deconv is the deconv variant of a kernel = stride ConvTranspose with oc
// output channels and kernel width kw: the register-blocked kernel, MR
// output channels per item (fewer for few channels), at the CPU's vector
// width and one item per group, or on a GPU in float4 and the driver's
// groups; ok is false when the vector width is not a multiple of kw.
func (p deviceProfile) deconv(oc, kw int64) (kernels.Variant, bool) {
	vw := p.vw()
	if p.gpu {
		vw = 4
	}
	if int64(vw)%kw != 0 {
		return kernels.Variant{}, false
	}
	mr := 8
	for _, c := range []int{1, 2, 4} {
		if oc <= int64(c) {
			mr = c
			break
		}
	}
	return mustVariant("deconv", "direct", vw, mr, p.groupPolicy()), true
}

// runs is the variant of the families of element-wise runs (eltwise, se,
// copy): on a CPU runs of 16 elements by rows (contiguous runs the
// compiler vectorizes, no index division; what FAST tuning chose on
// POCL); on a GPU one element per item in a flat range, groups of
// group1D. Not from the shapes: a model with dynamic dims re-plans new
// shapes from built programs.
func (p deviceProfile) runs(fam string) kernels.Variant {
	if p.gpu {
		return mustVariant(fam, "flat", 1, p.group1D())
	}
	return mustVariant(fam, "rows", 16, 0)
}

// reduce is the reduce variant of cnt outputs of count elements each: on a
// GPU one work group per output (a tree in local memory) when each output
// folds at least 1024 elements and 4 per output item, else one output per
// item in groups of 64; on a CPU one output per item in groups of 64
// (FAST tuning on POCL).
func (p deviceProfile) reduce(count, cnt int64) kernels.Variant {
	if p.gpu && count >= 4*cnt && count >= 1024 {
		return mustVariant("reduce", "workgroup", min(256, prevPow2(p.maxWorkGroup)))
	}
	return mustVariant("reduce", "serial", 64)
}

// softmaxRows is softmax_rows' vector width and work group for rows of
// n elements: the device's vector width (4, 8 or 16); on a CPU one item
// per row (a work group runs on one core, its items in turn: more items
// add only their barriers), on a GPU the smallest power of two whose
// items cover the row in vectors, within 256 and kernelLimit (the
// kernel's CL_KERNEL_WORK_GROUP_SIZE and the device's limit: groupLimit).
func (p deviceProfile) softmaxRows(n int64, kernelLimit int) (vw, group int) {
	vw = p.vw()
	if !p.gpu {
		return vw, 1
	}
	vw = 4
	limit := min(256, p.maxWorkGroup, kernelLimit)
	group = 1
	for int64(group*vw) < n && group*2 <= limit {
		group *= 2
	}
	return vw, group
}

// floorPow2 is the largest power of two at most n (n >= 1).
func floorPow2(n int) int {
	p := 1
	for p*2 <= n {
		p *= 2
	}
	return p
}

// prevPow2 is the largest power of two at most n (64 at least).
func prevPow2(n int) int {
	p := 64
	for p*2 <= n {
		p *= 2
	}
	return p
}

// resize is the resize variant for a table of kind: "upsample" (nearest
// by integer factors of the last two axes), "gather" (other nearest
// tables), "linear2d" (up to two taps on the last two axes) or "taps".
// On a CPU runs of 8 pixels per item (upsample: of 4 rows) with the
// driver's groups; on a GPU narrow runs (4 pixels: one float4 store;
// linear2d: one pixel) in groups of 64, or 64 x 1 for the gather.
func (p deviceProfile) resize(kind string) kernels.Variant {
	switch kind {
	case "upsample":
		if p.gpu {
			return mustVariant("resize", "upsample", 4, 1, 64)
		}
		return mustVariant("resize", "upsample", 8, 4, 0)
	case "gather":
		if p.gpu {
			return mustVariant("resize", "gather", 64, 1)
		}
		return mustVariant("resize", "gather", 0, 1)
	case "linear2d":
		if p.gpu {
			return mustVariant("resize", "linear2d", 1, 64)
		}
		return mustVariant("resize", "linear2d", 8, 0)
	}
	if p.gpu {
		return mustVariant("resize", "taps", 64)
	}
	return mustVariant("resize", "taps", 0)
}

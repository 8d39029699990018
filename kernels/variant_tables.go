package kernels

// The parameters the tables share.
var (
	vwParam = Param{Name: "VW", Values: []int{4, 8, 16}, Define: true,
		Doc: "float vector width of the register blocks (wider than the device's native width is refused: it changes the call ABI)"}
	// wgParam: 1 makes every work item its own group (POCL then runs an
	// item's blocks in registers, one item after another), 0 leaves the
	// group size to the driver.
	wgParam = Param{Name: "WG", Values: []int{1, 0},
		Doc: "work-group size policy: 1 item per group, or 0 for the driver's choice"}
	// ept/wg1D: elements per work item and the 1-D group size of the
	// element-wise kernels.
	eptParam  = Param{Name: "EPT", Values: []int{1, 4, 16}, Define: true, Doc: "consecutive output elements per work item (one index division per run)"}
	wg1DParam = Param{Name: "WG", Values: []int{0, 64, 256}, Doc: "work-group size (0: the driver's choice)"}
)

// tiledParams are the tilings of gemm_tiled.cl: square TS x TS tiles of
// the output per work group, TS_K deep steps through K staged in local
// memory, WPT x WPT outputs per item in VW-wide columns; groups of
// (TS/WPT)^2 items.
var tiledParams = []Param{
	{Name: "TS_M", Values: []int{32, 64, 128}, Define: true, Doc: "output rows per work group"},
	{Name: "TS_N", Values: []int{32, 64, 128}, Define: true, Doc: "output columns per work group"},
	{Name: "TS_K", Values: []int{16}, Define: true, Doc: "depth of the local-memory tiles"},
	{Name: "WPT_M", Values: []int{2, 4, 8}, Define: true, Doc: "output rows per work item"},
	{Name: "WPT_N", Values: []int{2, 4, 8}, Define: true, Doc: "output columns per work item"},
	{Name: "VW", Values: []int{1, 4}, Define: true, Doc: "vector width of an item's columns"},
}

// tiledValid keeps square tilings whose groups hold 64-256 items.
func tiledValid(p Point) bool {
	wg := tiledGroup(p)
	return p["TS_M"] == p["TS_N"] && p["WPT_M"] == p["WPT_N"] && p["WPT_N"]%p["VW"] == 0 && wg >= 64 && wg <= 256
}

func tiledGroup(p Point) int { return (p["TS_M"] / p["WPT_M"]) * (p["TS_N"] / p["WPT_N"]) }

// tiledLocal is the two float tiles of a work group.
func tiledLocal(p Point) int64 { return int64(4 * p["TS_K"] * (p["TS_M"] + p["TS_N"])) }

// groupWG is the work group of the algorithms whose WG parameter is it.
func groupWG(p Point) int { return p["WG"] }

// TiledLocalSize returns the work-group size fused_gemm_tiled requires
// under variant v: (TS_N / WPT_N, TS_M / WPT_M, 1).
func TiledLocalSize(v Variant) []int {
	return []int{v.Get("TS_N") / v.Get("WPT_N"), v.Get("TS_M") / v.Get("WPT_M"), 1}
}

// families are the variant tables. The first algorithm of each family is
// its default; the planner's heuristics (clbackend) pick points of these
// tables, never values outside them. The families of the detection,
// compaction, spectral and sampling ops are in variant_tables_postprocess.go.
var families = append(append([]Family{
	{
		Name: "gemm", Ops: "MatMul, Gemm, FullyConnected and 1x1 convolutions without stride or pads",
		Algorithms: []Algorithm{
			{
				Name: "direct", Entries: []string{"fused_gemm"},
				Doc:       "register-blocked: MR rows x NV vectors of VW columns per item, serial fma over K, B read straight from global memory",
				Params:    []Param{vwParam, {Name: "MR", Values: []int{4, 6, 8, 12}, Define: true, Doc: "output rows per work item (6 x 2 vectors: the most accumulators, 12, that 16 vector registers hold beside the 2 B vectors and the A broadcast)"}, {Name: "NV", Values: []int{2}, Define: true, Doc: "vectors of VW columns per work item"}, wgParam},
				WorkGroup: groupWG,
			},
			{
				Name: "tiled", Entries: []string{"fused_gemm_tiled"}, GPUShaped: true,
				Doc:    "local-memory tiled GEMM (CLBlast-style): a work group stages TS_K-deep tiles of A and B in local memory, each item keeps WPT x WPT outputs in registers",
				Params: tiledParams, Valid: tiledValid, WorkGroup: tiledGroup, LocalMem: tiledLocal,
			},
		},
	},
	{
		Name: "conv", Ops: "Conv and FusedConv of one group with a KxK window (not 1x1 unstrided), any dilation, host weights",
		Algorithms: []Algorithm{
			{
				Name: "direct", Entries: []string{"fused_conv2d_blocked"},
				Doc: "register-blocked direct convolution: MR output channels x NV vectors of VW pixels of a row per item",
				Params: []Param{vwParam, {Name: "MR", Values: []int{8, 16, 24}, Define: true, Doc: "output channels per work item"},
					{Name: "NV", Values: []int{1, 2}, Define: true, Doc: "vectors of VW pixels of a row per work item (each weight loaded feeds NV fmas)"}, wgParam},
				// At most 24 accumulator vectors: AVX-512 has 32 registers.
				Valid:     func(p Point) bool { return p["MR"]*p["NV"] <= 24 },
				WorkGroup: groupWG,
			},
			{
				Name: "grouped", Entries: []string{"fused_conv2d_blocked"},
				Doc: "the register-blocked direct convolution with OCG blocks of MR output channels per item, run in turn over chunks of CK input channels with their partial sums in private memory: each chunk's input rows, loaded into the cache by the first block, serve the others from it; one item per group (a CPU's form)",
				Params: []Param{vwParam, {Name: "MR", Values: []int{8, 16, 24}, Define: true, Doc: "output channels per block"},
					{Name: "OCG", Values: []int{4, 8}, Define: true, Doc: "blocks of MR output channels per work item"},
					{Name: "CK", Values: []int{32, 64}, Define: true, Doc: "input channels per chunk"}},
				WorkGroup: func(Point) int { return 1 },
			},
			{
				Name: "broadcast", Entries: []string{"fused_conv2d_bcast"},
				Doc: "direct convolution whose inner loop broadcasts one input value against OB vectors of VW output channels' weights (packed once per tap): ONNX Runtime's NCHWc loop on NCHW activations. NP pixels of a row per tile, TL tiles per item run in turn over chunks of CK input channels with their partial sums in private memory, so a chunk's weights serve TL tiles from the cache; one item per group (a CPU's form)",
				Params: []Param{vwParam, {Name: "OB", Values: []int{1, 2}, Define: true, Doc: "vectors of VW output channels per work item (each input value loaded feeds OB fmas)"},
					{Name: "NP", Values: []int{6, 8}, Define: true, Doc: "pixels of a row per tile (each weight vector loaded feeds NP fmas; OB*NP accumulator vectors)"},
					{Name: "TL", Values: []int{1, 8}, Define: true, Doc: "tiles of NP pixels per work item, run in turn over each chunk of input channels"},
					{Name: "CK", Values: []int{16, 32}, Define: true, Doc: "input channels per chunk (with TL > 1)"}},
				// One vector of output channels (the heuristics' choice for
				// three quarters of VW to VW of them) only in the form they
				// choose: 8 tiles of 8 pixels.
				Valid: func(p Point) bool {
					return (p["TL"] > 1 || p["CK"] == 16) && (p["OB"] == 2 || p["NP"] == 8 && p["TL"] == 8)
				},
				WorkGroup: func(Point) int { return 1 },
			},
			{
				Name: "implicit_gemm", Entries: []string{"fused_gemm_tiled"}, GPUShaped: true,
				Doc:    "the tiled GEMM of gemm_tiled.cl with im2col done while staging B tiles: W [OC, C*KH*KW] x patches [C*KH*KW, OH*OW] per image",
				Params: tiledParams, Valid: tiledValid, WorkGroup: tiledGroup, LocalMem: tiledLocal,
			},
			{
				Name: "winograd_2x2_3x3", Entries: []string{"fused_gemm", "winograd_input_2x2_3x3", "winograd_output_2x2_3x3"},
				Doc:       "Winograd F(2x2,3x3) for 3x3 stride 1: input tiles transformed to 16 planes, 16 batched GEMMs with the transformed weights (fused_gemm), the output transform with bias and post-ops; 2.25x fewer multiplies",
				Params:    []Param{vwParam, {Name: "MR", Values: []int{4, 8}, Define: true, Doc: "rows per work item of the batched GEMM"}, {Name: "NV", Values: []int{2}, Define: true, Doc: "vectors per work item of the batched GEMM"}, wgParam},
				WorkGroup: groupWG,
			},
		},
	},
	{
		Name: "dwconv", Ops: "depthwise Conv and FusedConv (group = C = OC), dilation 1",
		Algorithms: []Algorithm{
			{
				Name: "direct", Entries: []string{"fused_dwconv2d"},
				Doc:       "register-blocked: RB output rows x VW pixels of one plane per item, each input row loaded once for the RB rows",
				Params:    []Param{vwParam, {Name: "RB", Values: []int{2, 4, 6, 8}, Define: true, Doc: "output rows per work item"}, wgParam},
				WorkGroup: groupWG,
			},
			{
				Name: "local", Entries: []string{"fused_dwconv2d_local"}, GPUShaped: true,
				Doc: "a TX x TY work group stages its input tile (with the window's halo) in local memory, one output pixel per item",
				Params: []Param{
					{Name: "TX", Values: []int{16, 32}, Define: true, Doc: "output columns per work group"},
					{Name: "TY", Values: []int{4, 8, 16}, Define: true, Doc: "output rows per work group"},
				},
				Valid:     func(p Point) bool { return p["TX"]*p["TY"] >= 64 && p["TX"]*p["TY"] <= 256 },
				WorkGroup: func(p Point) int { return p["TX"] * p["TY"] },
				// The largest window the lowering sends it (7x7, stride 2).
				LocalMem: func(p Point) int64 { return int64(4 * ((p["TX"]-1)*2 + 7) * ((p["TY"]-1)*2 + 7)) },
			},
		},
	},
	{
		Name: "deconv", Ops: "ConvTranspose of one group whose kernel equals its stride (no pads), host weights",
		Algorithms: []Algorithm{
			{
				Name: "direct", Entries: []string{"fused_deconv2d"},
				Doc:       "register-blocked: MR output channels x VW output pixels per item, each input pixel feeding KH x KW outputs",
				Params:    []Param{vwParam, {Name: "MR", Values: []int{1, 2, 4, 8}, Define: true, Doc: "output channels per work item"}, wgParam},
				WorkGroup: groupWG,
			},
		},
	},
	{
		Name: "resize", Ops: "Resize (nearest, linear, cubic) and its nearest integer upsampling",
		Algorithms: []Algorithm{
			{
				Name: "gather", Entries: []string{"resize_nearest"},
				Doc: "one output element per item through the per-axis index tables (nearest mode)",
				Params: []Param{
					{Name: "WX", Values: []int{0, 16, 64}, Doc: "work-group columns (0: the driver's choice)"},
					{Name: "WY", Values: []int{1, 4}, Doc: "work-group rows"},
				},
				Valid:     func(p Point) bool { return p["WX"] != 0 || p["WY"] == 1 },
				WorkGroup: func(p Point) int { return p["WX"] * p["WY"] },
			},
			{
				Name: "upsample", Entries: []string{"resize_upsample"},
				Doc: "nearest upsampling by integer factors of the last two axes: an item writes VW pixels of an output row from VW / SW input pixels, no index table",
				Params: []Param{{Name: "VW", Values: []int{4, 8, 16}, Define: true, Doc: "output pixels per work item"},
					{Name: "RY", Values: []int{1, 4}, Define: true, Doc: "output rows per work item"}, wg1DParam},
				WorkGroup: groupWG,
			},
			{
				Name: "linear2d", Entries: []string{"resize_linear2d"},
				Doc:       "separable interpolation of the last two axes with up to two taps each (bilinear: U-Net decoders, IS-Net's side outputs): an item writes VW pixels of an output row from two input rows located once",
				Params:    []Param{{Name: "VW", Values: []int{1, 4, 8}, Define: true, Doc: "output pixels per work item"}, wg1DParam},
				WorkGroup: groupWG,
			},
			{
				Name: "taps", Entries: []string{"resize"},
				Doc:       "one output element per item summing its taps (linear, cubic, and nearest forms the others do not take)",
				Params:    []Param{wg1DParam},
				WorkGroup: groupWG,
			},
		},
	},
	{
		Name: "eltwise", Ops: "broadcast element-wise binary ops (Add, Mul, Sub, Div, ... on f32 and f16)",
		Algorithms: []Algorithm{
			{
				Name: "flat", Entries: []string{"eltwise_binary"},
				Doc:       "EPT consecutive output elements per item of a 1-D range, operand offsets located once per run of the innermost axis",
				Params:    []Param{eptParam, wg1DParam},
				WorkGroup: groupWG,
			},
			{
				Name: "rows", Entries: []string{"eltwise_binary"}, Defines: "-DROWS",
				Doc:       "a 2-D range over (runs of EPT along the innermost axis, rows): no index division for rank 2",
				Params:    []Param{eptParam, wg1DParam},
				WorkGroup: groupWG,
			},
		},
	},
	{
		Name: "reduce", Ops: "ReduceSum/Mean/Max/Min/Prod/SumSquare/L1/L2/LogSumExp and the global pools on f32 and f16",
		Algorithms: []Algorithm{
			{
				Name: "serial", Entries: []string{"reduce"},
				Doc:       "one output per item, its elements folded serially",
				Params:    []Param{wg1DParam},
				WorkGroup: groupWG,
			},
			{
				Name: "workgroup", Entries: []string{"reduce_wg"}, GPUShaped: true,
				Doc:       "one work group per output: the items fold strided slices, then a tree in local memory",
				Params:    []Param{{Name: "WG", Values: []int{64, 128, 256}, Define: true, Doc: "work-group size"}},
				WorkGroup: groupWG,
				LocalMem:  func(p Point) int64 { return int64(8 * p["WG"]) },
			},
		},
	},
	{
		Name: "se", Ops: "the squeeze-excitation residual fusion (FuseSEResidual: x + x*gate)",
		Algorithms: []Algorithm{
			{
				Name: "flat", Entries: []string{"se_residual"},
				Doc:       "EPT consecutive output elements per item of a 1-D range, the gate located once per run of the innermost axis",
				Params:    []Param{eptParam, wg1DParam},
				WorkGroup: groupWG,
			},
			{
				Name: "rows", Entries: []string{"se_residual"}, Defines: "-DROWS",
				Doc:       "a 2-D range over (runs of EPT along a channel's pixels, channels): one gate value per row, no index division",
				Params:    []Param{eptParam, wg1DParam},
				WorkGroup: groupWG,
			},
		},
	},
	{
		Name: "copy", Ops: "the strided copies of the data-movement ops (Concat, Split, Slice, Transpose, Expand, Tile, ...)",
		Algorithms: []Algorithm{
			{
				Name: "flat", Entries: []string{"strided_copy"},
				Doc:       "EPT consecutive elements per item of a 1-D range",
				Params:    []Param{eptParam, wg1DParam},
				WorkGroup: groupWG,
			},
			{
				Name: "rows", Entries: []string{"strided_copy"}, Defines: "-DROWS",
				Doc:       "a 2-D range over (runs of EPT along the innermost axis, rows): contiguous runs copied as vectors, no index division for rank 2",
				Params:    []Param{eptParam, wg1DParam},
				WorkGroup: groupWG,
			},
		},
	},
}, postprocessFamilies...), quantFamilies...)

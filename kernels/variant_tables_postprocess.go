package kernels

// cpiParam is the channels one work item of a sampling kernel covers: the
// sample positions and weights are computed once for them.
var cpiParam = Param{Name: "CPI", Values: []int{1, 4, 16}, Define: true,
	Doc: "channels per work item (the taps' offsets and weights computed once for them)"}

// postprocessFamilies are the variant tables of the ops of detection heads
// (RoiAlign), of GridSample, of the spectral transforms and of the stream
// compactions: the families clbackend's lower_detection.go,
// lower_resize.go, lower_signal.go and lower_compact.go choose from.
var postprocessFamilies = []Family{
	{
		Name: "nms", Ops: "NonMaxSuppression (per batch and class: sort by score, greedy IoU suppression)",
		Algorithms: []Algorithm{
			{
				Name: "serial", Entries: []string{"nms_serial"},
				Doc:       "one work item per (batch, class): a heap sort of its candidates in global memory, then the greedy selection; one launch",
				Params:    []Param{wgParam},
				WorkGroup: groupWG,
			},
			{
				Name: "bitonic", Entries: []string{"nms_select_group", "nms_init", "nms_sort_step"}, GPUShaped: true,
				Doc: "a bitonic sort of every class's candidates (one launch per step), then one work group per class testing each candidate against the kept boxes held in local memory",
				Params: []Param{
					{Name: "WG", Values: []int{64, 256}, Define: true, Doc: "work-group size of the selection"},
					{Name: "KEPT", Values: []int{128, 1024}, Define: true, Doc: "kept boxes a group holds in local memory (the node's max_output_boxes_per_class must fit)"},
				},
				WorkGroup: groupWG,
				LocalMem:  func(p Point) int64 { return int64(16*p["KEPT"] + 8) },
			},
		},
	},
	{
		Name: "scan", Ops: "the prefix sums of stream compaction (NonZero, Compress, Unique, NonMaxSuppression)",
		Algorithms: []Algorithm{
			{
				Name: "blocks", Entries: []string{"scan_blocks", "scan_add"},
				Doc:       "blocks of 4*WG counts per work group scanned in local memory, the blocks' totals scanned by further levels, their offsets added back",
				Params:    []Param{{Name: "WG", Values: []int{64, 256}, Define: true, Doc: "work-group size (a block is 4*WG counts)"}},
				WorkGroup: groupWG,
				LocalMem:  func(p Point) int64 { return int64(4 * p["WG"]) },
			},
		},
	},
	{
		Name: "fft", Ops: "DFT and STFT (any length: Bluestein's algorithm for a prime factor of 64 or more)",
		Algorithms: []Algorithm{
			{
				Name: "stockham", Entries: []string{"fft_stage", "fft_load", "fft_store", "fft_pointmul"},
				Doc: "mixed-radix Stockham passes, one launch per radix: powers of two in radix-RMAX passes (fewer, heavier passes as RMAX grows), then 3, 5 and generic small primes",
				Params: []Param{{Name: "RMAX", Values: []int{2, 4, 8},
					Doc: "the largest power-of-two radix of a pass (fft_stage is built with -DRADIX of each pass)"}},
			},
		},
	},
	{
		Name: "roi_align", Ops: "RoiAlign (avg and max, both coordinate transformation modes)",
		Algorithms: []Algorithm{
			{
				Name: "channels", Entries: []string{"roi_align"},
				Doc:    "one bin per item for CPI channels: each bilinear sample's corners and weights are computed once per bin and channel group",
				Params: []Param{cpiParam},
			},
		},
	},
	{
		Name: "grid_sample", Ops: "GridSample (nearest, linear, cubic; 1 to 3 spatial axes)",
		Algorithms: []Algorithm{
			{
				Name: "channels", Entries: []string{"grid_sample"},
				Doc:    "one output point per item for CPI channels: the taps' offsets and weights are computed once per point and channel group",
				Params: []Param{cpiParam},
			},
		},
	},
}

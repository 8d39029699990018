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

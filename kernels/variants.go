package kernels

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrVariant is wrapped by errors about a kernel variant that the variant
// tables do not declare, or that a device cannot launch.
var ErrVariant = errors.New("kernels: unknown or unusable kernel variant")

// Param is one parameter of an algorithm's variants: a build option
// (-DName=value) or, without Define, a launch parameter the lowering reads
// (a work-group size).
type Param struct {
	// Name is the option or launch parameter ("VW", "WG").
	Name string
	// Values are the values the search may take, the first the most
	// conservative.
	Values []int
	// Define is set when the value is passed to the compiler as -DName=v.
	Define bool
	// Doc says what the parameter changes.
	Doc string
}

// Algorithm is one way a family computes its ops: the kernels it
// launches and the parameter space of its variants, the cartesian product
// of Params filtered by Valid.
type Algorithm struct {
	// Name names the algorithm in its family ("direct", "tiled").
	Name string
	// Doc says how it computes and where it pays.
	Doc string
	// Entries are the __kernel entry points its launches use, the one its
	// parameters shape first (the lowering picks the catalogue entry of
	// that entry point that computes its op: "reduce_wg_mean" of
	// "reduce_wg").
	Entries []string
	// Params are its parameters, in the order a variant lists them.
	Params []Param
	// Defines are build options every point of the algorithm adds
	// ("-DROWS"): the form of its entry point the algorithm uses.
	Defines string
	// Valid, when set, rejects parameter combinations the kernel
	// contract does not allow; p maps each parameter to its value.
	Valid func(p Point) bool
	// WorkGroup is the number of work items per work group a launch of a
	// point asks for: 0 when the driver picks, 1 when every item is its
	// own group.
	WorkGroup func(p Point) int
	// LocalMem is the __local memory in bytes one work group of a point
	// uses (nil: none).
	LocalMem func(p Point) int64
	// GPUShaped marks the forms written for GPU-type devices: work groups
	// of 64-256 items sharing tiles in local memory.
	GPUShaped bool
}

// Family is a hot op family whose kernels come in declared variants: the
// planner picks one per (kernel, shape, options) from the tuning cache or
// its heuristics, the tuner times them, and the tests run each.
type Family struct {
	// Name is the family's name in variant strings ("gemm").
	Name string
	// Ops says which graph ops (and op forms) it lowers.
	Ops string
	// Algorithms are its ways of computing, the default (heuristic)
	// algorithm first.
	Algorithms []Algorithm
}

// Point maps an algorithm's parameters to their values in one variant.
type Point map[string]int

// Variant is one point of a family's space: the algorithm and the value of
// each of its parameters (in the algorithm's Params order). Its String
// form ("gemm/direct:VW=16,MR=8,NV=2,WG=1") is what the tuning cache and
// the runtime model record.
type Variant struct {
	Family    string
	Algorithm string
	Values    []int
}

// Limits are what a device allows a variant: the widest float vector its
// kernels may pass by value (4 is allowed everywhere), the largest work
// group and the local memory. A zero field does not limit.
type Limits struct {
	VectorWidth  int
	MaxWorkGroup int
	LocalMem     int64
}

// MinVectorWidth is the float vector width every device and every POCL CPU
// target builds without an ABI warning (128-bit SSE registers); the
// kernels' VW default.
const MinVectorWidth = 4

// String formats v as family/algorithm:NAME=value,... .
func (v Variant) String() string {
	a, ok := v.algorithm()
	var sb strings.Builder
	sb.WriteString(v.Family + "/" + v.Algorithm)
	for i, x := range v.Values {
		if i == 0 {
			sb.WriteByte(':')
		} else {
			sb.WriteByte(',')
		}
		name := "?"
		if ok && i < len(a.Params) {
			name = a.Params[i].Name
		}
		sb.WriteString(name + "=" + strconv.Itoa(x))
	}
	return sb.String()
}

// IsZero reports whether v is the zero Variant (no choice).
func (v Variant) IsZero() bool { return v.Family == "" }

// Equal reports whether v and o are the same point.
func (v Variant) Equal(o Variant) bool {
	return v.Family == o.Family && v.Algorithm == o.Algorithm && slices.Equal(v.Values, o.Values)
}

// Get returns the value of parameter name (0 when v's algorithm has no
// such parameter).
func (v Variant) Get(name string) int {
	a, ok := v.algorithm()
	if !ok {
		return 0
	}
	for i, p := range a.Params {
		if p.Name == name && i < len(v.Values) {
			return v.Values[i]
		}
	}
	return 0
}

// Point maps v's parameters to their values.
func (v Variant) Point() Point {
	a, ok := v.algorithm()
	if !ok {
		return Point{}
	}
	return a.point(v)
}

// With returns v with parameter name set to x (v itself when its
// algorithm has no such parameter).
func (v Variant) With(name string, x int) Variant {
	a, ok := v.algorithm()
	if !ok {
		return v
	}
	out := Variant{Family: v.Family, Algorithm: v.Algorithm, Values: slices.Clone(v.Values)}
	for i, p := range a.Params {
		if p.Name == name && i < len(out.Values) {
			out.Values[i] = x
		}
	}
	return out
}

// Defines returns the build options of v's Define parameters
// ("-DVW=16 -DMR=8 -DNV=2"), after its algorithm's own.
func (v Variant) Defines() string {
	a, ok := v.algorithm()
	if !ok {
		return ""
	}
	parts := strings.Fields(a.Defines)
	for i, p := range a.Params {
		if p.Define && i < len(v.Values) {
			parts = append(parts, fmt.Sprintf("-D%s=%d", p.Name, v.Values[i]))
		}
	}
	return strings.Join(parts, " ")
}

// Entry returns the entry point v's parameters shape (the first of its
// algorithm's entries).
func (v Variant) Entry() string {
	a, ok := v.algorithm()
	if !ok || len(a.Entries) == 0 {
		return ""
	}
	return a.Entries[0]
}

// WorkGroup is the number of items per work group v asks for (0: the
// driver picks).
func (v Variant) WorkGroup() int {
	a, ok := v.algorithm()
	if !ok || a.WorkGroup == nil {
		return 0
	}
	return a.WorkGroup(a.point(v))
}

// LocalMem is the local memory in bytes one work group of v uses.
func (v Variant) LocalMem() int64 {
	a, ok := v.algorithm()
	if !ok || a.LocalMem == nil {
		return 0
	}
	return a.LocalMem(a.point(v))
}

// point maps a's parameters to v's values.
func (a Algorithm) point(v Variant) Point {
	p := Point{}
	for i, prm := range a.Params {
		if i < len(v.Values) {
			p[prm.Name] = v.Values[i]
		}
	}
	return p
}

// Fits reports why v cannot run under lim ("" when it can): a vector
// wider than the device takes, a work group larger than it allows, or
// more local memory than it has.
func (v Variant) Fits(lim Limits) string {
	if w := v.Get("VW"); w > MinVectorWidth && lim.VectorWidth > 0 && w > max(lim.VectorWidth, MinVectorWidth) {
		return fmt.Sprintf("vector width %d is wider than the device's %d", w, lim.VectorWidth)
	}
	if wg := v.WorkGroup(); lim.MaxWorkGroup > 0 && wg > lim.MaxWorkGroup {
		return fmt.Sprintf("work group of %d items exceeds the device's %d (CL_DEVICE_MAX_WORK_GROUP_SIZE)", wg, lim.MaxWorkGroup)
	}
	if lm := v.LocalMem(); lim.LocalMem > 0 && lm > lim.LocalMem {
		return fmt.Sprintf("%d bytes of local memory exceed the device's %d (CL_DEVICE_LOCAL_MEM_SIZE)", lm, lim.LocalMem)
	}
	return ""
}

func (v Variant) algorithm() (Algorithm, bool) {
	f, ok := LookupFamily(v.Family)
	if !ok {
		return Algorithm{}, false
	}
	return f.Algorithm(v.Algorithm)
}

// ParseVariant reads a Variant's String form and checks that the tables
// declare it. An unknown family, algorithm, parameter or value is an
// error wrapping ErrVariant.
func ParseVariant(s string) (Variant, error) {
	head, params, _ := strings.Cut(s, ":")
	fam, alg, ok := strings.Cut(head, "/")
	if !ok {
		return Variant{}, fmt.Errorf("kernels: variant %q: want family/algorithm:NAME=value,...: %w", s, ErrVariant)
	}
	f, ok := LookupFamily(fam)
	if !ok {
		return Variant{}, fmt.Errorf("kernels: variant %q: no family %q (families: %s): %w", s, fam, strings.Join(FamilyNames(), ", "), ErrVariant)
	}
	a, ok := f.Algorithm(alg)
	if !ok {
		return Variant{}, fmt.Errorf("kernels: variant %q: family %s has no algorithm %q: %w", s, fam, alg, ErrVariant)
	}
	v := Variant{Family: fam, Algorithm: alg, Values: make([]int, len(a.Params))}
	var fields []string
	if params != "" {
		fields = strings.Split(params, ",")
	}
	if len(fields) != len(a.Params) {
		return Variant{}, fmt.Errorf("kernels: variant %q: %s/%s takes %d parameters, not %d: %w", s, fam, alg, len(a.Params), len(fields), ErrVariant)
	}
	for i, fld := range fields {
		name, val, _ := strings.Cut(fld, "=")
		x, err := strconv.Atoi(val)
		if name != a.Params[i].Name || err != nil {
			return Variant{}, fmt.Errorf("kernels: variant %q: parameter %d is %s=<int>, not %q: %w", s, i, a.Params[i].Name, fld, ErrVariant)
		}
		v.Values[i] = x
	}
	if !slices.ContainsFunc(f.space(a), v.Equal) {
		return Variant{}, fmt.Errorf("kernels: variant %q is not a point of the declared space of %s/%s: %w", s, fam, alg, ErrVariant)
	}
	return v, nil
}

// Algorithm returns the family's algorithm called name.
func (f Family) Algorithm(name string) (Algorithm, bool) {
	for _, a := range f.Algorithms {
		if a.Name == name {
			return a, true
		}
	}
	return Algorithm{}, false
}

// Variants returns every declared point of the family that fits lim, in
// table order (algorithm, then the parameters' values, the first
// parameter varying slowest).
func (f Family) Variants(lim Limits) []Variant {
	var out []Variant
	for _, a := range f.Algorithms {
		for _, v := range f.space(a) {
			if v.Fits(lim) == "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// AlgorithmVariants returns the declared points of one algorithm that fit
// lim.
func (f Family) AlgorithmVariants(alg string, lim Limits) []Variant {
	var out []Variant
	for _, v := range f.Variants(lim) {
		if v.Algorithm == alg {
			out = append(out, v)
		}
	}
	return out
}

// space is the cartesian product of a's parameter values filtered by
// a.Valid.
func (f Family) space(a Algorithm) []Variant {
	out := []Variant{{Family: f.Name, Algorithm: a.Name, Values: []int{}}}
	for _, p := range a.Params {
		var next []Variant
		for _, v := range out {
			for _, x := range p.Values {
				next = append(next, Variant{Family: f.Name, Algorithm: a.Name, Values: append(slices.Clone(v.Values), x)})
			}
		}
		out = next
	}
	if a.Valid == nil {
		return out
	}
	return slices.DeleteFunc(out, func(v Variant) bool { return !a.Valid(a.point(v)) })
}

// Families returns the variant tables of every hot op family.
func Families() []Family { return slices.Clone(families) }

// FamilyNames returns the families' names in table order.
func FamilyNames() []string {
	out := make([]string, len(families))
	for i, f := range families {
		out[i] = f.Name
	}
	return out
}

// LookupFamily returns the family called name.
func LookupFamily(name string) (Family, bool) {
	for _, f := range families {
		if f.Name == name {
			return f, true
		}
	}
	return Family{}, false
}

// FamilyOfEntry returns the family whose algorithms launch entry point
// entry first (a kernel fusion's family: se_residual's "se").
func FamilyOfEntry(entry string) (Family, bool) {
	for _, f := range families {
		for _, a := range f.Algorithms {
			if len(a.Entries) > 0 && a.Entries[0] == entry {
				return f, true
			}
		}
	}
	return Family{}, false
}

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
// tables, never values outside them.
var families = []Family{
	{
		Name: "gemm", Ops: "MatMul, Gemm, FullyConnected and 1x1 convolutions without stride or pads",
		Algorithms: []Algorithm{
			{
				Name: "direct", Entries: []string{"fused_gemm"},
				Doc:       "register-blocked: MR rows x NV vectors of VW columns per item, serial fma over K, B read straight from global memory",
				Params:    []Param{vwParam, {Name: "MR", Values: []int{4, 8, 12}, Define: true, Doc: "output rows per work item"}, {Name: "NV", Values: []int{2}, Define: true, Doc: "vectors of VW columns per work item"}, wgParam},
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
		Name: "conv", Ops: "Conv and FusedConv of one group with a KxK window (not 1x1 unstrided), dilation 1, host weights",
		Algorithms: []Algorithm{
			{
				Name: "direct", Entries: []string{"fused_conv2d_blocked"},
				Doc:       "register-blocked direct convolution: MR output channels x VW pixels of a row per item",
				Params:    []Param{vwParam, {Name: "MR", Values: []int{8, 16, 24}, Define: true, Doc: "output channels per work item"}, wgParam},
				WorkGroup: groupWG,
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
				Params:    []Param{vwParam, {Name: "RB", Values: []int{2, 4, 8}, Define: true, Doc: "output rows per work item"}, wgParam},
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
				Doc:       "nearest upsampling by integer factors of the last two axes: an item writes VW pixels of an output row from VW / SW input pixels, no index table",
				Params:    []Param{{Name: "VW", Values: []int{4, 8, 16}, Define: true, Doc: "output pixels per work item"}, wg1DParam},
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
}

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
	// IntegerDot marks the forms built on cl_khr_integer_dot_product's
	// packed 4x8-bit dot products: only a device whose Limits say it has
	// them (accelerated) runs them; the kernel tests run them everywhere,
	// through the kernel's own emulation.
	IntegerDot bool
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
// group and the local memory. A zero field does not limit, but for
// IntegerDot: false keeps the integer dot product forms out, except in
// the zero Limits, which limit nothing.
type Limits struct {
	VectorWidth  int
	MaxWorkGroup int
	LocalMem     int64
	// IntegerDot is set on devices with cl_khr_integer_dot_product's
	// packed 4x8-bit dot products, accelerated (see Algorithm.IntegerDot).
	IntegerDot bool
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
// wider than the device takes, a work group larger than it allows, an
// algorithm needing integer dot products the device lacks, or more local
// memory than it has.
func (v Variant) Fits(lim Limits) string {
	if why := lim.VectorFits(v.Get("VW")); why != "" {
		return why
	}
	if why := lim.WorkGroupFits(v.WorkGroup()); why != "" {
		return why
	}
	if a, ok := v.algorithm(); ok && a.IntegerDot && !lim.IntegerDot && lim != (Limits{}) {
		return "needs accelerated packed 4x8-bit integer dot products (cl_khr_integer_dot_product), which the device does not report"
	}
	return lim.LocalMemFits(v.LocalMem())
}

// VectorFits reports why a kernel built with float vectors of width w
// (its -DVW) cannot run under lim ("" when it can): on a CPU device a
// vector wider than the preferred width changes the call ABI of the
// builtins (float16 without AVX-512, float8 without AVX) and the program
// does not build. MinVectorWidth fits every device.
func (lim Limits) VectorFits(w int) string {
	if w > MinVectorWidth && lim.VectorWidth > 0 && w > max(lim.VectorWidth, MinVectorWidth) {
		return fmt.Sprintf("vector width %d is wider than the device's %d", w, lim.VectorWidth)
	}
	return ""
}

// WorkGroupFits reports why a launch in work groups of items work items
// cannot run under lim ("" when it can).
func (lim Limits) WorkGroupFits(items int) string {
	if lim.MaxWorkGroup > 0 && items > lim.MaxWorkGroup {
		return fmt.Sprintf("work group of %d items exceeds the device's %d (CL_DEVICE_MAX_WORK_GROUP_SIZE)", items, lim.MaxWorkGroup)
	}
	return ""
}

// LocalMemFits reports why a work group using bytes of local memory
// cannot run under lim ("" when it can).
func (lim Limits) LocalMemFits(bytes int64) string {
	if lim.LocalMem > 0 && bytes > lim.LocalMem {
		return fmt.Sprintf("%d bytes of local memory exceed the device's %d (CL_DEVICE_LOCAL_MEM_SIZE)", bytes, lim.LocalMem)
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

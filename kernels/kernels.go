package kernels

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// sources holds every OpenCL C file of the package: the kernel files
// (*.cl) and the headers they include (*.clh).
//
//go:embed *.cl *.clh
var sources embed.FS

// includeRe matches a line that includes an embedded header.
var includeRe = regexp.MustCompile(`^#include "([\w.]+\.clh)"\s*$`)

// ErrUnknown is wrapped by lookups of a kernel name or file the catalogue
// does not have.
var ErrUnknown = errors.New("kernels: unknown kernel")

// Kernel is one catalogue entry: an OpenCL kernel entry point in a .cl file,
// built with options. Two entries may share a file and entry point and differ
// in their options; each (File, Options) pair is a separate program.
type Kernel struct {
	// Name is the catalogue name the GPU device looks the kernel up by
	// ("relu").
	Name string
	// File is the .cl file that holds the kernel ("eltwise_unary.cl").
	File string
	// Entry is the __kernel function to launch ("eltwise_unary").
	Entry string
	// Options are the OpenCL build options ("-DUNARY_OP=RELU").
	Options string
	// Generated is the source of a kernel generated at compile time
	// (package kernels/gen), headers expanded; empty for a catalogue
	// entry, whose source is its File's. File then only names it in build
	// logs and messages.
	Generated string
}

// catalogue lists every kernel, sorted by name. It is made from the .cl
// files themselves (buildCatalogue): every __kernel entry point is an entry
// of its name, and the variants below are entries that one entry point
// serves through build options. The GPU device adds type defines
// (-DT=float, ...) to an entry's options when it builds it.
var catalogue = buildCatalogue()

// variants are the entries that a build option makes of an entry point
// (or that name it differently); an entry point listed here gets no entry
// of its own name. The unary and binary element-wise entries are made from
// the operation macros of eltwise_ops.clh (see
// opMacros) and the reductions from reduceOps.
var variants = []Kernel{
	{Name: "avg_pool", File: "pool.cl", Entry: "pool"},
	{Name: "max_pool", File: "pool.cl", Entry: "pool", Options: "-DPOOL_MAX"},
	{Name: "max_pool_indices", File: "pool.cl", Entry: "pool", Options: "-DPOOL_MAX -DPOOL_INDICES"},
	{Name: "lp_pool", File: "pool.cl", Entry: "pool", Options: "-DPOOL_LP"},
	{Name: "avg_pool2d", File: "pool_rows.cl", Entry: "pool_rows"},
	{Name: "max_pool2d", File: "pool_rows.cl", Entry: "pool_rows", Options: "-DPOOL_MAX"},
	{Name: "max_pool2d_2x2", File: "pool_rows.cl", Entry: "pool_rows", Options: "-DPOOL_MAX -DWIN2"},
	{Name: "arg_max", File: "reduce_arg.cl", Entry: "arg_reduce"},
	{Name: "arg_min", File: "reduce_arg.cl", Entry: "arg_reduce", Options: "-DARG_MIN"},
	{Name: "layer_norm", File: "norm.cl", Entry: "layer_norm"},
	{Name: "layer_norm_stats", File: "norm.cl", Entry: "layer_norm", Options: "-DLN_STATS"},
	{Name: "softmax", File: "activation_softmax.cl", Entry: "softmax"},
	{Name: "log_softmax", File: "activation_softmax.cl", Entry: "softmax", Options: "-DLOG_SOFTMAX"},
	{Name: "softmax_rows", File: "activation_softmax_rows.cl", Entry: "softmax_rows"},
	{Name: "log_softmax_rows", File: "activation_softmax_rows.cl", Entry: "softmax_rows", Options: "-DLOG_SOFTMAX"},
	{Name: "topk", File: "reduce_topk.cl", Entry: "topk"},
	{Name: "topk_smallest", File: "reduce_topk.cl", Entry: "topk", Options: "-DSMALLEST"},
	{Name: "where", File: "compare_where.cl", Entry: "where_select"},
	{Name: "fused_gemm_tiled", File: "gemm_tiled.cl", Entry: "fused_gemm_tiled"},
	{Name: "conv2d_implicit_gemm", File: "gemm_tiled.cl", Entry: "fused_gemm_tiled", Options: "-DIM2COL"},
}

// reduceOps are the REDUCE_OP values of reduce.cl; each is the entries
// "reduce_" and "reduce_wg_" (one work group per output) + the value in
// lower case.
var reduceOps = []string{"L1", "L2", "LOG_SUM_EXP", "MAX", "MEAN", "MIN", "PROD", "SUM", "SUM_SQUARE"}

// opFiles are the element-wise files whose operation macros are entries:
// each `#define NAME(params)` line of eltwise_ops.clh with the file's macro
// parameters is the entry lower(NAME) of the file built with
// -D<option>=NAME. A new unary activation is one such line there.
var opFiles = []struct{ file, entry, option, params string }{
	{"eltwise_unary.cl", "eltwise_unary", "UNARY_OP", "x, a, b"},
	{"eltwise_binary.cl", "eltwise_binary", "BINARY_OP", "x, y"},
}

// OpMacros is the header holding the element-wise operation macros.
const OpMacros = "eltwise_ops.clh"

// kernelDeclRe matches a __kernel entry point and captures its name.
var kernelDeclRe = regexp.MustCompile(`__kernel\s+void\s+(\w+)\s*\(`)

// buildCatalogue assembles the entries of every .cl file: the operation
// macros of the element-wise files, the reductions, the variants, and one
// entry per other __kernel entry point; sorted by name. A name made twice
// panics: the embedded files are fixed at build time, so that is a
// programmer error TestCatalogue reports first.
func buildCatalogue() []Kernel {
	c := slices.Clone(variants)
	served := map[string]bool{"reduce.cl/reduce": true, "reduce.cl/reduce_wg": true}
	for _, k := range variants {
		served[k.File+"/"+k.Entry] = true
	}
	for _, op := range reduceOps {
		c = append(c, Kernel{Name: "reduce_" + strings.ToLower(op), File: "reduce.cl", Entry: "reduce", Options: "-DREDUCE_OP=" + op},
			Kernel{Name: "reduce_wg_" + strings.ToLower(op), File: "reduce.cl", Entry: "reduce_wg", Options: "-DREDUCE_OP=" + op})
	}
	for _, f := range opFiles {
		served[f.file+"/"+f.entry] = true
		for _, m := range opMacros(OpMacros, f.params) {
			c = append(c, Kernel{Name: strings.ToLower(m), File: f.file, Entry: f.entry, Options: "-D" + f.option + "=" + m})
		}
	}
	for _, file := range Files() {
		b, _ := sources.ReadFile(file) // Files lists only embedded files
		for _, m := range kernelDeclRe.FindAllStringSubmatch(string(b), -1) {
			if !served[file+"/"+m[1]] {
				c = append(c, Kernel{Name: m[1], File: file, Entry: m[1]})
			}
		}
	}
	sort.Slice(c, func(i, j int) bool { return c[i].Name < c[j].Name })
	for i := 1; i < len(c); i++ {
		if c[i].Name == c[i-1].Name {
			panic(fmt.Sprintf("kernels: catalogue name %q is made twice (%s and %s)", c[i].Name, c[i-1].File, c[i].File))
		}
	}
	return c
}

// opMacros returns the names of the `#define NAME(params)` lines of an
// embedded file (OpMacros), each once, in file order.
func opMacros(file, params string) []string {
	b, _ := sources.ReadFile(file)
	re := regexp.MustCompile(`(?m)^#define (\w+)\(` + regexp.QuoteMeta(params) + `\)`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// UnaryOps returns the catalogue names of the eltwise_unary.cl entries
// (one per UNARY_OP macro), sorted.
func UnaryOps() []string { return opNames("eltwise_unary.cl") }

// BinaryOps returns the catalogue names of the eltwise_binary.cl entries
// (one per BINARY_OP macro), sorted.
func BinaryOps() []string { return opNames("eltwise_binary.cl") }

func opNames(file string) []string {
	var out []string
	for _, k := range catalogue {
		if k.File == file {
			out = append(out, k.Name)
		}
	}
	return out
}

// Lookup returns the catalogue entry called name. An unknown name is an
// error wrapping ErrUnknown that lists the known names.
func Lookup(name string) (Kernel, error) {
	i := sort.Search(len(catalogue), func(i int) bool { return catalogue[i].Name >= name })
	if i < len(catalogue) && catalogue[i].Name == name {
		return catalogue[i], nil
	}
	return Kernel{}, fmt.Errorf("kernels: no kernel %q in the catalogue (known: %s): %w", name, strings.Join(Names(), ", "), ErrUnknown)
}

// MustLookup is Lookup for names fixed in the source of a caller; it panics
// on an unknown name, which is a programmer error.
func MustLookup(name string) Kernel {
	k, err := Lookup(name)
	if err != nil {
		panic(err)
	}
	return k
}

// All returns a copy of the catalogue, sorted by name.
func All() []Kernel { return slices.Clone(catalogue) }

// Names returns the catalogue's kernel names, sorted.
func Names() []string {
	names := make([]string, len(catalogue))
	for i, k := range catalogue {
		names[i] = k.Name
	}
	return names
}

// Files returns the names of the embedded .cl files, sorted.
func Files() []string {
	entries, err := fs.ReadDir(sources, ".")
	if err != nil {
		return nil // cannot happen: the embedded root always exists
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".cl") {
			out = append(out, e.Name())
		}
	}
	return out
}

// Source returns the OpenCL C source of an embedded file ("movement_copy.cl"), with
// each line `#include "name.clh"` replaced by the embedded header
// name.clh: OpenCL builds a program from strings, with no include path, so
// the source is complete here, and a header's text is part of the source
// the GPU device keys its program cache on. #line directives keep build
// log line numbers those of the file and the header. Headers include no
// other header. An unknown file or header is an error wrapping ErrUnknown.
func Source(file string) (string, error) {
	b, err := sources.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("kernels: no source file %q (files: %s): %w", file, strings.Join(Files(), ", "), ErrUnknown)
	}
	return Expand(file, string(b))
}

// Expand returns OpenCL C source src, known as file in build logs, with
// each line `#include "name.clh"` replaced by the embedded header as
// Source does: generated kernels (package gen) include the headers the
// catalogue's files do.
func Expand(file, src string) (string, error) {
	if !strings.Contains(src, "#include") {
		return src, nil
	}
	var out strings.Builder
	for i, line := range strings.SplitAfter(src, "\n") {
		m := includeRe.FindStringSubmatch(line)
		if m == nil {
			out.WriteString(line)
			continue
		}
		h, err := sources.ReadFile(m[1])
		if err != nil {
			return "", fmt.Errorf("kernels: %s:%d includes %q, which is not an embedded header: %w", file, i+1, m[1], ErrUnknown)
		}
		fmt.Fprintf(&out, "#line 1 %q\n%s", m[1], h)
		if len(h) > 0 && h[len(h)-1] != '\n' {
			out.WriteByte('\n')
		}
		fmt.Fprintf(&out, "#line %d %q\n", i+2, file)
	}
	return out.String(), nil
}

// Source returns the OpenCL C source of the kernel: its file's, or the
// generated source.
func (k Kernel) Source() (string, error) {
	if k.Generated != "" {
		return k.Generated, nil
	}
	return Source(k.File)
}

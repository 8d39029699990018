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

	"github.com/clinfer/clinfer/fusion"
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
}

// catalogue lists every kernel, sorted by name. Keep it in step with the
// .cl files: TestCatalogue checks that every entry exists and every file is
// used. Entries that one file serves through a -D option are generated from
// the op lists below; the GPU device adds type defines (-DT=float, ...) to
// an entry's options when it builds it.
var catalogue = buildCatalogue()

// UnaryOps maps the catalogue name of each eltwise_unary.cl entry to its
// UNARY_OP macro.
var UnaryOps = map[string]string{
	"abs": "ABS", "acos": "ACOS", "acosh": "ACOSH", "asin": "ASIN", "asinh": "ASINH", "atan": "ATAN",
	"atanh": "ATANH", "cosh": "COSH", "sinh": "SINH", "tan": "TAN", "celu": "CELU", "ceil": "CEIL", "clip": "CLIP", "cos": "COS",
	"elu": "ELU", "erf": "ERF", "exp": "EXP", "floor": "FLOOR", "gelu": "GELU",
	"gelu_tanh": "GELU_TANH", "hard_sigmoid": "HARD_SIGMOID", "hard_swish": "HARD_SWISH",
	"identity": "IDENTITY", "is_inf": "IS_INF", "is_nan": "IS_NAN", "shrink": "SHRINK", "leaky_relu": "LEAKY_RELU", "log": "LOG", "mish": "MISH",
	"neg": "NEG", "not": "NOT", "reciprocal": "RECIPROCAL", "relu": "RELU", "round": "ROUND",
	"selu": "SELU", "sigmoid": "SIGMOID", "sign": "SIGN", "sin": "SIN", "softplus": "SOFTPLUS",
	"softsign": "SOFTSIGN", "sqrt": "SQRT", "tanh": "TANH", "thresholded_relu": "THRESHOLDED_RELU",
}

// BinaryOps maps the catalogue name of each eltwise_binary.cl entry to its
// BINARY_OP macro.
var BinaryOps = map[string]string{
	"add": "ADD", "and": "AND", "div": "DIV", "equal": "EQUAL", "greater": "GREATER",
	"greater_equal": "GREATER_EQUAL", "less": "LESS", "less_equal": "LESS_EQUAL",
	"max": "MAX", "min": "MIN", "mod": "MOD", "mul": "MUL", "or": "OR", "pow": "POW",
	"prelu": "PRELU", "sub": "SUB", "xor": "XOR",
}

// buildCatalogue assembles the fixed entries and the generated unary,
// binary and reduce entries, sorted by name.
func buildCatalogue() []Kernel {
	c := []Kernel{
		{Name: "avg_pool", File: "pool.cl", Entry: "pool"},
		{Name: "batch_norm", File: "norm.cl", Entry: "batch_norm"},
		{Name: "cast", File: "cast.cl", Entry: "cast"},
		{Name: "conv2d", File: "conv.cl", Entry: "conv2d"},
		{Name: "conv_transpose2d", File: "conv_transpose.cl", Entry: "conv_transpose2d"},
		{Name: "conv3d", File: "conv3d.cl", Entry: "conv3d"},
		{Name: "conv_transpose3d", File: "conv3d.cl", Entry: "conv_transpose3d"},
		{Name: "copy_bytes", File: "copy.cl", Entry: "copy_bytes"},
		{Name: "copy_words", File: "copy.cl", Entry: "copy_words"},
		{Name: "cumsum", File: "cumsum.cl", Entry: "cumsum"},
		{Name: "fully_connected", File: "gemm_fully_connected.cl", Entry: "fully_connected"},
		{Name: "fused_conv2d", File: "conv_fused.cl", Entry: "fused_conv2d"},
		{Name: "fused_conv2d_blocked", File: "conv_blocked.cl", Entry: "fused_conv2d_blocked"},
		{Name: "fused_deconv2d", File: "conv_transpose_blocked.cl", Entry: "fused_deconv2d"},
		{Name: "fused_dwconv2d", File: "conv_depthwise.cl", Entry: "fused_dwconv2d"},
		{Name: "fused_gemm", File: "gemm_fused.cl", Entry: "fused_gemm"},
		{Name: "arg_max", File: "arg_reduce.cl", Entry: "arg_reduce"},
		{Name: "arg_min", File: "arg_reduce.cl", Entry: "arg_reduce", Options: "-DARG_MIN"},
		{Name: "gather", File: "gather.cl", Entry: "gather"},
		{Name: "gather_elements", File: "gather_elements.cl", Entry: "gather_elements"},
		{Name: "gather_nd", File: "gather_nd.cl", Entry: "gather_nd"},
		{Name: "hardmax", File: "hardmax.cl", Entry: "hardmax"},
		{Name: "instance_norm", File: "norm.cl", Entry: "instance_norm"},
		{Name: "layer_norm", File: "norm.cl", Entry: "layer_norm"},
		{Name: "layer_norm_stats", File: "norm.cl", Entry: "layer_norm", Options: "-DLN_STATS"},
		{Name: "log_softmax", File: "softmax.cl", Entry: "softmax", Options: "-DLOG_SOFTMAX"},
		{Name: "matmul", File: "matmul.cl", Entry: "matmul"},
		{Name: "max_pool", File: "pool.cl", Entry: "pool", Options: "-DPOOL_MAX"},
		{Name: "max_pool_indices", File: "pool.cl", Entry: "pool", Options: "-DPOOL_MAX -DPOOL_INDICES"},
		{Name: "onehot", File: "onehot.cl", Entry: "onehot"},
		{Name: "pad", File: "pad.cl", Entry: "pad"},
		{Name: "pow_mixed", File: "pow.cl", Entry: "pow_mixed"},
		{Name: "resize", File: "resize.cl", Entry: "resize"},
		{Name: "resize_nearest", File: "resize.cl", Entry: "resize_nearest"},
		{Name: "scatter_elements", File: "scatter.cl", Entry: "scatter_elements"},
		{Name: "scatter_nd", File: "scatter.cl", Entry: "scatter_nd"},
		{Name: "sgemm", File: "sgemm.cl", Entry: "sgemm"},
		{Name: "softmax", File: "softmax.cl", Entry: "softmax"},
		{Name: "topk", File: "topk.cl", Entry: "topk"},
		{Name: "topk_smallest", File: "topk.cl", Entry: "topk", Options: "-DSMALLEST"},
		{Name: "trilu", File: "trilu.cl", Entry: "trilu"},
		{Name: "strided_copy", File: "strided_copy.cl", Entry: "strided_copy"},
		{Name: "where", File: "where.cl", Entry: "where_select"},
	}
	for name, op := range UnaryOps {
		c = append(c, Kernel{Name: name, File: "eltwise_unary.cl", Entry: "eltwise_unary", Options: "-DUNARY_OP=" + op})
	}
	for name, op := range BinaryOps {
		c = append(c, Kernel{Name: name, File: "eltwise_binary.cl", Entry: "eltwise_binary", Options: "-DBINARY_OP=" + op})
	}
	for _, op := range []string{"L1", "L2", "LOG_SUM_EXP", "MAX", "MEAN", "MIN", "PROD", "SUM", "SUM_SQUARE"} {
		c = append(c, Kernel{Name: "reduce_" + strings.ToLower(op), File: "reduce.cl", Entry: "reduce", Options: "-DREDUCE_OP=" + op})
	}
	// Kernel fusions are declared once, in fusion.KernelFusions: the
	// kernel is the __kernel of the same name in the declared file.
	for _, f := range fusion.KernelFusions() {
		c = append(c, Kernel{Name: f.Kernel, File: f.File, Entry: f.Kernel})
	}
	sort.Slice(c, func(i, j int) bool { return c[i].Name < c[j].Name })
	return c
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

// Source returns the OpenCL C source of an embedded file ("copy.cl"), with
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
	src := string(b)
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

// Source returns the OpenCL C source of the kernel's file.
func (k Kernel) Source() (string, error) { return Source(k.File) }

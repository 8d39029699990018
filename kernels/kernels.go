package kernels

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
)

// sources holds every OpenCL C file of the package.
//
//go:embed *.cl
var sources embed.FS

// ErrUnknown is wrapped by lookups of a kernel name or file the catalogue
// does not have.
var ErrUnknown = errors.New("kernels: unknown kernel")

// Kernel is one catalogue entry: an OpenCL kernel entry point in a .cl file,
// built with options. Two entries may share a file and entry point and differ
// in their options; each (File, Options) pair is a separate program.
type Kernel struct {
	// Name is the catalogue name the GPU device looks the kernel up by
	// ("relu_f32").
	Name string
	// File is the .cl file that holds the kernel ("eltwise_unary.cl").
	File string
	// Entry is the __kernel function to launch ("eltwise_unary_f32").
	Entry string
	// Options are the OpenCL build options ("-DUNARY_OP=RELU").
	Options string
}

// catalogue lists every kernel, sorted by name. Keep it in step with the
// .cl files: TestCatalogue checks that every entry exists and every file is
// used.
var catalogue = []Kernel{
	{Name: "add_f32", File: "eltwise_binary.cl", Entry: "eltwise_binary_f32", Options: "-DBINARY_OP=ADD"},
	{Name: "copy_bytes", File: "copy.cl", Entry: "copy_bytes"},
	{Name: "copy_words", File: "copy.cl", Entry: "copy_words"},
	{Name: "mul_f32", File: "eltwise_binary.cl", Entry: "eltwise_binary_f32", Options: "-DBINARY_OP=MUL"},
	{Name: "relu_f32", File: "eltwise_unary.cl", Entry: "eltwise_unary_f32", Options: "-DUNARY_OP=RELU"},
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

// Source returns the OpenCL C source of an embedded file ("copy.cl"). An
// unknown file is an error wrapping ErrUnknown.
func Source(file string) (string, error) {
	b, err := sources.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("kernels: no source file %q (files: %s): %w", file, strings.Join(Files(), ", "), ErrUnknown)
	}
	return string(b), nil
}

// Source returns the OpenCL C source of the kernel's file.
func (k Kernel) Source() (string, error) { return Source(k.File) }

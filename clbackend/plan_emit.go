package clbackend

import (
	"fmt"
	"slices"
	"strings"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/kernels"
	"github.com/clinfer/clinfer/plugin/driver"
)

// The plan's launches: a catalogue kernel's (emit, emitND) or a generated
// one's (emitKernel), built through the program cache.

// optionRecorder, when set (tests), sees the catalogue entry and build
// options of every program a plan asks for.
var optionRecorder func(k kernels.Kernel, options string)

// argBytes is the size of the distinct buffers among args.
func (b *builder) argBytes(args []any) int64 {
	seen := map[int]bool{}
	var n int64
	for _, a := range args {
		if s, ok := a.(slotArg); ok {
			if r := b.val(int(s)).root; !seen[r] {
				seen[r] = true
				n += int64(b.val(r).bytes)
			}
		}
	}
	return n
}

// emit appends a launch of catalogue kernel name built with the extra
// defines, covering n work items with args: a 1-D NDRange of n rounded up
// to workGroupMultiple, the work-group size left to the driver (kernels
// with this contract bounds-check the extra items).
func (b *builder) emit(node *graph.Node, name, defines string, n int64, args ...any) error {
	global := []int{int((n + workGroupMultiple - 1) / workGroupMultiple * workGroupMultiple)}
	if n == 0 {
		global[0] = 0
	}
	return b.emitND(node, name, defines, global, nil, args...)
}

// emitND appends a launch of catalogue kernel name built with the extra
// defines over the NDRange global (1 to 3 dimensions) with work-group size
// local (nil: the driver picks, on a CPU device cpuGroup's size; otherwise
// one size per dimension that divides the global size, as OpenCL 1.2
// requires). The kernel's
// work-size contract says which geometry it needs. An empty range (a zero
// dimension) records a launch that is skipped.
func (b *builder) emitND(node *graph.Node, name, defines string, global, local []int, args ...any) error {
	k, err := kernels.Lookup(name)
	if err != nil {
		return driver.Errorf(driver.ErrUnsupported, "gpu: node %q: %w", node.Name, err)
	}
	return b.emitKernel(node, k, defines, global, local, args...)
}

// emitKernel appends a launch of k (a catalogue entry, or a kernel package
// gen generated: kernels.Kernel.Generated) built with the extra defines
// over the NDRange global with work group local as emitND says, after
// checking args against the signature in its source.
func (b *builder) emitKernel(node *graph.Node, k kernels.Kernel, defines string, global, local []int, args ...any) error {
	if len(global) < 1 || len(global) > 3 || (local != nil && len(local) != len(global)) {
		return driver.Errorf(driver.ErrInvalidArgument, "gpu: node %q: kernel %s: NDRange %v with work-group size %v (want 1 to 3 dimensions, the same number for both)", node.Name, k.Name, global, local)
	}
	n := int64(1)
	for i, g := range global {
		if g < 0 || (local != nil && (local[i] <= 0 || g%local[i] != 0)) {
			return driver.Errorf(driver.ErrInvalidArgument, "gpu: node %q: kernel %s: NDRange %v is not a multiple of the work-group size %v", node.Name, k.Name, global, local)
		}
		n *= int64(g)
	}
	// The arguments against the kernel's signature, declared once in its
	// .cl file.
	check := make([]any, len(args))
	for i, a := range args {
		check[i] = a
		if _, ok := a.(slotArg); ok {
			check[i] = kernels.Buffer{}
		}
	}
	if err := kernels.CheckArgs(k, defines, check); err != nil {
		return driver.Errorf(driver.ErrInvalidArgument, "gpu: node %q: %w", node.Name, err)
	}
	prog, opts, err := b.buildKernel(node, k, defines)
	if err != nil {
		return err
	}
	b.pl.progs = append(b.pl.progs, prog)
	auto := false
	if local == nil && !b.profile().gpu {
		// A CPU device compiles a kernel again for every work-group size
		// it runs with; see cpuGroup (and shareCPUGroups). A group the
		// kernel cannot take leaves the pick to the driver.
		if g := cpuGroup(global, b.profile()); g != nil && b.checkLaunchable(prog.val, k.Entry, g) == nil {
			local, auto = g, true
		}
	} else if err := b.checkLaunchable(prog.val, k.Entry, local); err != nil {
		return fmt.Errorf("gpu: node %q: %w", node.Name, err)
	}
	l := launch{node: node, kernel: k, options: opts, prog: prog.val, args: args, n: n,
		global: slices.Clone(global), local: slices.Clone(local), bytes: b.argBytes(args), cpuGroup: auto}
	b.pl.launches = append(b.pl.launches, l)
	b.ctl(instr{op: opLaunch, launch: len(b.pl.launches) - 1, loop: -1, cond: -1})
	return nil
}

// buildOptions are added to every catalogue entry's options: the kernels
// are OpenCL C 1.2.
const buildOptions = "-cl-std=CL1.2"

// flushOption is added to the options of the f32/f16 multiply-accumulate
// kernels (flushesDenormals): denormal floats may be flushed to zero
// there (as GPUs' fast paths do), and POCL then runs the kernel with the
// CPU's flush-to-zero and denormals-are-zero modes, without which each
// product with a denormal takes a microcode assist of ~100 cycles.
// PP-OCRv4 rec's squeeze-excitation weights are 22% denormal (12970 of
// 480x120): its gate FCs took 157 and 660 us, 8.5 and 26 us flushed
// (pthread-skylake-avx512). Every other kernel keeps denormals: a
// comparison, Sign, Where, a division or an f64 kernel flushing them
// would disagree with the CPU device (1e-40 > 0 is false flushed).
const flushOption = "-cl-denorms-are-zero"

// flushesDenormals reports whether kernel file f, built with defines, is
// a multiply-accumulate kernel that takes flushOption: the convolutions,
// the matrix products (not the determinant) and the kernel fusions
// around them, in f32 or f16.
func flushesDenormals(f, defines string) bool {
	if strings.Contains(defines, "DOUBLE") || strings.Contains(defines, "=double") {
		return false
	}
	switch {
	case strings.HasPrefix(f, "conv"), strings.HasPrefix(f, "kernelfusion_"):
		return true
	case strings.HasPrefix(f, "gemm_"):
		return f != "gemm_det.cl"
	}
	return false
}

// buildKernel returns k's program built with the extra defines (from the
// program cache: a reference the caller releases or keeps in the plan)
// and its full build options.
func (b *builder) buildKernel(node *graph.Node, k kernels.Kernel, defines string) (*shared[*cl.Program], string, error) {
	src, err := k.Source()
	if err != nil {
		return nil, "", fmt.Errorf("gpu: node %q: %w", node.Name, err)
	}
	quiet := " -w" // no compiler warnings on the user's terminal (POCL prints a count)
	if b.c.compilerLog {
		quiet = ""
	}
	flush := ""
	if flushesDenormals(k.File, k.Options+" "+defines) {
		flush = " " + flushOption
	}
	opts := strings.Join(strings.Fields(buildOptions+flush+" "+k.Options+" "+defines+quiet), " ")
	if optionRecorder != nil {
		optionRecorder(k, opts)
	}
	prog, err := b.p.cache.program(b.c.ctx, b.c.run, k.File, src, opts, diskCache{b.c.cacheDir, b.c.binaries}, b.c.compilerLog)
	if err != nil {
		return nil, "", fmt.Errorf("gpu: node %q: %w", node.Name, err)
	}
	return prog, opts, nil
}

// groupLimit is the largest work group a launch of catalogue entry name
// built with defines may have: the device's CL_DEVICE_MAX_WORK_GROUP_SIZE
// and the kernel's own CL_KERNEL_WORK_GROUP_SIZE, which a kernel with
// barriers and local arrays may have below the device's (a GPU may refuse
// 256 items for it). The lowerings that size a group to their rows
// (softmax_rows, the gemm_rows and dense_chain fusions) stay within it.
func (b *builder) groupLimit(node *graph.Node, name, defines string) (int, error) {
	limit := max(1, b.profile().maxWorkGroup)
	k, err := kernels.Lookup(name)
	if err != nil {
		return 0, driver.Errorf(driver.ErrUnsupported, "gpu: node %q: %w", node.Name, err)
	}
	prog, _, err := b.buildKernel(node, k, defines)
	if err != nil {
		return 0, err
	}
	defer func() { _ = prog.release() }()
	kern, err := prog.val.CreateKernel(k.Entry)
	if err != nil {
		return 0, driver.Errorf(driver.ErrDevice, "gpu: node %q: kernel %s on %s: %w", node.Name, k.Entry, b.c.dev.name(), err)
	}
	defer kern.Close()
	if l, err := kern.WorkGroupSize(b.c.run.cl); err == nil && l > 0 {
		limit = min(limit, l)
	}
	if kernelGroupLimit > 0 {
		limit = min(limit, kernelGroupLimit)
	}
	return limit, nil
}

// Package clcheck builds OpenCL C for CPU targets the machine may not be
// able to run, with the system's clang: the build-only half of the
// kernels' portability matrix. POCL's pthread device compiles for the CPU
// it runs on (Debian's POCL 3.1 ignores POCL_LLVM_CPU_NAME), so the
// kernels are built here with clang's own OpenCL C headers for x86-64
// (SSE2 only), haswell (AVX2) and skylake-avx512, as LLVM IR, with
// -Werror: an option set that changes the vector call ABI on a target
// (a float16 argument without AVX-512), or warns in any other way, fails.
// The tests of packages kernels and clbackend drive it; the running half
// of the matrix is POCL and oclgrind.
package clcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/clinfer/clinfer/kernels"
)

// Target is one LLVM CPU target of the matrix and the variant limits a
// POCL device on it reports (its preferred float vector width).
type Target struct {
	// CPU is the LLVM CPU name (-march).
	CPU string
	// Limits are what the GPU device's planner allows on it.
	Limits kernels.Limits
}

// Targets are the CPU targets every option set must build for, each with
// wider vector registers than the one before (SSE2, AVX2, AVX-512). What
// builds without a diagnostic for one builds for the next: the vector
// call-ABI warning is the only diagnostic that depends on the target, and
// wider registers only remove it. So a target needs only the programs the
// one before it could not plan (New).
var Targets = []Target{
	{CPU: "x86-64", Limits: kernels.Limits{VectorWidth: 4}},
	{CPU: "haswell", Limits: kernels.Limits{VectorWidth: 8}},
	{CPU: "skylake-avx512", Limits: kernels.Limits{VectorWidth: 16}},
}

// New reports whether a program of float vector width vw (its -DVW, 0 for
// none) is new on Targets[i]: the target before it refuses that width, so
// it was not built there.
func New(i, vw int) bool {
	return i == 0 || Targets[i-1].Limits.VectorFits(vw) != ""
}

// EnvClang names the environment variable that picks the clang binary.
const EnvClang = "CLINFER_CLANG"

// ErrNoClang is wrapped by Clang's error when no clang is installed.
var ErrNoClang = errors.New("clcheck: no clang with OpenCL C support")

// Clang returns the clang to build with: $CLINFER_CLANG, else clang-15
// (the LLVM of Debian 12's POCL), else clang.
func Clang() (string, error) {
	if c := os.Getenv(EnvClang); c != "" {
		return exec.LookPath(c)
	}
	for _, c := range []string{"clang-15", "clang"} {
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("clcheck: neither clang-15 nor clang is on PATH (apt-get install clang-15; make deps installs it): %w", ErrNoClang)
}

// Build compiles OpenCL C source src with options for target cpu as LLVM
// IR and fails, with clang's output, on any diagnostic. label names the
// source in the error.
func Build(ctx context.Context, clang, cpu, label, src, options string) error {
	args := []string{"-x", "cl", "-cl-std=CL1.2", "-Xclang", "-finclude-default-header",
		"-target", "x86_64-unknown-linux-gnu", "-march=" + cpu, "-Werror"}
	args = append(args, strings.Fields(options)...)
	// -O0: the diagnostics come from the front end and its IR generation
	// (the ABI warning included); LLVM's optimiser adds none and took two
	// thirds of the time.
	args = append(args, "-O0", "-S", "-emit-llvm", "-o", os.DevNull, "-")
	cmd := exec.CommandContext(ctx, clang, args...)
	cmd.Stdin = strings.NewReader(src)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil && out.Len() > 0 {
		err = errors.New("clang printed diagnostics")
	}
	if err != nil {
		return fmt.Errorf("clcheck: %s with %q for %s: %w\n%s", label, options, cpu, err, out.String())
	}
	return nil
}

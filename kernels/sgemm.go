package kernels

import "fmt"

// SGEMMTiling is the blocking of the "sgemm" kernel (gemm_sgemm.cl): a work group
// computes a TileM x TileN tile of C, stepping through K by TileK, and each
// work item a WorkM x WorkN block of it, its columns in runs of Vec held
// in vector registers (Vec 0 means 1).
type SGEMMTiling struct {
	TileM, TileN, TileK int
	WorkM, WorkN        int
	Vec                 int
}

func (t SGEMMTiling) vec() int {
	if t.Vec == 0 {
		return 1
	}
	return t.Vec
}

// DefaultSGEMMTiling is the blocking the GPU device and the benchmarks
// use: 128x128 tiles, K steps of 16, 8x8 per work item in float8 columns
// (16x16 work groups); the fastest of the tilings tried on POCL (see
// bench/sgemm_test.go). gemm_sgemm.cl's own defaults (no options) are 64x64x16
// with 4x4 scalar blocks.
var DefaultSGEMMTiling = SGEMMTiling{TileM: 128, TileN: 128, TileK: 16, WorkM: 8, WorkN: 8, Vec: 8}

// Validate reports whether the tiling satisfies gemm_sgemm.cl's contract.
func (t SGEMMTiling) Validate() error {
	if t.TileM <= 0 || t.TileN <= 0 || t.TileK <= 0 || t.WorkM <= 0 || t.WorkN <= 0 {
		return fmt.Errorf("kernels: sgemm tiling %+v: sizes must be positive", t)
	}
	if v := t.vec(); (v != 1 && v != 2 && v != 4 && v != 8) || t.WorkN%v != 0 {
		return fmt.Errorf("kernels: sgemm tiling %+v: Vec must be 1, 2, 4 or 8 and divide WorkN", t)
	}
	if t.TileM%t.WorkM != 0 || t.TileN%t.WorkN != 0 {
		return fmt.Errorf("kernels: sgemm tiling %+v: the tile must be a multiple of the work per item", t)
	}
	ls := (t.TileM / t.WorkM) * (t.TileN / t.WorkN)
	if (t.TileK*t.TileM)%ls != 0 || (t.TileK*t.TileN)%ls != 0 {
		return fmt.Errorf("kernels: sgemm tiling %+v: the work-group size %d must divide TileK*TileM and TileK*TileN", t, ls)
	}
	return nil
}

// Fits reports why a device with limits lim cannot launch the tiling
// ("" when it can): its vectors or its work group are too large.
func (t SGEMMTiling) Fits(lim Limits) string {
	if why := lim.VectorFits(t.vec()); why != "" {
		return why
	}
	l := t.LocalSize()
	return lim.WorkGroupFits(l[0] * l[1])
}

// Options returns the build options that select the tiling, to append to
// the catalogue entry's options.
func (t SGEMMTiling) Options() string {
	return fmt.Sprintf("-DTS_M=%d -DTS_N=%d -DTS_K=%d -DWPT_M=%d -DWPT_N=%d -DVW=%d", t.TileM, t.TileN, t.TileK, t.WorkM, t.WorkN, t.vec())
}

// LocalSize returns the 2-D work-group size the kernel requires.
func (t SGEMMTiling) LocalSize() []int {
	return []int{t.TileN / t.WorkN, t.TileM / t.WorkM}
}

// GlobalSize returns the 2-D NDRange for an M x N result.
func (t SGEMMTiling) GlobalSize(m, n int) []int {
	tilesN := (n + t.TileN - 1) / t.TileN
	tilesM := (m + t.TileM - 1) / t.TileM
	return []int{tilesN * (t.TileN / t.WorkN), tilesM * (t.TileM / t.WorkM)}
}

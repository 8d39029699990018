package clbackend

import "slices"

// Work-group sizes on CPU devices: the group a launch gets when its
// kernel lets the driver pick one, and the sharing of groups among the
// launches of one kernel (POCL compiles a work-group function per local
// size at a kernel's first launch).

// cpuGroup is the work-group size a launch whose kernel lets the driver
// pick the group gets on a CPU device (nil for an empty range). POCL picks
// a group from the grid and compiles the kernel again for each group size
// it launches with (a work-group function per local size, at the first
// launch): a network whose layers have many sizes, like IS-Net's 1024 to
// 32 pixel stages, compiled one resize, Winograd transform or
// element-wise kernel 25 times over (IS-Net medium with an empty POCL
// cache: 24 s of warm-up builds, 12 s with these groups). Fixed powers of two share one function across every
// grid they divide: from the first dimension on, the largest power of two
// that divides it, within CL_DEVICE_MAX_WORK_GROUP_SIZE and
// cpuGroupItems, and small enough to leave cpuGroupsPerUnit groups per
// compute unit.
func cpuGroup(global []int, p deviceProfile) []int {
	total := 1
	for _, g := range global {
		total *= g
	}
	if total == 0 {
		return nil
	}
	budget := cpuGroupBudget(total, p)
	local := make([]int, len(global))
	for i, g := range global {
		l := 1
		for l*2 <= budget && g%(l*2) == 0 {
			l *= 2
		}
		local[i] = l
		budget /= l
	}
	return local
}

// cpuGroupBudget is the most items cpuGroup gives a group of a grid of
// total items.
func cpuGroupBudget(total int, p deviceProfile) int {
	return min(max(1, p.maxWorkGroup), cpuGroupItems, floorPow2(max(1, total/(cpuGroupsPerUnit*max(1, p.computeUnits)))))
}

// shareCPUGroups gives the launches of one kernel (program and entry) on
// a CPU device fewer work-group sizes: each launch whose group cpuGroup
// chose takes the largest group of the kernel's launches that divides its
// grid within its budget (shareBudget; its own at worst), the most used among equals. cpuGroup alone gives a kernel one group per shape of grid its
// first dimensions take (IS-Net medium: pool_rows 7, resize_linear2d 6,
// strided_copy 4, each Winograd transform 2 per program), and POCL
// compiles a work-group function for each of them at the first launch.
func shareCPUGroups(launches []launch, p deviceProfile) {
	type kernelKey struct {
		prog  any
		entry string
	}
	type cand struct {
		local []int
		n     int
		fits  int
	}
	byKernel := map[kernelKey][]cand{}
	for _, l := range launches {
		if !l.cpuGroup {
			continue
		}
		k := kernelKey{l.prog, l.kernel.Entry}
		cs := byKernel[k]
		i := slices.IndexFunc(cs, func(c cand) bool { return slices.Equal(c.local, l.local) })
		if i < 0 {
			cs = append(cs, cand{local: l.local})
			i = len(cs) - 1
		}
		cs[i].n++
		byKernel[k] = cs
	}
	for _, l := range launches {
		// How many of the kernel's launches each group fits: of two
		// groups of one size, the one more launches can take (Winograd's
		// transforms: 64x4 fits every grid of 64 tiles and up, 256x1 only
		// multiples of 256, and each is a work-group compilation).
		if !l.cpuGroup {
			continue
		}
		cs := byKernel[kernelKey{l.prog, l.kernel.Entry}]
		for i := range cs {
			if fits(cs[i].local, l.global, shareBudget(items(l.global), p)) {
				cs[i].fits++
			}
		}
	}
	for k, cs := range byKernel {
		// The larger group first (a launch never gets fewer items than
		// cpuGroup gave it: no more groups to run), then the one that
		// fits the most launches, then the most used, then the order of
		// the dimensions, so that the choice is deterministic.
		slices.SortStableFunc(cs, func(a, b cand) int {
			if pa, pb := items(a.local), items(b.local); pa != pb {
				return pb - pa
			}
			if a.fits != b.fits {
				return b.fits - a.fits
			}
			if a.n != b.n {
				return b.n - a.n
			}
			return slices.Compare(a.local, b.local)
		})
		byKernel[k] = cs
	}
	for i := range launches {
		l := &launches[i]
		if !l.cpuGroup {
			continue
		}
		total := items(l.global)
		for _, c := range byKernel[kernelKey{l.prog, l.kernel.Entry}] {
			if fits(c.local, l.global, shareBudget(total, p)) {
				l.local = slices.Clone(c.local)
				break
			}
		}
	}
}

// shareBudget is the most items shareCPUGroups gives a launch of total
// items from another launch's group: its own budget, except that a grid
// so small that its budget is under cpuGroupItems may take a group of up
// to one per compute unit. A few hundred items of pooling or copying run
// in microseconds in any grouping, and a group of their own costs a
// work-group compilation (IS-Net medium's 32x32 and 16x16 MaxPools:
// pool_rows compiled for 3 groups, 2x32, 2x64 and 2x128, one group now).
func shareBudget(total int, p deviceProfile) int {
	perUnit := min(max(1, p.maxWorkGroup), cpuGroupItems, floorPow2(max(1, total/max(1, p.computeUnits))))
	return max(cpuGroupBudget(total, p), perUnit)
}

// fits reports whether group local divides every dimension of grid
// global and has at most budget items.
func fits(local, global []int, budget int) bool {
	if len(local) != len(global) || items(local) > budget {
		return false
	}
	for i, g := range global {
		if g%local[i] != 0 {
			return false
		}
	}
	return true
}

// items is the product of dims.
func items(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// cpuGroupItems caps cpuGroup's groups, and cpuGroupsPerUnit is the
// fewest groups per compute unit it leaves a grid that has the items: a
// CPU device shares its cores with other work, and a core that falls
// behind on one large group holds the whole launch up.
const (
	cpuGroupItems    = 256
	cpuGroupsPerUnit = 4
)

//go:build cgo && !noopencl

package cl

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// companionPair returns a POCL pthread device and its in-thread companion
// (the basic device), or skips.
func companionPair(t *testing.T) (*Device, *Device) {
	t.Helper()
	ps, err := GetPlatforms()
	require.NoError(t, err, "no OpenCL platform: `apt-get install pocl-opencl-icd ocl-icd-opencl-dev` (make deps)")
	for _, p := range ps {
		ds, err := p.GetDevices(DeviceTypeAll)
		if err != nil {
			continue
		}
		for _, d := range ds {
			if c := d.InThreadCompanion(); c != nil {
				return d, c
			}
		}
	}
	t.Skip("no POCL pthread device with a basic device beside it: `make deps` installs pocl-opencl-icd")
	return nil, nil
}

// TestBasicQueuesSerialize: launches of one kernel (programs of one
// source: one POCL kernel hash) with one local size, on grids ever wider
// and every other one at a global offset, from several threads on the
// basic device's queues. POCL 3.1 then keeps several work-group-function
// entries with that hash and local size (one per grid width record and
// offset kind), and without basicMu a thread's completion drops the count
// of the entry another thread's launch holds, whose own completion then
// aborts the process (pocl_release_dlhandle_cache: `found->ref_count >
// 0'; 6 runs of 6 without the lock); with it every launch runs and adds
// its 1. The pthread device's queues take no lock.
func TestBasicQueuesSerialize(t *testing.T) {
	pt, basic := companionPair(t)
	ctx, err := CreateContext([]*Device{pt, basic})
	require.NoError(t, err)
	defer func() { assert.NoError(t, ctx.Close()) }()
	pq, err := ctx.CreateCommandQueue(pt, 0)
	require.NoError(t, err)
	assert.False(t, pq.serial, "the pthread device's queue")
	require.NoError(t, pq.Close())

	const src = `__kernel void serial_inc(__global int *a, int n) { int i = get_global_id(0); if (i < n) a[i] += 1; }`
	const workers, rounds, local = 4, 400, 16
	const wide = (workers*rounds + 3) * local
	var wg sync.WaitGroup
	var widths atomic.Int32
	var built sync.WaitGroup
	built.Add(workers)
	start := make(chan struct{})
	go func() { built.Wait(); close(start) }()
	counts := make([][]int32, workers)
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = func() error {
				ready := false
				defer func() {
					if !ready {
						built.Done()
					}
				}()
				q, err := ctx.CreateCommandQueue(basic, 0)
				if err != nil {
					return err
				}
				defer q.Close()
				if !q.serial {
					return fmt.Errorf("the basic device's queue does not serialize")
				}
				p, err := ctx.CreateProgramWithSource([]string{src})
				if err != nil {
					return err
				}
				defer p.Close()
				if err := p.BuildProgram([]*Device{basic}, ""); err != nil {
					return err
				}
				k, err := p.CreateKernel("serial_inc")
				if err != nil {
					return err
				}
				defer k.Close()
				buf, err := ctx.CreateEmptyBuffer(MemReadWrite, wide*4)
				if err != nil {
					return err
				}
				defer buf.Close()
				fill, err := EnqueueFill(q, buf, int32(0), 0, wide*4, nil)
				if err != nil {
					return err
				}
				if err := fill.Close(); err != nil {
					return err
				}
				ready = true
				built.Done()
				<-start // launch together
				for r := range rounds {
					n := int(widths.Add(1)+1) * local
					var off []int
					if r%2 == 1 {
						off = []int{local} // a work-group function of its own (a global offset)
					}
					if err := k.SetArgs(buf, int32(n)); err != nil {
						return err
					}
					if err := q.EnqueueNDRangeKernelNoEvent(k, off, []int{n}, []int{local}); err != nil {
						return err
					}
				}
				counts[w] = make([]int32, wide)
				read, err := EnqueueReadSlice(q, buf, true, 0, counts[w], nil)
				if err != nil {
					return err
				}
				return read.Close()
			}()
		}()
	}
	wg.Wait()
	for w := range workers {
		require.NoError(t, errs[w], "worker %d", w)
		assert.Equal(t, int32(rounds), counts[w][local], "worker %d: every launch ran", w)
		assert.LessOrEqual(t, counts[w][wide-1], int32(1), "worker %d: no launch ran past its grid", w)
	}
}

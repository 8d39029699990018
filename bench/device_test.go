package bench

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/clinfer/clinfer/clbackend/cl"
)

// copySizes are the transfer sizes BenchmarkCopy measures, in MiB.
var copySizes = []int{1, 64}

// deviceEnv is the benchmark device with a context and an in-order queue.
type deviceEnv struct {
	dev *cl.Device
	ctx *cl.Context
	q   *cl.CommandQueue
	// staged is a mapped staging buffer, where a benchmark made one
	// (stageBuffer).
	staged *cl.MappedMemObject
}

func newDeviceEnv(b *testing.B) *deviceEnv {
	b.Helper()
	dev, err := benchDevice()
	if err != nil {
		b.Fatal(err)
	}
	e := &deviceEnv{dev: dev}
	if e.ctx, err = cl.CreateContext([]*cl.Device{dev}); err != nil {
		b.Fatal(err)
	}
	if e.q, err = e.ctx.CreateCommandQueue(dev, 0); err != nil {
		_ = e.ctx.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := errors.Join(e.q.Close(), e.ctx.Close()); err != nil {
			b.Error(err)
		}
	})
	return e
}

// medianOf runs f once to warm up, then once per benchmark iteration, and
// returns the median duration.
func medianOf(b *testing.B, f func() error) time.Duration {
	b.Helper()
	if err := f(); err != nil {
		b.Fatal(err)
	}
	var times []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	slices.Sort(times)
	return times[len(times)/2]
}

// BenchmarkCopy measures the copy bandwidth of the benchmark device (the
// one "GPU" names) in GB/s (median over the iterations): host to device
// (a blocking clEnqueueWriteBuffer from Go memory), device to host (a
// blocking read) and device to device (clEnqueueCopyBuffer, counted as
// bytes read plus bytes written, as the data-movement kernels' profile
// counts them), at 1 and 64 MiB.
func BenchmarkCopy(b *testing.B) {
	for _, mib := range copySizes {
		size := mib << 20
		for _, dir := range []string{"h2d", "d2h", "d2d"} {
			b.Run(fmt.Sprintf("%s/%dMiB", dir, mib), func(b *testing.B) {
				e := newDeviceEnv(b)
				host := make([]byte, size)
				src, err := e.ctx.CreateEmptyBuffer(cl.MemReadWrite, size)
				if err != nil {
					b.Fatal(err)
				}
				defer src.Close()
				dst, err := e.ctx.CreateEmptyBuffer(cl.MemReadWrite, size)
				if err != nil {
					b.Fatal(err)
				}
				defer dst.Close()
				p := unsafe.Pointer(&host[0])
				var run func() error
				moved := float64(size)
				switch dir {
				case "h2d":
					run = func() error { return done(e.q.EnqueueWriteBuffer(src, true, 0, size, p, nil)) }
				case "d2h":
					run = func() error { return done(e.q.EnqueueReadBuffer(src, true, 0, size, p, nil)) }
				case "d2d":
					moved *= 2
					run = func() error {
						if err := done(e.q.EnqueueCopyBuffer(src, dst, 0, 0, size, nil)); err != nil {
							return err
						}
						return e.q.Finish()
					}
				}
				med := medianOf(b, run)
				b.ReportMetric(moved/med.Seconds()/1e9, "GB/s")
			})
		}
	}
}

// BenchmarkLaunch measures kernel launch overhead on the benchmark device
// with movement_copy.cl's copy_words on one element: "roundtrip" is one enqueue
// and a clFinish (what a lone small op costs a request, µs/launch), and
// "batch" 100 enqueues back to back then one clFinish (the per-kernel cost
// inside a launch plan, µs/launch).
func BenchmarkLaunch(b *testing.B) {
	for _, mode := range []struct {
		name string
		n    int
	}{{"roundtrip", 1}, {"batch", 100}} {
		b.Run(mode.name, func(b *testing.B) {
			e := newDeviceEnv(b)
			kern, _ := tinyKernel(b, e)
			med := medianOf(b, func() error {
				for range mode.n {
					if err := done(e.q.EnqueueNDRangeKernel(kern, nil, []int{1}, nil, nil)); err != nil {
						return err
					}
				}
				return e.q.Finish()
			})
			b.ReportMetric(float64(med.Microseconds())/float64(mode.n), "µs/launch")
		})
	}
}

// done releases the event of an enqueue and returns the enqueue's error.
func done(ev *cl.Event, err error) error {
	if err != nil {
		return err
	}
	return ev.Close()
}

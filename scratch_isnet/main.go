// scratch: one conv alone on GPU, median kernel time (not committed).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	_ "github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

func main() {
	var c, h, w, oc, k, s, p, d, iters int64
	var relu bool
	var variants string
	flag.Int64Var(&c, "c", 64, "")
	flag.Int64Var(&h, "h", 512, "")
	flag.Int64Var(&w, "w", 512, "")
	flag.Int64Var(&oc, "oc", 64, "")
	flag.Int64Var(&k, "k", 3, "")
	flag.Int64Var(&s, "s", 1, "")
	flag.Int64Var(&p, "p", 1, "")
	flag.Int64Var(&d, "d", 1, "")
	flag.Int64Var(&iters, "n", 5, "")
	flag.BoolVar(&relu, "relu", true, "")
	flag.StringVar(&variants, "v", "", "GPU_KERNEL_VARIANTS")
	var pool bool
	flag.BoolVar(&pool, "pool", false, "maxpool 2x2 s2 ceil")
	flag.Parse()
	wt, _ := tensor.FromF32(tensor.Shape{oc, c, k, k}, seeded.Float32s(2, int(oc*c*k*k), -0.5, 0.5))
	bt, _ := tensor.FromF32(tensor.Shape{oc}, seeded.Float32s(3, int(oc), -1, 1))
	x := graph.NewParameter("x", tensor.F32, graph.ShapeOf(1, c, h, w))
	attrs := graph.Attrs{"group": int64(1), "kernel_shape": []int64{k, k}, "strides": []int64{s, s}, "pads": []int64{p * d, p * d, p * d, p * d}, "dilations": []int64{d, d}}
	op := graph.OpFusedConv
	conv := graph.NewNode(op, "conv", []graph.Output{x.Out(0), graph.NewConstant("w", wt).Out(0), graph.NewConstant("b", bt).Out(0)}, attrs, 1)
	if relu {
		graph.SetPostOps(conv, []graph.PostOp{{Kind: graph.PostRelu}})
	}
	m := graph.NewModel("c", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", conv.Out(0))})
	if pool {
		pn := graph.NewNode("MaxPool", "pool", []graph.Output{x.Out(0)}, graph.Attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{2, 2}, "ceil_mode": int64(1)}, 1)
		m = graph.NewModel("p", []*graph.Node{x}, []*graph.Node{graph.NewResult("y", pn.Out(0))})
		oc, k, s, p, d = c, 2, 2, 0, 1
	}
	core := driver.NewCore()
	defer core.Close()
	ctx := context.Background()
	props := map[string]string{driver.KeyEnableProfiling: "YES", "GPU_SHIPPED_TUNING": "NO", "GPU_IN_THREAD": "NO"}
	if variants != "" {
		props["GPU_KERNEL_VARIANTS"] = variants
	}
	cm, err := core.CompileModel(ctx, m, "GPU", props)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	req, _ := cm.CreateInferRequest()
	xt, _ := tensor.FromF32(tensor.Shape{1, c, h, w}, seeded.Float32s(1, int(c*h*w), -1, 1))
	_ = req.SetTensor("x", xt)
	_ = req.Infer(ctx)
	var times []time.Duration
	var ks []string
	var r0, r1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	for i := int64(0); i < iters; i++ {
		if err := req.Infer(ctx); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		var t time.Duration
		ks = ks[:0]
		for _, pi := range req.ProfilingInfo() {
			if pi.Status == driver.Executed && pi.NodeType != "Stage" {
				t += pi.RealTime
				ks = append(ks, pi.ExecType)
			}
		}
		times = append(times, t)
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := float64((r1.Utime.Nano()+r1.Stime.Nano())-(r0.Utime.Nano()+r0.Stime.Nano())) / 1e6 / float64(iters)
	slices.Sort(times)
	oh := (h+2*p*d-d*(k-1)-1)/s + 1
	ow := (w+2*p*d-d*(k-1)-1)/s + 1
	med := times[len(times)/2]
	fmt.Printf("cpu/inf %.1f ms  c=%d %dx%d oc=%d k=%d s=%d d=%d: min %.2f med %.2f ms  ns/outpx %.3f  %s\n", cpu, c, h, w, oc, k, s, d,
		float64(times[0].Microseconds())/1e3, float64(med.Microseconds())/1e3, float64(times[0].Nanoseconds())/float64(oh*ow), strings.Join(ks, ","))
}

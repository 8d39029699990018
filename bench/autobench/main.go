package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/clinfer/clinfer/bench"
	"github.com/clinfer/clinfer/tests/conformance"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "autobench:", err)
		os.Exit(1)
	}
}

// report holds the fields of cmd/benchmark's JSON report autobench reads.
type report struct {
	Count            int            `json:"count"`
	NIReq            int            `json:"nireq"`
	ThroughputFPS    float64        `json:"throughput_fps"`
	FirstInferenceMS float64        `json:"first_inference_ms"`
	CompileMS        float64        `json:"compile_ms"`
	FirstResultMS    float64        `json:"first_result_ms"`
	DeviceInferences map[string]int `json:"device_inferences"`
	LatencyMS        struct {
		Median float64 `json:"median"`
		P90    float64 `json:"p90"`
	} `json:"latency_ms"`
}

// scenario is one row: a device and the benchmark flags that measure it.
type scenario struct {
	section string
	device  string
	args    []string
	runs    []report
}

// medianOf is the median over the scenario's runs of one field.
func (s *scenario) medianOf(f func(report) float64) float64 {
	v := make([]float64, len(s.runs))
	for i, r := range s.runs {
		v[i] = f(r)
	}
	return bench.Median(v)
}

const (
	secFirst  = "first"
	secTput   = "tput"
	secBatch  = "batch"
	detModel  = "ch_PP-OCRv4_det_infer.onnx"
	clsModel  = "ch_ppocr_mobile_v2.0_cls_infer.onnx"
	detShape  = "x=[1,3,640,640]"
	clsShape  = "x=[1,3,48,192]"
	noBatch   = "ALLOW_AUTO_BATCHING=NO"
	autoGPU   = "AUTO:GPU,CPU"
	batchGPU8 = "BATCH:GPU(8)"
)

// scenarios returns the rows of the three tables.
func scenarios(det, cls string, seconds float64) []*scenario {
	t := fmt.Sprint(seconds)
	first := []string{"-m", det, "-reshape", detShape, "-hint", "latency", "-api", "sync", "-niter", "5"}
	tput := []string{"-m", det, "-reshape", detShape, "-t", t}
	batch := []string{"-m", cls, "-reshape", clsShape, "-hint", "throughput", "-nireq", "8", "-t", t}
	with := func(base []string, more ...string) []string { return append(append([]string(nil), base...), more...) }
	return []*scenario{
		{section: secFirst, device: "GPU", args: with(first, "-d", "GPU")},
		{section: secFirst, device: autoGPU, args: with(first, "-d", autoGPU)},
		{section: secTput, device: "GPU", args: with(tput, "-d", "GPU", "-hint", "throughput", "-p", noBatch)},
		{section: secTput, device: "CPU", args: with(tput, "-d", "CPU", "-hint", "throughput")},
		{section: secTput, device: autoGPU + " (CUMULATIVE_THROUGHPUT)", args: with(tput, "-d", autoGPU, "-hint", "cumulative_throughput", "-p", noBatch)},
		{section: secBatch, device: "GPU", args: with(batch, "-d", "GPU", "-p", noBatch)},
		{section: secBatch, device: batchGPU8, args: with(batch, "-d", batchGPU8)},
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("autobench", flag.ContinueOnError)
	runs := fs.Int("runs", 3, "fresh processes per measurement")
	seconds := fs.Float64("t", 10, "seconds of each throughput measurement")
	benchPath := fs.String("benchmark", "", "cmd/benchmark binary (default: go build it)")
	jsonPath := fs.String("json", "", "also write every run's report here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *runs < 1 || *seconds <= 0 {
		return fmt.Errorf("-runs %d -t %g: want at least one run of a positive duration", *runs, *seconds)
	}
	det, err := conformance.ModelPath(detModel)
	if err != nil {
		return err
	}
	cls, err := conformance.ModelPath(clsModel)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "autobench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if *benchPath == "" {
		*benchPath = filepath.Join(tmp, "benchmark")
		build := exec.Command("go", "build", "-o", *benchPath, "github.com/clinfer/clinfer/cmd/benchmark")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building cmd/benchmark: %w", err)
		}
	}
	rows := scenarios(det, cls, *seconds)
	fmt.Fprintf(out, "autobench: %d runs of %d measurements, each a fresh process with %s and no CACHE_DIR\n",
		*runs, len(rows), strings.Join(bench.DriverCachesOff, " "))
	for i := range *runs {
		for _, s := range rows {
			fmt.Fprintf(out, "run %d/%d  %-6s %s\n", i+1, *runs, s.section, s.device)
			r, err := measure(*benchPath, filepath.Join(tmp, "report.json"), s.args)
			if err != nil {
				return fmt.Errorf("%s on %s: %w", s.section, s.device, err)
			}
			s.runs = append(s.runs, r)
		}
	}
	if err := writeTables(out, rows); err != nil {
		return err
	}
	if *jsonPath != "" {
		all := map[string][]report{}
		for _, s := range rows {
			all[s.section+" "+s.device] = s.runs
		}
		b, err := json.MarshalIndent(all, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(*jsonPath, b, 0o644)
	}
	return nil
}

// measure runs the benchmark once in a fresh process and reads its report.
func measure(benchPath, jsonPath string, args []string) (report, error) {
	cmd := exec.Command(benchPath, append(append([]string(nil), args...), "-json", jsonPath)...)
	cmd.Env = append(os.Environ(), bench.DriverCachesOff...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return report{}, fmt.Errorf("%s %s: %w: %s", benchPath, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return report{}, err
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return report{}, fmt.Errorf("report %s: %w", jsonPath, err)
	}
	if r.Count == 0 {
		return report{}, errors.New("the benchmark ran no inference")
	}
	return r, nil
}

// pick returns the rows of a section.
func pick(rows []*scenario, section string) []*scenario {
	var out []*scenario
	for _, s := range rows {
		if s.section == section {
			out = append(out, s)
		}
	}
	return out
}

// devicesOf sums the per-device inference counts over the runs.
func devicesOf(s *scenario) string {
	sum := map[string]int{}
	for _, r := range s.runs {
		for d, n := range r.DeviceInferences {
			sum[d] += n
		}
	}
	if len(sum) == 0 {
		return "-"
	}
	names := make([]string, 0, len(sum))
	for d := range sum {
		names = append(names, d)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, d := range names {
		parts[i] = fmt.Sprintf("%s %d", d, sum[d])
	}
	return strings.Join(parts, ", ")
}

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// writeTables prints the three tables with medians and ratios.
func writeTables(out io.Writer, rows []*scenario) error {
	first, tput, batch := pick(rows, secFirst), pick(rows, secTput), pick(rows, secBatch)
	n := len(rows[0].runs)

	fmt.Fprintf(out, "\nPP-OCR det 1x3x640x640, time to first result (median of %d fresh processes, cold kernel caches)\n", n)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "device\tfirst result ms\tcompile ms\tfirst inference ms\tnext inferences median ms\tfirst / median\tfirst result vs GPU\tsync inferences on\t")
	gpuFirst := first[0].medianOf(func(r report) float64 { return r.FirstResultMS })
	for _, s := range first {
		fr := s.medianOf(func(r report) float64 { return r.FirstResultMS })
		fi := s.medianOf(func(r report) float64 { return r.FirstInferenceMS })
		med := s.medianOf(func(r report) float64 { return r.LatencyMS.Median })
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.1f\t%.1f\t%s\t%s\t%s\t\n", s.device, fr,
			s.medianOf(func(r report) float64 { return r.CompileMS }), fi, med, ratio(fi, med), ratio(fr, gpuFirst), devicesOf(s))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(out, "\nPP-OCR det 1x3x640x640, throughput (median of %d fresh processes)\n", n)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "device\tnireq\tFPS\tlatency median ms\tvs best single device\tinferences on\t")
	best := 0.0
	for _, s := range tput {
		if !strings.HasPrefix(s.device, "AUTO") {
			best = max(best, s.medianOf(func(r report) float64 { return r.ThroughputFPS }))
		}
	}
	for _, s := range tput {
		fps := s.medianOf(func(r report) float64 { return r.ThroughputFPS })
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.1f\t%s\t%s\t\n", s.device, s.medianOf(func(r report) float64 { return float64(r.NIReq) }),
			fps, s.medianOf(func(r report) float64 { return r.LatencyMS.Median }), ratio(fps, best), devicesOf(s))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(out, "\nPP-OCR cls 1x3x48x192, 8 requests in flight (median of %d fresh processes)\n", n)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "device\tFPS\tlatency median ms\tlatency p90 ms\tFPS vs GPU\tlatency vs GPU\t")
	gpuFPS := batch[0].medianOf(func(r report) float64 { return r.ThroughputFPS })
	gpuLat := batch[0].medianOf(func(r report) float64 { return r.LatencyMS.Median })
	for _, s := range batch {
		fps := s.medianOf(func(r report) float64 { return r.ThroughputFPS })
		lat := s.medianOf(func(r report) float64 { return r.LatencyMS.Median })
		fmt.Fprintf(tw, "%s\t%.1f\t%.2f\t%.2f\t%s\t%s\t\n", s.device, fps, lat,
			s.medianOf(func(r report) float64 { return r.LatencyMS.P90 }), ratio(fps, gpuFPS), ratio(lat, gpuLat))
	}
	return tw.Flush()
}

package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/bench"
	"github.com/clinfer/clinfer/internal/cliutil"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/tests/conformance"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "serveload:", err)
		os.Exit(1)
	}
}

type options struct {
	model, shape, device, clients, jsonPath string
	protocols                               string
	batch, batchDelay, n                    int
	seconds                                 float64
}

func run(args []string, out io.Writer) error {
	var o options
	fs := flag.NewFlagSet("serveload", flag.ContinueOnError)
	fs.StringVar(&o.model, "m", "", "ONNX model (default: PP-OCR cls from .cache/models)")
	fs.StringVar(&o.shape, "shape", "x=[1,3,48,192]", "the input's shape, fixed in the model (batch 1)")
	fs.StringVar(&o.device, "d", "GPU", "device BATCH batches on")
	fs.IntVar(&o.batch, "batch", 8, "BATCH's batch size (server -batch, benchmark BATCH:d(batch))")
	fs.IntVar(&o.batchDelay, "batch_delay_ms", 2, "AUTO_BATCH_TIMEOUT: how long a batch waits to fill")
	fs.StringVar(&o.clients, "clients", "1,8,64", "concurrent clients (and in-process requests) per point")
	fs.StringVar(&o.protocols, "protocols", strings.Join(Protocols, ","), "protocols to measure")
	fs.Float64Var(&o.seconds, "t", 10, "seconds per point")
	fs.IntVar(&o.n, "n", 100000, "most requests per point")
	fs.StringVar(&o.jsonPath, "json", "", "also write the results here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var counts []int
	for _, s := range strings.Split(o.clients, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || c < 1 {
			return fmt.Errorf("-clients %q: want positive integers", o.clients)
		}
		counts = append(counts, c)
	}
	if o.seconds <= 0 || o.n < 1 {
		return errors.New("-t and -n must be positive")
	}
	if o.model == "" {
		p, err := conformance.ModelPath("ch_ppocr_mobile_v2.0_cls_infer.onnx")
		if err != nil {
			return err
		}
		o.model = p
	}
	tmp, err := os.MkdirTemp("", "serveload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, c := range []string{"serve", "benchmark"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(tmp, c), "github.com/clinfer/clinfer/cmd/"+c)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building cmd/%s: %w", c, err)
		}
	}
	tg, err := newTarget(o)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "serveload: %s %s on BATCH:%s(%d), AUTO_BATCH_TIMEOUT=%d ms; %s; load %s\n",
		filepath.Base(o.model), o.shape, o.device, o.batch, o.batchDelay, deviceName(o.device), bench.LoadAvg())
	fmt.Fprintf(out, "each point: at most %g s and %d requests; loopback; request bodies encoded once\n", o.seconds, o.n)

	srv, err := startServer(filepath.Join(tmp, "serve"), o, &tg)
	if err != nil {
		return err
	}
	defer srv.stop()
	var rows []row
	for _, c := range counts {
		ip, err := inProcess(filepath.Join(tmp, "benchmark"), filepath.Join(tmp, "bench.json"), o, c)
		if err != nil {
			return err
		}
		r := row{Clients: c, InProcess: ip, Overhead: map[string]float64{}}
		for _, p := range strings.Split(o.protocols, ",") {
			before, err := scrape(tg.url)
			if err != nil {
				return err
			}
			res, err := load(tg, p, c, time.Duration(o.seconds*float64(time.Second)), o.n)
			if err != nil {
				return err
			}
			if res.Errors > 0 {
				return fmt.Errorf("%s with %d clients: %d errors, first: %s", p, c, res.Errors, res.FirstError)
			}
			after, err := scrape(tg.url)
			if err != nil {
				return err
			}
			r.Server = append(r.Server, res)
			r.Overhead[p] = after.overheadMS(before)
		}
		rows = append(rows, r)
		fmt.Fprintf(out, "%d clients done\n", c)
	}
	writeTable(out, rows)
	if o.jsonPath != "" {
		b, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(o.jsonPath, b, 0o644)
	}
	return nil
}

// row is one client count: in-process and over each protocol.
type row struct {
	Clients   int                `json:"clients"`
	InProcess benchReport        `json:"in_process"`
	Server    []result           `json:"server"`
	Overhead  map[string]float64 `json:"server_overhead_ms"` // per request, server side
}

// newTarget reads the model's ports and makes the request data.
func newTarget(o options) (target, error) {
	core := clinfer.NewCore()
	defer core.Close()
	m, err := core.ReadModel(o.model)
	if err != nil {
		return target{}, err
	}
	shapes, err := cliutil.ParseShapes(m, []string{o.shape})
	if err != nil {
		return target{}, err
	}
	if len(m.Parameters) != 1 {
		return target{}, fmt.Errorf("%s has %d inputs; serveload drives one-input models", o.model, len(m.Parameters))
	}
	name := m.Parameters[0].Name
	sh, ok := shapes[name]
	if !ok {
		return target{}, fmt.Errorf("-shape %q does not name the input %q", o.shape, name)
	}
	return target{model: "m", input: name, shape: sh, outputs: len(m.Results),
		data: seeded.Float32s(7, int(sh.NumElements()), -1, 1)}, nil
}

// server is the cmd/serve process.
type server struct {
	cmd  *exec.Cmd
	done chan error
}

// startServer starts cmd/serve on loopback ports and reads them from its
// "serving" log line.
func startServer(bin string, o options, tg *target) (*server, error) {
	cmd := exec.Command(bin, "-model", o.model, "-name", tg.model, "-shape", o.shape, "-d", o.device,
		"-batch", strconv.Itoa(o.batch), "-batch_delay_ms", strconv.Itoa(o.batchDelay),
		"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0", "-log_level", "info", "-max_request_bytes", "268435456")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, done: make(chan error, 1)}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		var line struct {
			Msg  string `json:"msg"`
			HTTP string `json:"http"`
			GRPC string `json:"grpc"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
			tg.url, tg.grpcAddr = "http://"+line.HTTP, line.GRPC
			break
		}
		fmt.Fprintln(os.Stderr, "serve:", sc.Text())
	}
	go func() { // ends when the server exits
		_, _ = io.Copy(os.Stderr, stderr)
		s.done <- cmd.Wait()
	}()
	if tg.url == "" {
		s.stop()
		return nil, errors.New("cmd/serve exited before serving")
	}
	return s, nil
}

// stop sends SIGTERM and waits for the drain.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// benchReport is what serveload reads of cmd/benchmark's JSON report.
type benchReport struct {
	Count         int     `json:"count"`
	ThroughputFPS float64 `json:"throughput_fps"`
	LatencyMS     struct {
		Median float64 `json:"median"`
		P99    float64 `json:"p99"`
	} `json:"latency_ms"`
}

// inProcess runs cmd/benchmark with n requests in flight on the same
// device string the server compiles for.
func inProcess(bin, jsonPath string, o options, n int) (benchReport, error) {
	args := []string{"-m", o.model, "-reshape", o.shape, "-d", fmt.Sprintf("BATCH:%s(%d)", o.device, o.batch), "-hint", "none",
		"-p", "AUTO_BATCH_TIMEOUT=" + strconv.Itoa(o.batchDelay), "-nireq", strconv.Itoa(n), "-t", fmt.Sprint(o.seconds),
		"-json", jsonPath} // -t only: cmd/benchmark's -niter would override it
	cmd := exec.Command(bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return benchReport{}, fmt.Errorf("cmd/benchmark %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return benchReport{}, err
	}
	var r benchReport
	return r, json.Unmarshal(b, &r)
}

// sums are the server's request, queue and compute time sums and the
// request count, from /metrics.
type sums struct{ request, queue, compute, count float64 }

// overheadMS is the server's own time per request between two scrapes:
// request time minus queue and compute time.
func (a sums) overheadMS(b sums) float64 {
	n := a.count - b.count
	if n <= 0 {
		return 0
	}
	return 1000 * ((a.request - b.request) - (a.queue - b.queue) - (a.compute - b.compute)) / n
}

func scrape(url string) (sums, error) {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return sums{}, err
	}
	defer resp.Body.Close()
	var s sums
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, _, _ := strings.Cut(line, "{")
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		switch name {
		case "clinfer_inference_request_duration_seconds_sum":
			s.request += v
		case "clinfer_inference_request_duration_seconds_count":
			s.count += v
		case "clinfer_inference_queue_duration_seconds_sum":
			s.queue += v
		case "clinfer_inference_compute_duration_seconds_sum":
			s.compute += v
		}
	}
	return s, sc.Err()
}

func writeTable(out io.Writer, rows []row) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "clients\tin-process inf/s\tp50 ms\tp99 ms\t"
	if len(rows) > 0 {
		for _, s := range rows[0].Server {
			head += s.Protocol + " inf/s\tp50\tp99\t"
		}
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%.1f\t%.2f\t%.2f\t", r.Clients, r.InProcess.ThroughputFPS, r.InProcess.LatencyMS.Median, r.InProcess.LatencyMS.P99)
		for _, s := range r.Server {
			fmt.Fprintf(tw, "%.1f\t%.2f\t%.2f\t", s.PerSecond, s.P50MS, s.P99MS)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if len(rows) == 0 {
		return
	}
	first := rows[0]
	fmt.Fprintf(out, "server overhead per request (request time - queue - compute, server side, %d client(s)):", first.Clients)
	for _, s := range first.Server {
		fmt.Fprintf(out, " %s %.3f ms", s.Protocol, first.Overhead[s.Protocol])
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "end-to-end p50 over in-process p50 at %d client(s):", first.Clients)
	for _, s := range first.Server {
		fmt.Fprintf(out, " %s %+.2f ms", s.Protocol, s.P50MS-first.InProcess.LatencyMS.Median)
	}
	fmt.Fprintln(out)
}

func appendF32(b []byte, f float32) []byte {
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
}

// deviceName is the device's FULL_DEVICE_NAME (the POCL target on POCL).
func deviceName(dev string) string {
	core := clinfer.NewCore()
	defer core.Close()
	v, err := core.Property(dev, "FULL_DEVICE_NAME")
	if err != nil {
		return dev + ": " + err.Error()
	}
	return dev + " = " + v
}

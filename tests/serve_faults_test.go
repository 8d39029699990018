// The server's fault test runs on the GPU device (POCL in CI), so it needs
// a build with OpenCL. The device bundle (scripts/devicebundle/build.sh,
// tag devicebundle) leaves it out: the server is not a device concern, and
// its gRPC and Prometheus dependencies would take megabytes of the bundle's
// 60 MiB.
//
//go:build cgo && !noopencl && !devicebundle

package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/internal/seeded"
	"github.com/clinfer/clinfer/internal/servetest"
	"github.com/clinfer/clinfer/serve"
	"github.com/clinfer/clinfer/serve/inferencepb"
)

// serveFaultRequests is how many requests TestServeFaults sends.
const serveFaultRequests = 10000

// faultKind is what one request of TestServeFaults does.
type faultKind int

const (
	validJSON faultKind = iota
	validBinary
	validGRPC
	malformedREST
	malformedGRPC
	disconnect
)

// malformedBodies are bad REST requests: each must be answered 4xx.
var malformedBodies = []struct{ path, hdr, body string }{
	{"gpu", "", `{"inputs": [`},
	{"gpu", "", `not json at all`},
	{"gpu", "", `{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP16","data":[1,2,3,4]}]}`},
	{"gpu", "", `{"inputs":[{"name":"x","shape":[1,5],"datatype":"FP32","data":[1,2,3,4,5]}]}`},
	{"gpu", "", `{"inputs":[{"name":"x","shape":[2,4],"datatype":"FP32","data":[1,2,3,4]}]}`},
	{"gpu", "", `{"inputs":[{"name":"y","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}`},
	{"gpu", "", `{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,"three",4]}]}`},
	{"gpu", "", `{"inputs":[{"name":"x","shape":[4611686018427387904,4],"datatype":"FP32","data":[1]}]}`},
	{"gpu", "", `{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[[1,2],[3,4]]]}]}`},
	{"gpu", "", `{"inputs":[]}`},
	{"gpu", "7", `{"inputs":[]}`},
	{"gpu", "999", `{}`},
	{"batched", "", `{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}],"outputs":[{"name":"nope"}]}`},
	{"absent", "", `{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}`},
}

// TestServeFaults sends serveFaultRequests requests over REST and gRPC,
// seeded at random: valid ones (JSON, binary, gRPC; batches of 1 to 3 on
// the GPU and on BATCH:GPU(4)), malformed ones and clients that disconnect
// mid-request. Every valid request must be answered right, every bad one
// with a 4xx (or gRPC's InvalidArgument / NotFound), a new version of the
// GPU model swapped in halfway must fail none of them, and once the server
// and the Core are closed no goroutine and no OpenCL object may be left.
func TestServeFaults(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	runtime.GC()
	base := cl.LiveObjects()

	dir := t.TempDir()
	servetest.WriteModel(t, dir, "gpu", 1, servetest.Affine(2), `{"device": "GPU"}`)
	servetest.WriteModel(t, dir, "batched", 1, servetest.Affine(2), `{"device": "GPU", "batching": {"max_batch_size": 4, "max_queue_delay_ms": 2}}`)
	core := clinfer.NewCore()
	s, err := serve.New(serve.Options{Core: core, Repository: dir, MaxRequestBytes: 1 << 20,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	e := servetest.Start(t, s)
	tr := &http.Transport{MaxIdleConnsPerHost: 32}
	client := &http.Client{Transport: tr, Timeout: time.Minute}

	const workers = 16
	type tally struct{ valid, bad, dropped, wrong int }
	var mu sync.Mutex
	var total tally
	var problems []string
	var wg sync.WaitGroup
	var sent atomic.Int64
	for w := range workers {
		wg.Add(1)
		go func() { // ends after its share of the requests
			defer wg.Done()
			rng := seeded.New(uint32(1000 + w))
			var mine tally
			var bad []string
			for i := w; i < serveFaultRequests; i += workers {
				kind, problem := serveFaultRequest(e, client, rng)
				sent.Add(1)
				switch kind {
				case validJSON, validBinary, validGRPC:
					mine.valid++
				case disconnect:
					mine.dropped++
				default:
					mine.bad++
				}
				if problem != "" {
					mine.wrong++
					if len(bad) < 5 {
						bad = append(bad, problem)
					}
				}
			}
			mu.Lock()
			total.valid += mine.valid
			total.bad += mine.bad
			total.dropped += mine.dropped
			total.wrong += mine.wrong
			problems = append(problems, bad...)
			mu.Unlock()
		}()
	}
	// Halfway, version 2 of "gpu" replaces version 1 under load: no
	// request may fail for it.
	for sent.Load() < serveFaultRequests/2 {
		time.Sleep(time.Millisecond)
	}
	servetest.WriteModel(t, dir, "gpu", 2, servetest.Affine(2), "")
	require.NoError(t, s.Rescan(context.Background()))
	wg.Wait()
	t.Logf("%d requests: %d valid, %d malformed, %d disconnected; %d answered wrong", serveFaultRequests, total.valid, total.bad, total.dropped, total.wrong)
	assert.Zero(t, total.wrong, "first problems: %s", strings.Join(problems, "\n"))
	assert.Equal(t, serveFaultRequests, total.valid+total.bad+total.dropped)
	assert.Greater(t, total.valid, serveFaultRequests/2)

	// The GPU models' device memory and the BATCH model's batches show in
	// the metrics.
	code, metrics, err := getREST(client, e.URL+"/metrics")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	weights := regexp.MustCompile(`(?m)^clinfer_device_memory_bytes\{device="GPU[.0-9]*",kind="weights"\} ([0-9.e+]+)$`).FindSubmatch(metrics)
	require.NotNil(t, weights, "device memory metric")
	assert.NotEqual(t, "0", string(weights[1]))
	batches := regexp.MustCompile(`(?m)^clinfer_inference_batch_size_count\{model="batched",version="1"\} ([0-9]+)$`).FindSubmatch(metrics)
	require.NotNil(t, batches, "batch size histogram")
	assert.NotEqual(t, "0", string(batches[1]))

	code, md, err := getREST(client, e.URL+"/v2/models/gpu")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	assert.Contains(t, string(md), `"versions":["2"]`, "version 2 replaced version 1")

	tr.CloseIdleConnections()
	require.NoError(t, e.Close())
	require.NoError(t, core.Close())
	assert.Eventually(t, func() bool { return assert.ObjectsAreEqual(base, cl.LiveObjects()) }, settle, 10*time.Millisecond,
		"OpenCL objects left: %v (before: %v)", cl.LiveObjects(), base)
}

// serveFaultRequest sends one random request and says what it was and,
// when the answer was not the right one, what was wrong.
func serveFaultRequest(e *servetest.Env, client *http.Client, rng *seeded.Rand) (faultKind, string) {
	r := rng.Float64()
	model := "gpu"
	if rng.Uint32()%2 == 0 {
		model = "batched"
	}
	batch := 1 + int(rng.Uint32()%3)
	if model == "batched" && rng.Uint32()%4 != 0 {
		batch = 1 // mostly batch 1, which BATCH gathers
	}
	x := seeded.Float32s(rng.Uint32(), batch*servetest.Width, -4, 4)
	want := make([]float32, len(x))
	for i, v := range x {
		want[i] = 2*v + 1
	}
	url := e.URL + "/v2/models/" + model + "/infer"
	shape := []int64{int64(batch), servetest.Width}
	switch {
	case r < 0.30:
		body, _ := json.Marshal(map[string]any{"inputs": []any{map[string]any{"name": "x", "shape": shape, "datatype": "FP32", "data": x}}})
		code, got, err := postREST(client, url, "", body)
		if err != nil || code != 200 {
			return validJSON, fmt.Sprintf("valid JSON request: %d %v %s", code, err, got)
		}
		var resp struct {
			Outputs []struct {
				Shape []int64   `json:"shape"`
				Data  []float32 `json:"data"`
			} `json:"outputs"`
		}
		if err := json.Unmarshal(got, &resp); err != nil || len(resp.Outputs) != 1 || !closeTo(resp.Outputs[0].Data, want) {
			return validJSON, fmt.Sprintf("valid JSON request answered %s, want %v", got, want)
		}
		return validJSON, ""
	case r < 0.50:
		head := fmt.Sprintf(`{"inputs":[{"name":"x","shape":[%d,%d],"datatype":"FP32","parameters":{"binary_data_size":%d}}],"parameters":{"binary_data_output":true}}`, batch, servetest.Width, 4*len(x))
		code, got, err := postREST(client, url, strconv.Itoa(len(head)), append([]byte(head), servetest.Bytes(x)...))
		if err != nil || code != 200 || len(got) < 4*len(want) {
			return validBinary, fmt.Sprintf("valid binary request: %d %v %q", code, err, got)
		}
		if y := servetest.F32s(got[len(got)-4*len(want):]); !closeTo(y, want) {
			return validBinary, fmt.Sprintf("valid binary request answered %v, want %v", y, want)
		}
		return validBinary, ""
	case r < 0.70:
		resp, err := e.GRPC.ModelInfer(context.Background(), &inferencepb.ModelInferRequest{ModelName: model,
			Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: shape}},
			RawInputContents: [][]byte{servetest.Bytes(x)}})
		if err != nil || len(resp.RawOutputContents) != 1 || !closeTo(servetest.F32s(resp.RawOutputContents[0]), want) {
			return validGRPC, fmt.Sprintf("valid gRPC request: %v %v", err, resp)
		}
		return validGRPC, ""
	case r < 0.82:
		m := malformedBodies[rng.Uint32()%uint32(len(malformedBodies))]
		code, got, err := postREST(client, e.URL+"/v2/models/"+m.path+"/infer", m.hdr, []byte(m.body))
		var eb struct {
			Error string `json:"error"`
		}
		if err != nil || code < 400 || code > 499 || json.Unmarshal(got, &eb) != nil || eb.Error == "" {
			return malformedREST, fmt.Sprintf("malformed request %s answered %d %v %s", m.body, code, err, got)
		}
		return malformedREST, ""
	case r < 0.90:
		bad := &inferencepb.ModelInferRequest{ModelName: model, Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: shape}},
			RawInputContents: [][]byte{servetest.Bytes(x[:len(x)-1])}}
		if rng.Uint32()%2 == 0 {
			bad.Inputs[0].Shape = []int64{int64(batch), 3}
		}
		_, err := e.GRPC.ModelInfer(context.Background(), bad)
		if c := status.Code(err); c != codes.InvalidArgument {
			return malformedGRPC, fmt.Sprintf("malformed gRPC request answered %v", err)
		}
		return malformedGRPC, ""
	}
	// A client that goes away: half a body then a close, or a cancelled
	// request at a random moment.
	body, _ := json.Marshal(map[string]any{"inputs": []any{map[string]any{"name": "x", "shape": shape, "datatype": "FP32", "data": x}}})
	if rng.Uint32()%2 == 0 {
		c, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
		if err != nil {
			return disconnect, fmt.Sprintf("dial: %v", err)
		}
		fmt.Fprintf(c, "POST /v2/models/%s/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", model, len(body), body[:len(body)/2])
		c.Close()
		return disconnect, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.Uint32()%2000)*time.Microsecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if resp, err := client.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 && resp.StatusCode != 499 && resp.StatusCode != 504 {
			return disconnect, fmt.Sprintf("a request cancelled late answered %d", resp.StatusCode)
		}
	}
	return disconnect, ""
}

// getREST gets a URL.
func getREST(client *http.Client, url string) (int, []byte, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// postREST posts body (with the binary header length hl when not "").
func postREST(client *http.Client, url, hl string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if hl != "" {
		req.Header.Set(serve.HeaderLength, hl)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	return resp.StatusCode, got, err
}

// closeTo compares float32 slices within 1e-5 relative.
func closeTo(got, want []float32) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		d := got[i] - want[i]
		if d < 0 {
			d = -d
		}
		if d > 1e-5*(1+abs32(want[i])) {
			return false
		}
	}
	return true
}

func abs32(v float32) float32 {
	if v < 0 {
		return -v
	}
	return v
}

package serve_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/internal/servetest"
	"github.com/clinfer/clinfer/serve"
	"github.com/clinfer/clinfer/serve/inferencepb"
)

// quiet is a logger for tests: warnings and errors only.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newEnv starts a server over a repository holding the affine model as
// "affine" (versions 1: y=2x+1 and 2: y=3x+1) on CPU, with opts' other
// fields.
func newEnv(t *testing.T, opts serve.Options, cfg string) (*servetest.Env, string) {
	t.Helper()
	dir := t.TempDir()
	servetest.WriteModel(t, dir, "affine", 1, servetest.Affine(2), "")
	servetest.WriteModel(t, dir, "affine", 2, servetest.Affine(3), cfg)
	core := clinfer.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	opts.Core, opts.Repository = core, dir
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	s, err := serve.New(opts)
	require.NoError(t, err)
	return servetest.Start(t, s), dir
}

const cpuConfig = `{"device": "CPU"}`

// do sends a request and returns the status, headers and body.
func do(t *testing.T, method, url string, body []byte, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

func jsonInfer(x []float32, batch int) []byte {
	b, _ := json.Marshal(map[string]any{"id": "req-7", "inputs": []any{map[string]any{"name": "x", "shape": []int{batch, servetest.Width}, "datatype": "FP32", "data": x}}})
	return b
}

// TestREST covers the REST routes and the protocol's answers.
func TestREST(t *testing.T) {
	e, _ := newEnv(t, serve.Options{}, cpuConfig)
	code, _, body := do(t, "GET", e.URL+"/v2/health/live", nil, nil)
	assert.Equal(t, 200, code)
	assert.JSONEq(t, `{"live":true}`, string(body))
	code, _, body = do(t, "GET", e.URL+"/v2/health/ready", nil, nil)
	assert.Equal(t, 200, code)
	assert.JSONEq(t, `{"ready":true}`, string(body))
	code, _, body = do(t, "GET", e.URL+"/v2", nil, nil)
	assert.Equal(t, 200, code)
	assert.Contains(t, string(body), `"extensions":["model_repository","binary_tensor_data"]`)
	code, _, body = do(t, "GET", e.URL+"/v2/models/affine", nil, nil)
	assert.Equal(t, 200, code)
	assert.JSONEq(t, `{"name":"affine","versions":["2"],"platform":"clinfer_onnx","inputs":[{"name":"x","datatype":"FP32","shape":[-1,4]}],"outputs":[{"name":"y","datatype":"FP32","shape":[-1,4]}]}`, string(body))
	code, _, _ = do(t, "GET", e.URL+"/v2/models/affine/versions/2/ready", nil, nil)
	assert.Equal(t, 200, code)

	x := []float32{0, 1, 2, 3, -1, -2, 0.5, 4}
	code, hdr, body := do(t, "POST", e.URL+"/v2/models/affine/infer", jsonInfer(x, 2), map[string]string{"X-Request-Id": "abc"})
	require.Equal(t, 200, code, string(body))
	assert.Equal(t, "abc", hdr.Get("X-Request-Id"), "the request ID is echoed")
	assert.JSONEq(t, `{"model_name":"affine","model_version":"2","id":"req-7","outputs":[{"name":"y","datatype":"FP32","shape":[2,4],"data":[1,4,7,10,-2,-5,2.5,13]}]}`, string(body))
	_, hdr, _ = do(t, "GET", e.URL+"/v2/health/live", nil, nil)
	assert.Len(t, hdr.Get("X-Request-Id"), 32, "a request without an ID gets one")

	// The binary tensor data extension, both ways.
	head := []byte(`{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","parameters":{"binary_data_size":16}}],"outputs":[{"name":"y","parameters":{"binary_data":true}}]}`)
	raw := make([]byte, 16)
	for i, v := range []float32{1, 2, 3, 4} {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	code, hdr, body = do(t, "POST", e.URL+"/v2/models/affine/versions/2/infer", append(head, raw...), map[string]string{serve.HeaderLength: fmt.Sprint(len(head))})
	require.Equal(t, 200, code, string(body))
	var n int
	_, err := fmt.Sscan(hdr.Get(serve.HeaderLength), &n)
	require.NoError(t, err)
	assert.JSONEq(t, `{"model_name":"affine","model_version":"2","outputs":[{"name":"y","datatype":"FP32","shape":[1,4],"parameters":{"binary_data_size":16}}]}`, string(body[:n]))
	require.Len(t, body[n:], 16)
	for i, want := range []float32{4, 7, 10, 13} {
		assert.InDelta(t, want, math.Float32frombits(binary.LittleEndian.Uint32(body[n+4*i:])), 1e-6)
	}

	// Version 1 is not served (the newest is, by default).
	code, _, body = do(t, "POST", e.URL+"/v2/models/affine/versions/1/infer", jsonInfer(x[:4], 1), nil)
	assert.Equal(t, 404, code, string(body))
}

// TestRESTErrors: every bad request is a 4xx with the protocol's error
// body, and names what is wrong.
func TestRESTErrors(t *testing.T) {
	e, _ := newEnv(t, serve.Options{MaxRequestBytes: 1 << 16}, cpuConfig)
	inf := e.URL + "/v2/models/affine/infer"
	binHead := `{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","parameters":{"binary_data_size":16}}]}`
	for _, tc := range []struct {
		name, url, body string
		hdr             map[string]string
		code            int
		says            string
	}{
		{"malformed JSON", inf, `{"inputs": [`, nil, 400, "malformed"},
		{"unknown input", inf, `{"inputs":[{"name":"X","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}`, nil, 400, `unknown input "X"`},
		{"missing input", inf, `{"inputs":[]}`, nil, 400, `input "x" (FP32[-1 4]) missing`},
		{"wrong datatype", inf, `{"inputs":[{"name":"x","shape":[1,4],"datatype":"INT64","data":[1,2,3,4]}]}`, nil, 400, "datatype INT64 does not match the model's FP32"},
		{"unknown datatype", inf, `{"inputs":[{"name":"x","shape":[1,4],"datatype":"BYTES","data":["a"]}]}`, nil, 400, `datatype "BYTES"`},
		{"wrong rank", inf, `{"inputs":[{"name":"x","shape":[4],"datatype":"FP32","data":[1,2,3,4]}]}`, nil, 400, "rank 1"},
		{"wrong dimension", inf, `{"inputs":[{"name":"x","shape":[1,5],"datatype":"FP32","data":[1,2,3,4,5]}]}`, nil, 400, "dimension 1 is 5"},
		{"short data", inf, `{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3]}]}`, nil, 400, "3 values"},
		{"long data", inf, `{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4,5]}]}`, nil, 400, "more than the 4 values"},
		{"not a number", inf, `{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,"x",4]}]}`, nil, 400, "not a number"},
		{"negative dimension", inf, `{"inputs":[{"name":"x","shape":[-1,4],"datatype":"FP32","data":[1,2,3,4]}]}`, nil, 400, "negative"},
		{"unknown output", inf, `{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}],"outputs":[{"name":"z"}]}`, nil, 400, `unknown output "z"`},
		{"tensor over the limit, before allocating", inf, `{"inputs":[{"name":"x","shape":[1000000000000,4],"datatype":"FP32","data":[1]}]}`, nil, 413, "tensor size limit"},
		{"body over the limit", inf, `{"inputs":[{"name":"x","data":[` + strings.Repeat("1,", 40000) + `1]}]}`, nil, 413, "over the server's limit"},
		{"bad header length", inf, `{}`, map[string]string{serve.HeaderLength: "99"}, 400, serve.HeaderLength},
		{"binary size past the body", inf, binHead + "12345678", map[string]string{serve.HeaderLength: fmt.Sprint(len(binHead))}, 400, "binary_data_size 16"},
		{"unknown model", e.URL + "/v2/models/nope/infer", `{}`, nil, 404, `unknown model "nope"`},
		{"bad version", e.URL + "/v2/models/affine/versions/x/infer", `{}`, nil, 400, "not an integer"},
		{"no route", e.URL + "/v3/x", ``, nil, 404, "no route"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, hdr, body := do(t, "POST", tc.url, []byte(tc.body), tc.hdr)
			assert.Equal(t, tc.code, code, string(body))
			assert.Equal(t, "application/json", hdr.Get("Content-Type"))
			var eb struct {
				Error string `json:"error"`
			}
			require.NoError(t, json.Unmarshal(body, &eb), string(body))
			assert.Contains(t, eb.Error, tc.says)
		})
	}
}

// TestGRPC covers every RPC of the service.
func TestGRPC(t *testing.T) {
	e, _ := newEnv(t, serve.Options{}, cpuConfig)
	ctx := context.Background()
	c := e.GRPC
	live, err := c.ServerLive(ctx, &inferencepb.ServerLiveRequest{})
	require.NoError(t, err)
	assert.True(t, live.Live)
	ready, err := c.ServerReady(ctx, &inferencepb.ServerReadyRequest{})
	require.NoError(t, err)
	assert.True(t, ready.Ready)
	md, err := c.ServerMetadata(ctx, &inferencepb.ServerMetadataRequest{})
	require.NoError(t, err)
	assert.Equal(t, "clinfer", md.Name)
	assert.Equal(t, serve.Extensions, md.Extensions)
	mr, err := c.ModelReady(ctx, &inferencepb.ModelReadyRequest{Name: "affine"})
	require.NoError(t, err)
	assert.True(t, mr.Ready)
	mm, err := c.ModelMetadata(ctx, &inferencepb.ModelMetadataRequest{Name: "affine", Version: "2"})
	require.NoError(t, err)
	assert.Equal(t, []string{"2"}, mm.Versions)
	require.Len(t, mm.Inputs, 1)
	assert.Equal(t, []int64{-1, 4}, mm.Inputs[0].Shape)
	assert.Equal(t, "FP32", mm.Inputs[0].Datatype)

	// Typed contents and raw contents.
	in := &inferencepb.ModelInferRequest_InferInputTensor{Name: "x", Datatype: "FP32", Shape: []int64{1, 4},
		Contents: &inferencepb.InferTensorContents{Fp32Contents: []float32{1, 2, 3, 4}}}
	resp, err := c.ModelInfer(ctx, &inferencepb.ModelInferRequest{ModelName: "affine", Id: "g1", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{in}})
	require.NoError(t, err)
	assert.Equal(t, "g1", resp.Id)
	assert.Equal(t, "2", resp.ModelVersion)
	require.Len(t, resp.RawOutputContents, 1)
	assert.Equal(t, []float32{4, 7, 10, 13}, servetest.F32s(resp.RawOutputContents[0]))
	in.Contents = nil
	resp, err = c.ModelInfer(ctx, &inferencepb.ModelInferRequest{ModelName: "affine", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{in},
		RawInputContents: [][]byte{servetest.Bytes([]float32{0, 0, 1, 1})}})
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 1, 4, 4}, servetest.F32s(resp.RawOutputContents[0]))

	for _, tc := range []struct {
		name string
		req  *inferencepb.ModelInferRequest
		code codes.Code
	}{
		{"unknown model", &inferencepb.ModelInferRequest{ModelName: "nope"}, codes.NotFound},
		{"missing input", &inferencepb.ModelInferRequest{ModelName: "affine"}, codes.InvalidArgument},
		{"short raw", &inferencepb.ModelInferRequest{ModelName: "affine", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{in}, RawInputContents: [][]byte{{1, 2}}}, codes.InvalidArgument},
		{"wrong datatype", &inferencepb.ModelInferRequest{ModelName: "affine", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP16", Shape: []int64{1, 4}}}}, codes.InvalidArgument},
		{"no contents", &inferencepb.ModelInferRequest{ModelName: "affine", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{1, 4}}}}, codes.InvalidArgument},
	} {
		_, err := c.ModelInfer(ctx, tc.req)
		assert.Equal(t, tc.code, status.Code(err), "%s: %v", tc.name, err)
	}

	idx, err := c.RepositoryIndex(ctx, &inferencepb.RepositoryIndexRequest{})
	require.NoError(t, err)
	require.Len(t, idx.Models, 1)
	assert.Equal(t, "affine", idx.Models[0].Name)
	assert.Equal(t, "2", idx.Models[0].Version)
	assert.Equal(t, serve.StateReady, idx.Models[0].State)
	_, err = c.RepositoryModelUnload(ctx, &inferencepb.RepositoryModelUnloadRequest{ModelName: "affine"})
	require.NoError(t, err)
	mr, err = c.ModelReady(ctx, &inferencepb.ModelReadyRequest{Name: "affine"})
	require.NoError(t, err)
	assert.False(t, mr.Ready)
	_, err = c.RepositoryModelLoad(ctx, &inferencepb.RepositoryModelLoadRequest{ModelName: "affine"})
	require.NoError(t, err)
	mr, err = c.ModelReady(ctx, &inferencepb.ModelReadyRequest{Name: "affine"})
	require.NoError(t, err)
	assert.True(t, mr.Ready)
	_, err = c.RepositoryModelLoad(ctx, &inferencepb.RepositoryModelLoadRequest{ModelName: "../etc"})
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
}

// TestHotReload: versions swapped under a steady stream of requests fail
// none; each answer is one version's.
func TestHotReload(t *testing.T) {
	e, dir := newEnv(t, serve.Options{}, cpuConfig)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]int{}
	var failures []string
	for range 4 {
		wg.Add(1)
		go func() { // ends when ctx is cancelled
			defer wg.Done()
			for ctx.Err() == nil {
				resp, err := http.Post(e.URL+"/v2/models/affine/infer", "application/json", bytes.NewReader(jsonInfer([]float32{1, 1, 1, 1}, 1)))
				mu.Lock()
				if err != nil {
					failures = append(failures, err.Error())
				} else {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					var r struct {
						Version string `json:"model_version"`
						Outputs []struct {
							Data []float32 `json:"data"`
						} `json:"outputs"`
					}
					if resp.StatusCode != 200 || json.Unmarshal(b, &r) != nil || len(r.Outputs) != 1 {
						failures = append(failures, string(b))
					} else {
						seen[fmt.Sprintf("v%s=%v", r.Version, r.Outputs[0].Data[0])]++
					}
				}
				mu.Unlock()
			}
		}()
	}
	for i := range 6 {
		// Version 3, 4, ...: y = (i+4)x + 1, each replacing the last.
		servetest.WriteModel(t, dir, "affine", 3+i, servetest.Affine(float32(4+i)), "")
		require.NoError(t, e.Server.Rescan(context.Background()))
		code, _, body := do(t, "GET", e.URL+"/v2/models/affine", nil, nil)
		require.Equal(t, 200, code)
		assert.Contains(t, string(body), fmt.Sprintf(`"versions":["%d"]`, 3+i))
	}
	cancel()
	wg.Wait()
	assert.Empty(t, failures, "no request fails while versions are swapped")
	for k := range seen {
		var v, y int
		_, err := fmt.Sscanf(k, "v%d=%d", &v, &y)
		require.NoError(t, err, k)
		assert.Equal(t, v+2, y, "version %d answers y=%dx+1: %s", v, v+1, k) // version v has scale v+1
	}
	assert.NotEmpty(t, seen)
}

// TestRepositoryChanges: a bad config makes a model UNAVAILABLE with the
// reason (others serve on), a removed model is unloaded, and the index
// and load/unload work over REST.
func TestRepositoryChanges(t *testing.T) {
	e, dir := newEnv(t, serve.Options{}, cpuConfig)
	servetest.WriteModel(t, dir, "broken", 1, servetest.Affine(1), `{"device": "CPU", "no_such_field": 1}`)
	servetest.WriteModel(t, dir, "other", 1, servetest.Affine(1), `{"device": "CPU", "version_policy": {"all": true}}`)
	servetest.WriteModel(t, dir, "other", 2, servetest.Affine(5), "")
	require.NoError(t, e.Server.Rescan(context.Background()))
	code, _, body := do(t, "POST", e.URL+"/v2/repository/index", nil, nil)
	require.Equal(t, 200, code)
	var idx []serve.IndexEntry
	require.NoError(t, json.Unmarshal(body, &idx))
	require.Len(t, idx, 4, string(body))
	assert.Equal(t, "broken", idx[1].Name)
	assert.Equal(t, serve.StateUnavailable, idx[1].State)
	assert.Contains(t, idx[1].Reason, "no_such_field")
	assert.Equal(t, serve.IndexEntry{Name: "other", Version: "1", State: serve.StateReady}, idx[2])
	assert.Equal(t, serve.IndexEntry{Name: "other", Version: "2", State: serve.StateReady}, idx[3])
	code, _, _ = do(t, "GET", e.URL+"/v2/health/ready", nil, nil)
	assert.Equal(t, 503, code, "a model that failed to load makes the server not ready")

	code, _, body = do(t, "POST", e.URL+"/v2/repository/models/broken/load", nil, nil)
	assert.Equal(t, 400, code, string(body))
	code, _, _ = do(t, "POST", e.URL+"/v2/repository/models/broken/unload", nil, nil)
	assert.Equal(t, 200, code)
	code, _, _ = do(t, "GET", e.URL+"/v2/health/ready", nil, nil)
	assert.Equal(t, 200, code, "a model unloaded on request does not count against readiness")
	require.NoError(t, e.Server.Rescan(context.Background()))
	code, _, _ = do(t, "GET", e.URL+"/v2/health/ready", nil, nil)
	assert.Equal(t, 200, code, "a rescan leaves an unloaded model alone while its files do not change")

	// A model file that does not compile: UNAVAILABLE with the reason.
	servetest.WriteModel(t, dir, "garbage", 1, []byte("not onnx"), `{"device": "CPU"}`)
	require.NoError(t, e.Server.Rescan(context.Background()))
	idx, err := e.Server.Index(false)
	require.NoError(t, err)
	i := slices.IndexFunc(idx, func(r serve.IndexEntry) bool { return r.Name == "garbage" })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, serve.StateUnavailable, idx[i].State)
	assert.Contains(t, idx[i].Reason, "garbage/1/model.onnx")
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "garbage")))
	code, _, _ = do(t, "POST", e.URL+"/v2/models/other/versions/1/infer", jsonInfer([]float32{1, 1, 1, 1}, 1), nil)
	assert.Equal(t, 200, code)

	require.NoError(t, os.RemoveAll(filepath.Join(dir, "other")))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "broken")))
	require.NoError(t, e.Server.Rescan(context.Background()))
	code, _, _ = do(t, "GET", e.URL+"/v2/models/other", nil, nil)
	assert.Equal(t, 404, code)
	code, _, _ = do(t, "GET", e.URL+"/v2/health/ready", nil, nil)
	assert.Equal(t, 200, code)
}

// TestBearerToken: with a token, requests without it are 401 /
// UNAUTHENTICATED, health checks are open.
func TestBearerToken(t *testing.T) {
	e, _ := newEnv(t, serve.Options{Token: "s3cret"}, cpuConfig)
	code, _, _ := do(t, "GET", e.URL+"/v2/health/ready", nil, nil)
	assert.Equal(t, 200, code)
	code, _, body := do(t, "GET", e.URL+"/v2/models/affine", nil, nil)
	assert.Equal(t, 401, code)
	assert.Contains(t, string(body), `"error"`)
	code, _, _ = do(t, "GET", e.URL+"/v2/models/affine", nil, map[string]string{"Authorization": "Bearer wrong"})
	assert.Equal(t, 401, code)
	code, _, _ = do(t, "GET", e.URL+"/v2/models/affine", nil, map[string]string{"Authorization": "Bearer s3cret"})
	assert.Equal(t, 200, code)
	_, err := e.GRPC.ModelMetadata(context.Background(), &inferencepb.ModelMetadataRequest{Name: "affine"})
	assert.Equal(t, codes.Unauthenticated, status.Code(err))
	_, err = e.GRPC.ServerLive(context.Background(), &inferencepb.ServerLiveRequest{})
	assert.NoError(t, err)
}

// TestMetrics: /metrics has the request, latency, queue and batch metrics.
func TestMetrics(t *testing.T) {
	e, _ := newEnv(t, serve.Options{}, `{"device": "CPU", "batching": {"max_batch_size": 2, "max_queue_delay_ms": 20}}`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do(t, "POST", e.URL+"/v2/models/affine/infer", jsonInfer([]float32{1, 2, 3, 4}, 1), nil)
		}() // ends with the request
	}
	wg.Wait()
	do(t, "POST", e.URL+"/v2/models/affine/infer", []byte("{"), nil)
	code, _, body := do(t, "GET", e.URL+"/metrics", nil, nil)
	require.Equal(t, 200, code)
	m := string(body)
	for _, want := range []string{
		`clinfer_inference_requests_total{model="affine",outcome="success",protocol="rest",version="2"} 8`,
		`clinfer_inference_requests_total{model="affine",outcome="invalid",protocol="rest",version="2"} 1`,
		`clinfer_inference_request_duration_seconds_count{model="affine",protocol="rest",version="2"} 8`,
		`clinfer_inference_queue_duration_seconds_count{model="affine",version="2"} 8`,
		`clinfer_inference_compute_duration_seconds_count{model="affine",version="2"} 8`,
		`clinfer_inference_batch_size_sum{model="affine",version="2"} 8`,
		`clinfer_inference_pending_requests{model="affine",version="2"} 0`,
		`clinfer_model_ready{model="affine",version="2"} 1`,
		`http_requests_total{code="200",handler="POST /v2/models/{name}/infer",method="POST"} 8`,
		`go_goroutines`,
	} {
		assert.Contains(t, m, want)
	}
}

// TestReshapeConfig: config.json's reshape fixes the input's shape before
// compiling; a shape the input cannot take fails the load with a reason.
func TestReshapeConfig(t *testing.T) {
	e, dir := newEnv(t, serve.Options{}, `{"device": "CPU", "reshape": {"x": [2, 4]}}`)
	code, _, body := do(t, "GET", e.URL+"/v2/models/affine", nil, nil)
	require.Equal(t, 200, code)
	assert.Contains(t, string(body), `"inputs":[{"name":"x","datatype":"FP32","shape":[2,4]}]`)
	code, _, body = do(t, "POST", e.URL+"/v2/models/affine/infer", jsonInfer([]float32{1, 1, 1, 1}, 1), nil)
	assert.Equal(t, 400, code, "batch 1 no longer fits: %s", body)

	servetest.WriteModel(t, dir, "bad", 1, servetest.Affine(1), `{"device": "CPU", "reshape": {"x": [1, 5]}}`)
	servetest.WriteModel(t, dir, "nox", 1, servetest.Affine(1), `{"device": "CPU", "reshape": {"z": [1, 4]}}`)
	require.NoError(t, e.Server.Rescan(context.Background()))
	idx, err := e.Server.Index(false)
	require.NoError(t, err)
	reasons := map[string]string{}
	for _, r := range idx {
		reasons[r.Name] = r.Reason
	}
	assert.Contains(t, reasons["bad"], `reshape "x" to [1 5]`)
	assert.Contains(t, reasons["nox"], `no input "z"`)
}

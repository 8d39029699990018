package serve_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/internal/servetest"
	"github.com/clinfer/clinfer/serve"
	"github.com/clinfer/clinfer/serve/inferencepb"
)

// limitsEnv serves the affine model (CPU) added with AddModel.
func limitsEnv(t *testing.T, opts serve.Options, cfg serve.ModelConfig) *servetest.Env {
	core := clinfer.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	m, err := core.ReadModelFrom(bytes.NewReader(servetest.Affine(2)))
	require.NoError(t, err)
	opts.Core = core
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := serve.New(opts)
	require.NoError(t, err)
	cfg.Device = "CPU"
	require.NoError(t, s.AddModel(context.Background(), "affine", m, cfg))
	return servetest.Start(t, s)
}

const oneRow = `{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}`

func grpcOneRow() *inferencepb.ModelInferRequest {
	return &inferencepb.ModelInferRequest{ModelName: "affine", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{
		Name: "x", Datatype: "FP32", Shape: []int64{1, 4}, Contents: &inferencepb.InferTensorContents{Fp32Contents: []float32{1, 2, 3, 4}}}}}
}

// TestQueueFull: a request that finds the model's queue full is refused
// at once with 429 / RESOURCE_EXHAUSTED, and served once there is room.
func TestQueueFull(t *testing.T) {
	e := limitsEnv(t, serve.Options{}, serve.ModelConfig{MaxQueueSize: 3})
	admit, _ := serve.QueueCaps(e.Server, "affine")
	release := serve.Hold(e.Server, "affine", admit, 0) // as many requests as the queue and the pool hold
	resp, err := http.Post(e.URL+"/v2/models/affine/infer", "application/json", strings.NewReader(oneRow))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Contains(t, string(body), `{"error":"model \"affine\" version 1: queue full`)
	_, err = e.GRPC.ModelInfer(context.Background(), grpcOneRow())
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	release()
	_, err = e.GRPC.ModelInfer(context.Background(), grpcOneRow())
	assert.NoError(t, err)
}

// TestDisconnectCancels: a client that goes away while its request waits
// cancels it: the server counts it cancelled and frees its place.
func TestDisconnectCancels(t *testing.T) {
	e := limitsEnv(t, serve.Options{}, serve.ModelConfig{})
	_, exec := serve.QueueCaps(e.Server, "affine")
	release := serve.Hold(e.Server, "affine", 0, exec) // every inference request busy: the next one queues
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "POST", e.URL+"/v2/models/affine/infer", strings.NewReader(oneRow))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { // ends when the client gives up
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return serve.Pending(e.Server, "affine") == 1 }, 10*time.Second, time.Millisecond, "the request is queued")
	cancel()
	assert.Error(t, <-done)
	require.Eventually(t, func() bool { return serve.Pending(e.Server, "affine") == 0 }, 10*time.Second, time.Millisecond, "the server let the cancelled request go")
	release()
	assert.Equal(t, 1.0, serve.Outcomes(e.Server, "canceled"))
}

// TestInferTimeout: an inference over the timeout is 504 /
// DEADLINE_EXCEEDED.
func TestInferTimeout(t *testing.T) {
	e := limitsEnv(t, serve.Options{InferTimeout: 50 * time.Millisecond}, serve.ModelConfig{})
	_, exec := serve.QueueCaps(e.Server, "affine")
	defer serve.Hold(e.Server, "affine", 0, exec)()
	resp, err := http.Post(e.URL+"/v2/models/affine/infer", "application/json", strings.NewReader(oneRow))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusGatewayTimeout, resp.StatusCode)
	_, err = e.GRPC.ModelInfer(context.Background(), grpcOneRow())
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
}

// TestSlowloris: a client that sends its header a byte at a time is cut
// off at the header timeout instead of holding the connection.
func TestSlowloris(t *testing.T) {
	core := clinfer.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	s, err := serve.New(serve.Options{Core: core, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := s.HTTPServer(l.Addr().String())
	hs.ReadHeaderTimeout = 300 * time.Millisecond
	served := make(chan struct{})
	go func() { _ = hs.Serve(l); close(served) }() // ends at Close
	defer func() { require.NoError(t, hs.Close()); <-served }()

	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	header := "GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 250)
	var werr error
	for i := 0; i < len(header) && werr == nil; i++ {
		_, werr = c.Write([]byte{header[i]}) // 250 bytes at 20 ms: 5 s for the header
		time.Sleep(20 * time.Millisecond)
	}
	require.Error(t, werr, "the server closed the connection before the slow header was complete")
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	b, _ := io.ReadAll(c)
	assert.NotContains(t, string(b), "200 OK", "the slow request is never served")
}

package main

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/internal/servetest"
	"github.com/clinfer/clinfer/serve"
)

// TestLoad drives an in-process server with every protocol, bounded in
// time and count, and reads its overhead from /metrics.
func TestLoad(t *testing.T) {
	core := clinfer.NewCore()
	t.Cleanup(func() { assert.NoError(t, core.Close()) })
	s, err := serve.New(serve.Options{Core: core, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	m, err := core.ReadModelFrom(bytes.NewReader(servetest.Affine(2)))
	require.NoError(t, err)
	require.NoError(t, s.AddModel(t.Context(), "m", m, serve.ModelConfig{Device: "CPU"}))
	e := servetest.Start(t, s)
	tg := target{url: e.URL, grpcAddr: e.Addr, model: "m", input: "x", shape: []int64{1, servetest.Width}, data: []float32{1, 2, 3, 4}, outputs: 1}
	for _, p := range Protocols {
		before, err := scrape(e.URL)
		require.NoError(t, err)
		r, err := load(tg, p, 2, 5*time.Second, 50)
		require.NoError(t, err)
		assert.Zero(t, r.Errors, r.FirstError)
		assert.LessOrEqual(t, r.Count, 50, "bounded in count")
		assert.Positive(t, r.Count)
		assert.Positive(t, r.P50MS)
		assert.GreaterOrEqual(t, r.P99MS, r.P50MS)
		after, err := scrape(e.URL)
		require.NoError(t, err)
		assert.Equal(t, float64(r.Count), after.count-before.count, "the server counted every request")
		assert.Positive(t, after.overheadMS(before))
	}
	var out strings.Builder
	writeTable(&out, []row{{Clients: 1, Server: []result{{Protocol: "grpc"}}, Overhead: map[string]float64{}}})
	assert.Contains(t, out.String(), "server overhead per request")
}

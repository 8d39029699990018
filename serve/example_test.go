package serve_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/internal/servetest"
	"github.com/clinfer/clinfer/serve"
)

// Example mounts the server's REST side on a program's own HTTP server
// (here an httptest one) and runs one inference.
func Example() {
	core := clinfer.NewCore()
	defer core.Close()
	s, err := serve.New(serve.Options{Core: core, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	m, err := core.ReadModelFrom(bytes.NewReader(servetest.Affine(2))) // y = 2x + 1
	if err != nil {
		panic(err)
	}
	if err := s.AddModel(context.Background(), "affine", m, serve.ModelConfig{Device: "CPU"}); err != nil {
		panic(err)
	}
	if err := s.Start(context.Background()); err != nil {
		panic(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()

	resp, err := http.Post(hs.URL+"/v2/models/affine/infer", "application/json",
		strings.NewReader(`{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[0,1,2,3]}]}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 {"model_name":"affine","model_version":"1","outputs":[{"name":"y","datatype":"FP32","shape":[1,4],"data":[1,3,5,7]}]}
}

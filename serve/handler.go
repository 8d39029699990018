package serve

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Extensions are the protocol extensions the server speaks.
var Extensions = []string{"model_repository", "binary_tensor_data"}

// Handler returns the REST side of the protocol, with /metrics:
//
//	GET  /v2/health/live, /v2/health/ready, /v2
//	GET  /v2/models/{name}[/versions/{version}]        model metadata
//	GET  /v2/models/{name}[/versions/{version}]/ready
//	POST /v2/models/{name}[/versions/{version}]/infer  JSON or binary tensors
//	POST /v2/repository/index, /v2/repository/models/{name}/load, .../unload
//	GET  /metrics                                      Prometheus
//
// Every response carries X-Request-Id (the client's, or a new one). With
// Options.Token every route but the health checks needs the bearer token.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2/health/live", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"live": true})
	})
	mux.HandleFunc("GET /v2/health/ready", func(w http.ResponseWriter, r *http.Request) {
		status := http.StatusOK
		if !s.Ready() {
			status = http.StatusServiceUnavailable
		}
		writeJSON(w, status, map[string]bool{"ready": status == http.StatusOK})
	})
	mux.HandleFunc("GET /v2", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.serverMetadata())
	})
	for _, prefix := range []string{"/v2/models/{name}", "/v2/models/{name}/versions/{version}"} {
		mux.HandleFunc("GET "+prefix, s.modelMetadataREST)
		mux.HandleFunc("GET "+prefix+"/ready", s.modelReadyREST)
		mux.HandleFunc("POST "+prefix+"/infer", s.infer)
	}
	mux.HandleFunc("POST /v2/repository/index", s.repositoryIndexREST)
	mux.HandleFunc("POST /v2/repository/models/{name}/load", s.repositoryLoadREST)
	mux.HandleFunc("POST /v2/repository/models/{name}/unload", s.repositoryUnloadREST)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.opts.Gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errorf(codeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	return s.middleware(mux)
}

// middleware gives every request its ID, checks the bearer token and
// counts the response in http_requests_total.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(HeaderRequestID)
		if id == "" || len(id) > 128 {
			id = newRequestID()
		}
		w.Header().Set(HeaderRequestID, id)
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
		sw := &statusWriter{ResponseWriter: w}
		health := strings.HasPrefix(r.URL.Path, "/v2/health/")
		if !health && !s.authorized(r.Header.Get("Authorization")) {
			writeError(sw, errorf(codeUnauthenticated, "missing or wrong bearer token (Authorization: Bearer TOKEN)"))
		} else {
			next.ServeHTTP(sw, r)
		}
		handler := r.Pattern
		if handler == "" {
			handler = "other"
		}
		s.metrics.http.WithLabelValues(handler, r.Method, strconv.Itoa(sw.status)).Inc()
	})
}

// authorized checks an Authorization header against Options.Token.
func (s *Server) authorized(header string) bool {
	if s.opts.Token == "" {
		return true
	}
	tok, ok := strings.CutPrefix(header, "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) == 1
}

// newRequestID makes a random 128-bit ID.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ServerMetadata is the server metadata response.
type ServerMetadata struct {
	Name       string   `json:"name"`
	Version    string   `json:"version"`
	Extensions []string `json:"extensions"`
}

func (s *Server) serverMetadata() ServerMetadata {
	return ServerMetadata{Name: s.opts.Name, Version: s.opts.Version, Extensions: Extensions}
}

// TensorMetadata describes one input or output: -1 marks a dynamic
// dimension.
type TensorMetadata struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
}

// ModelMetadata is the model metadata response.
type ModelMetadata struct {
	Name     string           `json:"name"`
	Versions []string         `json:"versions"`
	Platform string           `json:"platform"`
	Inputs   []TensorMetadata `json:"inputs"`
	Outputs  []TensorMetadata `json:"outputs"`
}

// Platform is what model metadata reports as the platform.
const Platform = "clinfer_onnx"

// modelMetadata describes a served version (the newest when ver is "").
func (s *Server) modelMetadata(name, ver string) (ModelMetadata, error) {
	v, err := s.acquire(name, ver)
	if err != nil {
		return ModelMetadata{}, err
	}
	defer v.release()
	md := ModelMetadata{Name: name, Platform: Platform}
	s.mu.RLock()
	if m := s.models[name]; m != nil {
		for _, n := range m.numbers() {
			md.Versions = append(md.Versions, strconv.FormatInt(n, 10))
		}
	}
	s.mu.RUnlock()
	for _, p := range v.inputs {
		md.Inputs = append(md.Inputs, TensorMetadata{Name: p.Name, Datatype: datatypeName(p.Type), Shape: portShape(p)})
	}
	for _, p := range v.outputs {
		md.Outputs = append(md.Outputs, TensorMetadata{Name: p.Name, Datatype: datatypeName(p.Type), Shape: portShape(p)})
	}
	return md, nil
}

func (s *Server) modelMetadataREST(w http.ResponseWriter, r *http.Request) {
	md, err := s.modelMetadata(r.PathValue("name"), r.PathValue("version"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, md)
}

func (s *Server) modelReadyREST(w http.ResponseWriter, r *http.Request) {
	v, err := s.acquire(r.PathValue("name"), r.PathValue("version"))
	if err != nil {
		writeError(w, err)
		return
	}
	v.release()
	writeJSON(w, http.StatusOK, map[string]any{"name": v.model, "ready": true})
}

func (s *Server) repositoryIndexREST(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Ready bool `json:"ready"`
	}
	body, err := readBody(w, r, 1<<20)
	if err == nil && len(strings.TrimSpace(string(body))) > 0 {
		if jerr := json.Unmarshal(body, &req); jerr != nil {
			err = errorf(codeInvalid, "malformed repository index request JSON: %v", jerr)
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	rows, err := s.Index(req.Ready)
	if err != nil {
		writeError(w, err)
		return
	}
	if rows == nil {
		rows = []IndexEntry{}
	}
	writeJSON(w, http.StatusOK, rows)
}

func (s *Server) repositoryLoadREST(w http.ResponseWriter, r *http.Request) {
	s.repositoryAction(w, r, "load", func(name string) error { return s.LoadModel(r.Context(), name) })
}

func (s *Server) repositoryUnloadREST(w http.ResponseWriter, r *http.Request) {
	s.repositoryAction(w, r, "unload", s.UnloadModel)
}

func (s *Server) repositoryAction(w http.ResponseWriter, r *http.Request, what string, f func(string) error) {
	name := r.PathValue("name")
	if _, err := readBody(w, r, 1<<20); err != nil {
		writeError(w, err)
		return
	}
	if err := f(name); err != nil {
		s.log.Warn("repository "+what+" failed", "request_id", requestID(r.Context()), "model", name, "error", err)
		if ae := classify(err); ae.code == codeInternal {
			err = errorf(codeInvalid, "%v", err) // a model that does not load is the repository's content, not a server fault
		}
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

// observe records a finished inference request in the metrics and the log.
func (s *Server) observe(ctx context.Context, protocol, name, ver string, v *version, start time.Time, tm timing, err error) {
	outcome := "success"
	level := slog.LevelDebug // an access log line per success costs at high rates: -log_level debug
	if err != nil {
		ae := classify(err)
		outcome = codeInfo[ae.code].outcome
		level = slog.LevelWarn
		if ae.code == codeInternal {
			level = slog.LevelError
		}
	}
	if v != nil {
		name, ver = v.model, strconv.FormatInt(v.number, 10)
	}
	total := time.Since(start)
	s.metrics.observe(protocol, name, ver, outcome, total, tm, v != nil && err == nil)
	if !s.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("request_id", requestID(ctx)), slog.String("protocol", protocol),
		slog.String("model", name), slog.String("version", ver), slog.String("outcome", outcome),
		slog.Float64("duration_ms", ms(total)), slog.Float64("queue_ms", ms(tm.queue)), slog.Float64("compute_ms", ms(tm.compute)),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	s.log.LogAttrs(ctx, level, "infer", attrs...)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// HTTPServer returns an http.Server for Handler on addr with the timeouts
// a server facing untrusted clients needs: the header must arrive within
// 10 s and the whole request within 60 s (a slowloris client is cut off),
// the response must be written within 120 s, and an idle keep-alive
// connection is closed after 120 s.
func (s *Server) HTTPServer(addr string) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      120 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

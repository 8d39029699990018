package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clinfer/clinfer"
)

// Options configure a Server. The zero value of every field but Core is a
// usable default.
type Options struct {
	// Core compiles the models (required); the Server does not close it.
	Core *clinfer.Core
	// Repository is a model repository directory (see package doc); ""
	// for none (models are added with AddModel).
	Repository string
	// PollInterval rescans the repository for new, changed and removed
	// models (0: only at Start and on the repository API's load/unload).
	PollInterval time.Duration
	// Logger gets the request and model logs (default slog.Default()).
	Logger *slog.Logger
	// Registerer gets the metrics (default: a registry of the Server's own,
	// with the Go and process collectors, served at /metrics by Handler).
	Registerer prometheus.Registerer
	// Gatherer is what /metrics serves (default: that registry; set it
	// with Registerer).
	Gatherer prometheus.Gatherer
	// MaxRequestBytes bounds a request's body (REST) or message (gRPC),
	// checked before it is read (default DefaultMaxRequestBytes).
	MaxRequestBytes int64
	// MaxTensorBytes bounds one input tensor, checked from its datatype
	// and shape before it is allocated (default MaxRequestBytes).
	MaxTensorBytes int64
	// InferTimeout bounds an inference, queueing included, for models
	// whose config has no timeout_ms (0: none; the client's deadline and
	// disconnect still apply).
	InferTimeout time.Duration
	// Token, when set, is the bearer token every request but the health
	// checks must carry (Authorization: Bearer TOKEN).
	Token string
	// Name and Version are what server metadata reports (default
	// "clinfer" and the module's version).
	Name, Version string
}

// DefaultMaxRequestBytes is Options.MaxRequestBytes's default: 64 MiB.
const DefaultMaxRequestBytes = 64 << 20

// Server serves the models of a repository (or added with AddModel) over
// the Open Inference Protocol. Mount Handler on an http.Server and
// RegisterGRPC on a grpc.Server (made with GRPCOptions); Close it after
// both have shut down. It is safe for concurrent use.
type Server struct {
	opts    Options
	core    *clinfer.Core
	log     *slog.Logger
	metrics *metrics

	mu     sync.RWMutex
	models map[string]*model
	loadMu sync.Mutex // serialises loads, unloads and rescans

	ready    atomic.Bool
	retiring sync.WaitGroup // goroutines closing replaced versions
	closed   atomic.Bool
}

// model is one model's entry: its served versions and its state.
type model struct {
	name     string
	versions map[int64]*version
	state    string       // READY, UNAVAILABLE, LOADING
	reason   string       // why it is not READY, or why its last reload failed
	static   *staticModel // added with AddModel, not from the repository
	// unloaded: unloaded on request, so it does not count against
	// readiness; filesSig: the repository files it was unloaded or failed
	// on, so a rescan tries again only when they change.
	unloaded bool
	filesSig string
}

// staticModel is what AddModel gave, to reload it.
type staticModel struct {
	m   *clinfer.Model
	cfg ModelConfig
}

// Model states, as the repository extension reports them.
const (
	StateReady       = "READY"
	StateUnavailable = "UNAVAILABLE"
	StateLoading     = "LOADING"
)

// New returns a Server with no models; Start loads the repository.
func New(opts Options) (*Server, error) {
	if opts.Core == nil {
		return nil, fmt.Errorf("serve: Options.Core is nil: %w", clinfer.ErrInvalidArgument)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.MaxTensorBytes <= 0 {
		opts.MaxTensorBytes = opts.MaxRequestBytes
	}
	if opts.Name == "" {
		opts.Name = "clinfer"
	}
	if opts.Version == "" {
		opts.Version = moduleVersion()
	}
	if opts.Registerer == nil {
		reg := prometheus.NewRegistry()
		opts.Registerer, opts.Gatherer = reg, reg
		reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	} else if opts.Gatherer == nil {
		opts.Gatherer = prometheus.DefaultGatherer
	}
	s := &Server{opts: opts, core: opts.Core, log: opts.Logger, models: map[string]*model{}}
	m, err := newMetrics(s)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	return s, nil
}

// Start loads every model of the repository (a model that fails is
// UNAVAILABLE with the reason, and the others serve), marks the server
// ready, and when PollInterval is set rescans the repository until ctx is
// done; it returns once the first scan is over. The polling goroutine ends
// when ctx is done; Close waits for it.
func (s *Server) Start(ctx context.Context) error {
	if s.opts.Repository != "" {
		if err := s.Rescan(ctx); err != nil {
			return err
		}
	}
	s.ready.Store(true)
	if s.opts.Repository != "" && s.opts.PollInterval > 0 {
		s.retiring.Add(1)
		go func() { // ends when ctx is done
			defer s.retiring.Done()
			t := time.NewTicker(s.opts.PollInterval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					if err := s.Rescan(ctx); err != nil && ctx.Err() == nil {
						s.log.Error("repository rescan failed", "repository", s.opts.Repository, "error", err)
					}
				}
			}
		}()
	}
	return nil
}

// SetReady sets what the readiness checks answer: a draining server says
// it is not ready so that load balancers stop sending it requests, while
// the requests it has are answered.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// Ready reports whether the server is ready: started, not draining, and
// every model it knows is ready.
func (s *Server) Ready() bool {
	if !s.ready.Load() || s.closed.Load() {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, m := range s.models {
		if m.state != StateReady && !m.unloaded {
			return false
		}
	}
	return true
}

// AddModel compiles m as the only version (1) of a model called name,
// with cfg, replacing a model of that name. cmd/serve -model uses it.
func (s *Server) AddModel(ctx context.Context, name string, m *clinfer.Model, cfg ModelConfig) error {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	return s.loadStatic(ctx, name, &staticModel{m: m, cfg: cfg})
}

// loadStatic (re)compiles a model added with AddModel.
func (s *Server) loadStatic(ctx context.Context, name string, st *staticModel) error {
	if err := st.cfg.Validate(); err != nil {
		return err
	}
	s.setLoading(name, st)
	v, err := s.compile(ctx, name, 1, "static", st.m.Clone(), st.cfg)
	if err != nil {
		s.setFailed(name, st, "", err)
		return err
	}
	s.swap(&model{name: name, versions: map[int64]*version{1: v}, state: StateReady, static: st})
	return nil
}

// compile reads nothing: it reshapes m as cfg says and compiles it.
func (s *Server) compile(ctx context.Context, name string, number int64, sig string, m *clinfer.Model, cfg ModelConfig) (*version, error) {
	if err := cfg.reshape(m); err != nil {
		return nil, fmt.Errorf("serve: model %q version %d: %w", name, number, err)
	}
	dev, props := cfg.compileTarget()
	t0 := time.Now()
	cm, err := s.core.CompileModel(ctx, m, dev, props)
	if err != nil {
		return nil, fmt.Errorf("serve: model %q version %d on %s: %w", name, number, dev, err)
	}
	s.log.Info("model loaded", "model", name, "version", number, "device", dev, "compile_ms", time.Since(t0).Milliseconds())
	return newVersion(name, number, sig, cm, dev, cfg, s.opts.InferTimeout), nil
}

// setLoading marks a model that serves nothing yet as LOADING while it
// compiles (a model that serves keeps serving meanwhile).
func (s *Server) setLoading(name string, st *staticModel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.models[name]; m == nil || len(m.versions) == 0 {
		s.models[name] = &model{name: name, versions: map[int64]*version{}, state: StateLoading, reason: "loading", static: st}
	}
}

// setFailed records a failed load of the files filesSig names: the
// versions served before stay.
func (s *Server) setFailed(name string, st *staticModel, filesSig string, err error) {
	s.log.Error("model load failed", "model", name, "error", err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.models[name]; m != nil && len(m.versions) > 0 {
		m.reason, m.filesSig = err.Error(), filesSig
		return
	}
	s.models[name] = &model{name: name, versions: map[int64]*version{}, state: StateUnavailable, reason: err.Error(), static: st, filesSig: filesSig}
}

// swap makes next the model's entry (nil removes it) and retires the
// versions of the old entry that next does not keep: each is closed on a
// goroutine of its own once its last request is answered.
func (s *Server) swap(next *model) {
	s.mu.Lock()
	old := s.models[next.name]
	if next.state == "" {
		delete(s.models, next.name)
	} else {
		s.models[next.name] = next
	}
	s.mu.Unlock()
	if old == nil {
		return
	}
	for n, v := range old.versions {
		if next.versions[n] == v {
			continue
		}
		s.retiring.Add(1)
		go func() { // ends once v's requests are answered
			defer s.retiring.Done()
			v.inflight.Wait()
			if err := v.cm.Close(); err != nil {
				s.log.Error("closing a replaced model version", "model", v.model, "version", v.number, "error", err)
			}
			s.log.Info("model version unloaded", "model", v.model, "version", v.number)
		}()
	}
}

// acquire finds a served version (the newest when ver is "") and holds it
// until release is called.
func (s *Server) acquire(name, ver string) (*version, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := s.models[name]
	if m == nil {
		return nil, errorf(codeNotFound, "unknown model %q", name)
	}
	if len(m.versions) == 0 {
		return nil, errorf(codeUnavailable, "model %q is %s: %s", name, m.state, m.reason)
	}
	var v *version
	if ver == "" {
		for _, c := range m.versions {
			if v == nil || c.number > v.number {
				v = c
			}
		}
	} else {
		n, err := strconv.ParseInt(ver, 10, 64)
		if err != nil {
			return nil, errorf(codeInvalid, "model %q: version %q is not an integer", name, ver)
		}
		if v = m.versions[n]; v == nil {
			return nil, errorf(codeNotFound, "model %q has no version %d served (versions: %v)", name, n, m.numbers())
		}
	}
	v.inflight.Add(1)
	return v, nil
}

// release ends a request's hold on v.
func (v *version) release() { v.inflight.Done() }

// numbers are the served version numbers, ascending.
func (m *model) numbers() []int64 {
	var ns []int64
	for n := range m.versions {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// Close unloads every model once its requests are answered and waits for
// the polling goroutine (cancel Start's ctx first); shut the HTTP and gRPC
// servers down before. Later calls return nil.
func (s *Server) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	s.mu.RLock()
	var names []string
	for n := range s.models {
		names = append(names, n)
	}
	s.mu.RUnlock()
	for _, n := range names {
		s.swap(&model{name: n})
	}
	s.retiring.Wait()
	return nil
}

// errNoRepository is the repository API's answer without a repository.
var errNoRepository = errors.New("serve: the server has no model repository (start it with one)")

// requestIDKey is the context key of the request's ID, for the logs.
type requestIDKey struct{}

// requestID returns the request ID ctx carries ("" when none).
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// statusWriter records an http.ResponseWriter's status.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the first status.
func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write records 200 when no status was written.
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/netutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/internal/cliutil"
	"github.com/clinfer/clinfer/internal/defaultmodel"
	"github.com/clinfer/clinfer/serve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stderr, nil)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", strings.Join(strings.Fields(err.Error()), " "))
		os.Exit(1)
	}
}

type options struct {
	httpAddr, grpcAddr         string
	repository, model, name    string
	poll                       time.Duration
	device, hint, cacheDir     string
	nstreams, batch, batchWait int
	shapes                     cliutil.ListFlag
	queue, maxConns            int
	inferTimeout, drain        time.Duration
	maxRequest                 int64
	token, tokenFile           string
	tlsCert, tlsKey            string
	logLevel, logFormat        string
}

func newFlagSet(stderr io.Writer) (*flag.FlagSet, *options) {
	var o options
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.httpAddr, "http", ":8000", "REST (and /metrics) listen address; \"\" for none")
	fs.StringVar(&o.grpcAddr, "grpc", ":8001", "gRPC listen address; \"\" for none")
	fs.StringVar(&o.repository, "repository", "", "model repository directory: <model>/<version>/model.onnx, optional <model>/config.json")
	fs.DurationVar(&o.poll, "poll", 0, "rescan the repository this often (0: only on the repository API's load)")
	fs.StringVar(&o.model, "model", "", "serve this one ONNX file (default: the embedded default model, when there is no -repository)")
	fs.StringVar(&o.name, "name", "", "the -model's name (default: its file name without .onnx)")
	fs.StringVar(&o.device, "d", serve.DefaultDevice, "-model's device: GPU, CPU, AUTO, HETERO:GPU,CPU, GPU.1")
	fs.StringVar(&o.hint, "hint", "", "-model's PERFORMANCE_HINT: latency, throughput, cumulative_throughput")
	fs.IntVar(&o.nstreams, "nstreams", 0, "-model's NUM_STREAMS (0: the device's default)")
	fs.IntVar(&o.batch, "batch", 0, "gather up to this many concurrent requests of -model into one inference on BATCH over -d (0 or 1: no batching)")
	fs.IntVar(&o.batchWait, "batch_delay_ms", 5, "with -batch: how long a batch waits to fill (AUTO_BATCH_TIMEOUT)")
	fs.Var(&o.shapes, "shape", "fix -model's input shape before compiling: NAME=[1,3,48,192] (repeatable)")
	fs.StringVar(&o.cacheDir, "cache_dir", "", "-model's CACHE_DIR")
	fs.IntVar(&o.queue, "queue", serve.DefaultQueueSize, "-model's queue: requests waiting beyond those running before 429")
	fs.DurationVar(&o.inferTimeout, "infer_timeout", 0, "bound on an inference, queueing included (0: none); a model's config.json timeout_ms wins")
	fs.Int64Var(&o.maxRequest, "max_request_bytes", serve.DefaultMaxRequestBytes, "largest request body (REST) or message (gRPC), and largest input tensor")
	fs.IntVar(&o.maxConns, "max_connections", 1024, "most open connections per listener (REST, gRPC); more wait to be accepted")
	fs.StringVar(&o.token, "token", "", "bearer token every request but the health checks must carry")
	fs.StringVar(&o.tokenFile, "token_file", "", "read the bearer token from this file")
	fs.StringVar(&o.tlsCert, "tls_cert", "", "serve REST and gRPC over TLS with this certificate (PEM) ...")
	fs.StringVar(&o.tlsKey, "tls_key", "", "... and this key (PEM)")
	fs.DurationVar(&o.drain, "drain_timeout", 30*time.Second, "on SIGTERM, how long in-flight requests have to finish")
	fs.StringVar(&o.logLevel, "log_level", "info", "debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log_format", "json", "json or text")
	return fs, &o
}

// listening tells a test where the server listens.
type listening func(httpAddr, grpcAddr string)

// run serves until ctx is done, then drains.
func run(ctx context.Context, args []string, stderr io.Writer, onListen listening) error {
	fs, o := newFlagSet(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	log, err := newLogger(stderr, o.logLevel, o.logFormat)
	if err != nil {
		return err
	}
	token := o.token
	if o.tokenFile != "" {
		b, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return err
		}
		token = strings.TrimSpace(string(b))
	}
	var tlsCfg *tls.Config
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return errors.New("-tls_cert and -tls_key go together")
	}
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return fmt.Errorf("TLS: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}

	core := clinfer.NewCore()
	defer core.Close()
	srv, err := serve.New(serve.Options{
		Core: core, Repository: o.repository, PollInterval: o.poll, Logger: log,
		MaxRequestBytes: o.maxRequest, InferTimeout: o.inferTimeout, Token: token,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	if o.repository == "" {
		if err := addModel(ctx, core, srv, o); err != nil {
			return err
		}
	} else if o.model != "" {
		return errors.New("-model and -repository: give one")
	}
	life, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := srv.Start(life); err != nil {
		return err
	}
	return listenAndServe(ctx, srv, o, tlsCfg, log, onListen)
}

// addModel adds -model (or the embedded model) with the flags' config.
func addModel(ctx context.Context, core *clinfer.Core, srv *serve.Server, o *options) error {
	var m *clinfer.Model
	var err error
	name := o.name
	if o.model == "" {
		m, err = core.ReadModelFrom(bytes.NewReader(defaultmodel.ONNX))
		if name == "" {
			name = strings.TrimSuffix(defaultmodel.Name, ".onnx")
		}
	} else {
		m, err = core.ReadModel(o.model)
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(o.model), ".onnx")
		}
	}
	if err != nil {
		return err
	}
	cfg := serve.ModelConfig{Device: o.device, PerformanceHint: strings.ToUpper(o.hint), NumStreams: o.nstreams,
		CacheDir: o.cacheDir, MaxQueueSize: o.queue}
	if o.batch > 1 {
		cfg.Batching = &serve.Batching{MaxBatchSize: o.batch, MaxQueueDelayMS: o.batchWait}
	}
	if len(o.shapes) > 0 {
		shapes, err := cliutil.ParseShapes(m, o.shapes)
		if err != nil {
			return err
		}
		cfg.Reshape = map[string][]int64{}
		for n, s := range shapes {
			cfg.Reshape[n] = s
		}
	}
	return srv.AddModel(ctx, name, m, cfg)
}

// listenAndServe serves REST and gRPC until ctx is done, then drains:
// not ready first, then the HTTP and gRPC servers finish their requests
// (at most -drain_timeout), then it returns.
func listenAndServe(ctx context.Context, srv *serve.Server, o *options, tlsCfg *tls.Config, log *slog.Logger, onListen listening) error {
	var hl, gl net.Listener
	var err error
	if o.httpAddr != "" {
		if hl, err = net.Listen("tcp", o.httpAddr); err != nil {
			return err
		}
		hl = netutil.LimitListener(hl, o.maxConns)
		if tlsCfg != nil {
			hl = tls.NewListener(hl, tlsCfg)
		}
	}
	if o.maxConns < 1 {
		return fmt.Errorf("-max_connections %d: want 1 or more", o.maxConns)
	}
	if o.grpcAddr != "" {
		if gl, err = net.Listen("tcp", o.grpcAddr); err != nil {
			if hl != nil {
				hl.Close()
			}
			return err
		}
		gl = netutil.LimitListener(gl, o.maxConns)
	}
	errs := make(chan error, 2)
	var hs *http.Server
	if hl != nil {
		hs = srv.HTTPServer(o.httpAddr)
		go func() { errs <- hs.Serve(hl) }() // ends at Shutdown
	}
	var gs *grpc.Server
	if gl != nil {
		gopts := srv.GRPCOptions()
		if tlsCfg != nil {
			gopts = append(gopts, grpc.Creds(credentials.NewTLS(tlsCfg)))
		}
		gs = grpc.NewServer(gopts...)
		srv.RegisterGRPC(gs)
		go func() { errs <- gs.Serve(gl) }() // ends at GracefulStop/Stop
	}
	ha, ga := addr(hl), addr(gl)
	log.Info("serving", "http", ha, "grpc", ga, "tls", tlsCfg != nil, "auth", o.token != "" || o.tokenFile != "")
	if onListen != nil {
		onListen(ha, ga)
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errs:
	}
	log.Info("draining", "timeout", o.drain.String())
	srv.SetReady(false)
	dctx, cancel := context.WithTimeout(context.Background(), o.drain)
	defer cancel()
	if hs != nil {
		if err := hs.Shutdown(dctx); err != nil {
			log.Warn("HTTP drain cut short", "error", err)
			hs.Close()
		}
	}
	if gs != nil {
		done := make(chan struct{})
		go func() { gs.GracefulStop(); close(done) }() // ends when the calls are answered, or at Stop
		select {
		case <-done:
		case <-dctx.Done():
			log.Warn("gRPC drain cut short")
			gs.Stop()
			<-done
		}
	}
	log.Info("stopped")
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return nil
}

func addr(l net.Listener) string {
	if l == nil {
		return ""
	}
	return l.Addr().String()
}

// newLogger makes the slog logger the flags ask for.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log_level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("-log_format %q: want json or text", format)
}

package servetest

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/clinfer/clinfer/internal/onnxbuild"
	"github.com/clinfer/clinfer/serve"
	"github.com/clinfer/clinfer/serve/inferencepb"
	"github.com/clinfer/clinfer/tensor"
)

// Width is the tiny model's input width: x is f32[batch, Width].
const Width = 4

// Affine is an ONNX model computing y = scale*x + 1 elementwise on
// x f32[batch, Width] with a dynamic batch: the output tells which
// version answered.
func Affine(scale float32) []byte {
	s, _ := tensor.FromF32(tensor.Shape{1}, []float32{scale})
	one, _ := tensor.FromF32(tensor.Shape{1}, []float32{1})
	return onnxbuild.New("affine", 13).
		Input("x", tensor.F32, []onnxbuild.Dim{{Param: "batch"}, {Size: Width}}).
		Output("y", tensor.F32, []onnxbuild.Dim{{Param: "batch"}, {Size: Width}}).
		Initializer("scale", s).Initializer("one", one).
		Node("Mul", "mul", []string{"x", "scale"}, []string{"t"}, nil).
		Node("Add", "add", []string{"t", "one"}, []string{"y"}, nil).
		Bytes()
}

// WriteModel writes data as dir/name/version/model.onnx and, when cfg is
// not "", dir/name/config.json.
func WriteModel(t testing.TB, dir, name string, version int, data []byte, cfg string) {
	vdir := filepath.Join(dir, name, strconv.Itoa(version))
	require.NoError(t, os.MkdirAll(vdir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(vdir, serve.ModelFile), data, 0o644))
	if cfg != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name, serve.ConfigFile), []byte(cfg), 0o644))
	}
}

// Env is a running server: its REST base URL, its gRPC address and a gRPC
// client.
type Env struct {
	Server *serve.Server
	URL    string // http://127.0.0.1:PORT
	Addr   string // gRPC 127.0.0.1:PORT
	GRPC   inferencepb.GRPCInferenceServiceClient

	http *http.Server
	grpc *grpc.Server
	conn *grpc.ClientConn
	done chan struct{}
	stop context.CancelFunc
}

// Start starts s (Start with a context Close cancels) on loopback HTTP and
// gRPC listeners and dials it. Close (also registered with t.Cleanup)
// shuts everything down and closes s; the caller closes the Core.
func Start(t testing.TB, s *serve.Server) *Env {
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, s.Start(ctx))
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	e := &Env{Server: s, URL: "http://" + hl.Addr().String(), Addr: gl.Addr().String(), stop: cancel, done: make(chan struct{})}
	e.http = s.HTTPServer(hl.Addr().String())
	e.grpc = grpc.NewServer(s.GRPCOptions()...)
	s.RegisterGRPC(e.grpc)
	served := make(chan struct{}, 2)
	go func() { _ = e.http.Serve(hl); served <- struct{}{} }() // ends at Shutdown
	go func() { _ = e.grpc.Serve(gl); served <- struct{}{} }() // ends at Stop
	go func() { <-served; <-served; close(e.done) }()          // ends when both have
	e.conn, err = grpc.NewClient(e.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	e.GRPC = inferencepb.NewGRPCInferenceServiceClient(e.conn)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e
}

// Close shuts the servers down (in-flight requests finish), closes the
// client and the Server. Later calls return nil.
func (e *Env) Close() error {
	if e.stop == nil {
		return nil
	}
	e.stop()
	e.stop = nil
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := e.http.Shutdown(ctx)
	e.grpc.GracefulStop()
	<-e.done
	return errors.Join(err, e.conn.Close(), e.Server.Close())
}

// Bytes is v as little-endian bytes.
func Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// F32s reads little-endian float32s.
func F32s(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/clinfer/clinfer/internal/servetest"
	"github.com/clinfer/clinfer/serve/inferencepb"
)

// start runs the command with args on loopback ports until the returned
// stop is called; stop returns run's error.
func start(t *testing.T, args ...string) (httpAddr, grpcAddr string, logs *lockedWriter, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs = &lockedWriter{w: &bytes.Buffer{}}
	addrs := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() { // ends when ctx is cancelled and the server has drained
		done <- run(ctx, append([]string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0", "-d", "CPU"}, args...), logs,
			func(h, g string) { addrs <- [2]string{h, g} })
	}()
	select {
	case a := <-addrs:
		return a[0], a[1], logs, func() error { cancel(); return <-done }
	case err := <-done:
		cancel()
		t.Fatalf("serve did not start: %v\n%s", err, logs)
	}
	return "", "", nil, nil
}

// TestEmbeddedModel: with no model flag the embedded model is served as
// "smallcnn", and its metadata says so.
func TestEmbeddedModel(t *testing.T) {
	h, _, logs, stop := start(t, "-log_format", "text")
	resp, err := http.Get("http://" + h + "/v2/models/smallcnn")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, string(body), `"inputs":[{"name":"image","datatype":"FP32","shape":[-1,3,64,64]}]`)
	require.NoError(t, stop())
	assert.Contains(t, logs.String(), "msg=serving")
	assert.Contains(t, logs.String(), "msg=stopped")
}

// TestDrainOnSignal: a request still arriving when the signal comes is
// answered before run returns.
func TestDrainOnSignal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "affine.onnx")
	require.NoError(t, os.WriteFile(path, servetest.Affine(2), 0o644))
	h, _, _, stop := start(t, "-model", path)
	body := `{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}`
	c, err := net.Dial("tcp", h)
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "POST /v2/models/affine/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:20])
	require.NoError(t, err)
	// A request on a later connection answered means the server has
	// accepted the first one (it accepts in order).
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := probe.Get("http://" + h + "/v2/health/live")
	require.NoError(t, err)
	resp.Body.Close()

	stopped := make(chan error, 1)
	go func() { stopped <- stop() }() // SIGTERM: drains, ends when the request is answered
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-stopped:
		t.Fatalf("run returned with a request in flight: %v", err)
	default:
	}
	_, err = io.WriteString(c, body[20:])
	require.NoError(t, err)
	resp, err = http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, string(got), `"data":[3,5,7,9]`)
	require.NoError(t, <-stopped)
}

// TestTLSAndToken: with a certificate and a token file, REST and gRPC
// speak TLS and want the token.
func TestTLSAndToken(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM := selfSigned(t)
	cert, key, tok := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem"), filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(cert, certPEM, 0o600))
	require.NoError(t, os.WriteFile(key, keyPEM, 0o600))
	require.NoError(t, os.WriteFile(tok, []byte("t0k\n"), 0o600))
	h, g, _, stop := start(t, "-tls_cert", cert, "-tls_key", key, "-token_file", tok)
	defer func() { require.NoError(t, stop()) }()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(certPEM))
	tlsCfg := &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	defer client.CloseIdleConnections()
	get := func(auth string) int {
		req, err := http.NewRequest("GET", "https://"+h+"/v2/models/smallcnn", nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, 401, get(""))
	assert.Equal(t, 200, get("Bearer t0k"))
	resp, err := http.Get("http://" + h + "/v2/health/live")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 400, resp.StatusCode, "plain HTTP is refused on a TLS port")

	conn, err := grpc.NewClient(g, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	require.NoError(t, err)
	defer conn.Close()
	c := inferencepb.NewGRPCInferenceServiceClient(conn)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer t0k")
	md, err := c.ModelMetadata(ctx, &inferencepb.ModelMetadataRequest{Name: "smallcnn"})
	require.NoError(t, err)
	assert.Equal(t, "smallcnn", md.Name)
}

// TestBadFlags: flag mistakes are errors, not a server.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-tls_cert", "x.pem"},
		{"-log_level", "loud"},
		{"-model", "/nonexistent.onnx", "-http", "127.0.0.1:0", "-grpc", ""},
		{"-repository", "/nonexistent", "-http", "127.0.0.1:0", "-grpc", ""},
		{"extra"},
	} {
		err := run(context.Background(), args, io.Discard, nil)
		assert.Error(t, err, "%q", args)
	}
}

// selfSigned makes a certificate for localhost and 127.0.0.1.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// lockedWriter serialises the log writes of the server's goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// TestSIGTERM builds the command and stops it with a real SIGTERM: it
// drains and exits 0.
func TestSIGTERM(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "serve")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())
	cmd := exec.Command(bin, "-d", "CPU", "-http", "127.0.0.1:0", "-grpc", "", "-log_format", "text")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stderr)
	var logs []string
	for sc.Scan() {
		logs = append(logs, sc.Text())
		if strings.Contains(sc.Text(), "msg=serving") {
			break
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	for sc.Scan() {
		logs = append(logs, sc.Text())
	}
	require.NoError(t, cmd.Wait(), "exit status after SIGTERM: %s", strings.Join(logs, "\n"))
	all := strings.Join(logs, "\n")
	assert.Contains(t, all, "msg=draining")
	assert.Contains(t, all, "msg=stopped")
}

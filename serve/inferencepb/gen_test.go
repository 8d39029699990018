package inferencepb_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// protocLine is the header line naming protoc's version, which a newer
// Debian protoc changes without changing the code.
var protocLine = regexp.MustCompile(`(?m)^// \tprotoc +v.*\n`)

// TestGeneratedCodeIsUpToDate regenerates the Go files from
// grpc_service.proto and compares them with the committed ones, so a
// change to the .proto or to the pinned generators without `go generate
// ./serve/inferencepb` fails CI.
func TestGeneratedCodeIsUpToDate(t *testing.T) {
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Skip("no protoc on PATH: `make deps` installs Debian's protobuf-compiler")
	}
	out := t.TempDir()
	cmd := exec.Command("bash", "gen.sh", out)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Run(), "bash gen.sh")
	for _, name := range []string{"grpc_service.pb.go", "grpc_service_grpc.pb.go"} {
		got, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		want, err := os.ReadFile(name)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(protocLine.ReplaceAll(got, nil), protocLine.ReplaceAll(want, nil)),
			"%s is stale: run `go generate ./serve/inferencepb`", name)
	}
}

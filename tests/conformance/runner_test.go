package conformance

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

func TestGuarded(t *testing.T) {
	defer func(g time.Duration) { cancelGrace = g }(cancelGrace)
	cancelGrace = 50 * time.Millisecond
	block := make(chan struct{})
	defer close(block)
	tests := []struct {
		name    string
		fn      func(ctx context.Context) (Outcome, error)
		want    Outcome
		wantErr string
	}{
		{"passes", func(context.Context) (Outcome, error) { return Passed, nil }, Passed, ""},
		{"unsupported", func(context.Context) (Outcome, error) { return UnsupportedOp, driver.ErrUnsupported }, UnsupportedOp, "unsupported"},
		{"panic becomes failure with stack", func(context.Context) (Outcome, error) { panic("kernel bug") }, Failed, "panic: kernel bug"},
		{"timeout honouring ctx", func(ctx context.Context) (Outcome, error) {
			<-ctx.Done()
			return Failed, ctx.Err()
		}, Failed, "timed out after 20ms: context deadline exceeded"},
		{"timeout ignoring ctx", func(context.Context) (Outcome, error) {
			<-block
			return Passed, nil
		}, Failed, "did not return within"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := guarded(20*time.Millisecond, tc.fn)
			if err != nil && out == Passed {
				out = Failed // as runGuarded does
			}
			assert.Equal(t, tc.want, out)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
	t.Run("panic carries the stack", func(t *testing.T) {
		_, err := guarded(time.Second, func(context.Context) (int, error) { panic(errors.New("boom")) })
		require.Error(t, err)
		assert.Contains(t, err.Error(), "runtime/debug.Stack")
	})
}

func TestPickName(t *testing.T) {
	ports := []string{"x", "y"}
	tests := []struct {
		name    string
		file    string
		i       int
		want    string
		wantErr bool
	}{
		{"by name", "y", 0, "y", false},
		{"empty name uses order", "", 1, "y", false},
		{"unknown name uses order", "initializer_as_input", 0, "x", false},
		{"beyond the ports", "z", 2, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pickName(tc.file, tc.i, ports)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// uint16Proto encodes a TensorProto of type UINT16 with int32_data, as the
// ONNX 1.12 bfloat16 test data does.
func uint16Proto(name string, dims []int64, bits []uint16) []byte {
	var b []byte
	for _, d := range dims {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(d))
	}
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, 4) // UINT16
	var packed []byte
	for _, v := range bits {
		packed = protowire.AppendVarint(packed, uint64(v))
	}
	b = protowire.AppendTag(b, 5, protowire.BytesType)
	b = protowire.AppendBytes(b, packed)
	b = protowire.AppendTag(b, 8, protowire.BytesType)
	return protowire.AppendBytes(b, []byte(name))
}

func TestBF16Bits(t *testing.T) {
	// 0x3F80 is 1.0 and 0xC000 is -2.0 in bfloat16.
	dir := t.TempDir()
	p := filepath.Join(dir, "input_0.pb")
	require.NoError(t, os.WriteFile(p, uint16Proto("input", []int64{2}, []uint16{0x3F80, 0xC000}), 0o644))

	bf16Port := []driver.PortInfo{{Name: "input", Type: tensor.BF16, Shape: graph.ShapeOf(2)}}
	x, name, err := readValue(p, 0, bf16Port)
	require.NoError(t, err)
	assert.Equal(t, "input", name)
	assert.Equal(t, tensor.BF16, x.Type())
	assert.Equal(t, []float64{1, -2}, x.Float64s())

	u16Port := []driver.PortInfo{{Name: "input", Type: tensor.U16, Shape: graph.ShapeOf(2)}}
	x, _, err = readValue(p, 0, u16Port)
	require.NoError(t, err)
	assert.Equal(t, tensor.U16, x.Type(), "a UINT16 tensor for a u16 port stays u16")
	assert.Equal(t, []uint16{0x3F80, 0xC000}, x.U16())
}

func TestListCases(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []string{"test_b", "test_a", "no_model"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, c), 0o755))
	}
	for _, c := range []string{"test_b", "test_a"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, c, "model.onnx"), nil, 0o644))
	}
	cases, err := listCases(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"test_a", "test_b"}, cases)

	_, err = listCases(filepath.Join(dir, "no_model"))
	assert.Error(t, err)
}

func TestSummary(t *testing.T) {
	s := newSummary()
	s.add("node", "node/test_a", Passed, nil)
	s.add("node", "node/test_b", Failed, errors.New("compare output \"y\": mismatch\nmore"))
	s.add("node", "node/test_c", UnsupportedOp, errors.New(`onnx: f.onnx: unsupported op: node "n": op type TopK (domain ai.onnx, opset 11) is not supported`))
	s.add("node", "node/test_d", UnsupportedOp, errors.New(`cpu: compile model "m": node "h": op Hardmax has no CPU kernel`))
	s.add("simple", "simple/test_e", Excluded, nil)
	s.add("node", "node/test_f", UnsupportedType, errors.New(`onnx: f.onnx: graph input "x": onnx: unsupported data type: UINT16`))
	s.add("node", "node/test_g", UnsupportedType, errors.New(`onnx: f.onnx: unsupported data type: graph input "s" is not a tensor (a sequence, map, optional or sparse value)`))
	table := s.table("CPU")
	assert.Contains(t, table, "passed failed unsupported-op unsupported-type excluded")
	assert.Regexp(t, `node\s+1\s+1\s+2\s+2\s+0\s+6\n`, table)
	assert.Regexp(t, `simple\s+0\s+0\s+0\s+0\s+1\s+1\n`, table)
	assert.Regexp(t, `total\s+1\s+1\s+2\s+2\s+1\s+7\n`, table)
	d := s.details()
	assert.Contains(t, d, "node/test_b: compare output \"y\": mismatch\n")
	assert.NotContains(t, d, "more", "only the first line of an error")
	assert.Contains(t, d, "1  TopK\n")
	assert.Contains(t, d, "1  Hardmax\n")
	assert.Contains(t, d, "1  UINT16\n")
	assert.Contains(t, d, "1  sequence/optional/map value\n")
	assert.Equal(t, 1, strings.Count(d, "failed (1)"))
}

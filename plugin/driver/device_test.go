package driver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

func TestParseDeviceName(t *testing.T) {
	cases := []struct {
		in, name, id, prio string
		bad                bool
	}{
		{in: "CPU", name: "CPU"},
		{in: "GPU.1", name: "GPU", id: "1"},
		{in: "GPU.0.1", name: "GPU", id: "0.1"},
		{in: "HETERO:GPU,CPU", name: "HETERO", prio: "GPU,CPU"},
		{in: "HETERO:GPU.1,CPU", name: "HETERO", prio: "GPU.1,CPU"},
		{in: "HETERO:CPU", name: "HETERO", prio: "CPU"},
		{in: "", bad: true},
		{in: "GPU.", bad: true},
		{in: ".1", bad: true},
		{in: "HETERO:", bad: true},
		{in: ":CPU", bad: true},
		{in: "HETERO:GPU,,CPU", bad: true},
		{in: "HETERO:GPU,", bad: true},
		{in: "HETERO:HETERO:CPU", bad: true},
		{in: "HETERO.1:CPU", bad: true},
		{in: "GPU,CPU", bad: true},
		{in: "G PU", bad: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			name, id, prio, err := driver.ParseDeviceName(tc.in)
			if tc.bad {
				require.Error(t, err)
				assert.ErrorIs(t, err, driver.ErrInvalidArgument)
				assert.Contains(t, err.Error(), `"`+tc.in+`"`)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.name, name)
			assert.Equal(t, tc.id, id)
			assert.Equal(t, tc.prio, prio)
		})
	}
}

func TestCheckTensor(t *testing.T) {
	ports := []driver.PortInfo{
		{Name: "a", Type: tensor.F32, Shape: graph.ShapeOf(1, 4)},
		{Name: "b", Type: tensor.I64, Shape: graph.PartialShape{RankKnown: true, Dims: []graph.Dim{graph.DynamicDim("N"), graph.StaticDim(3)}}},
		{Name: "c", Type: tensor.U8, Shape: graph.DynamicRank},
	}
	f32 := func(s ...int64) *tensor.Tensor { return tensor.MustNew(tensor.F32, s) }
	cases := []struct {
		name     string
		port     string
		t        *tensor.Tensor
		idx      int
		sentinel error
		mention  []string
	}{
		{name: "ok", port: "a", t: f32(1, 4), idx: 0},
		{name: "dynamic dim", port: "b", t: tensor.MustNew(tensor.I64, tensor.Shape{7, 3}), idx: 1},
		{name: "dynamic rank", port: "c", t: tensor.MustNew(tensor.U8, tensor.Shape{2, 2, 2}), idx: 2},
		{name: "unknown", port: "z", t: f32(1, 4), idx: -1, sentinel: driver.ErrNotFound, mention: []string{`"z"`, "a, b, c"}},
		{name: "type", port: "a", t: tensor.MustNew(tensor.F16, tensor.Shape{1, 4}), idx: 0, sentinel: driver.ErrInvalidArgument, mention: []string{`"a"`, "f16", "f32"}},
		{name: "shape", port: "a", t: f32(1, 5), idx: 0, sentinel: driver.ErrInvalidArgument, mention: []string{`"a"`, "[1,5]", "[1,4]"}},
		{name: "rank", port: "b", t: tensor.MustNew(tensor.I64, tensor.Shape{3}), idx: 1, sentinel: driver.ErrInvalidArgument, mention: []string{`"b"`, "[3]", "[N,3]"}},
		{name: "static dim of dynamic shape", port: "b", t: tensor.MustNew(tensor.I64, tensor.Shape{2, 4}), idx: 1, sentinel: driver.ErrInvalidArgument},
		{name: "nil", port: "a", t: nil, idx: 0, sentinel: driver.ErrInvalidArgument, mention: []string{`"a"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			idx, err := driver.CheckTensor(ports, tc.port, tc.t)
			assert.Equal(t, tc.idx, idx)
			if tc.sentinel == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.sentinel)
			for _, s := range tc.mention {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestErrorf(t *testing.T) {
	inner := driver.Errorf(driver.ErrDevice, "cl: CL_OUT_OF_RESOURCES")
	err := driver.Errorf(driver.ErrInvalidArgument, "cpu: node %q: %w", "conv1", inner)
	assert.ErrorIs(t, err, driver.ErrInvalidArgument)
	assert.ErrorIs(t, err, driver.ErrDevice, "the %w operand is wrapped too")
	assert.NotErrorIs(t, err, driver.ErrNotFound)
	assert.Equal(t, `cpu: node "conv1": cl: CL_OUT_OF_RESOURCES`, err.Error(), "the sentinel's text is not repeated")
}

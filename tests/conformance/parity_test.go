package conformance

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParity(t *testing.T) {
	cpu := map[string]Outcome{"node/a": Passed, "node/b": Passed, "node/c": UnsupportedOp, "node/d": Excluded}
	t.Run("same pass lists", func(t *testing.T) {
		gpu := map[string]Outcome{"node/a": Passed, "node/b": Passed, "node/c": Failed, "node/d": Excluded}
		assert.NoError(t, parity("CPU", "GPU", cpu, gpu), "only passes are compared")
	})
	t.Run("differences both ways", func(t *testing.T) {
		gpu := map[string]Outcome{"node/a": UnsupportedOp, "node/c": Passed, "node/d": Excluded}
		err := parity("CPU", "GPU", cpu, gpu)
		var pe *ParityError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, []string{"node/a (unsupported-op)", "node/b (not run)"}, pe.Missing)
		assert.Equal(t, []string{"node/c (unsupported-op on CPU)"}, pe.Extra)
		assert.Contains(t, err.Error(), "2 case(s) pass on CPU and not on GPU")
		assert.Contains(t, err.Error(), "1 case(s) pass on GPU and not on CPU")
	})
	t.Run("compared only after complete runs of both", func(t *testing.T) {
		runs.Lock()
		saved := runs.byDevice
		runs.byDevice = map[string]map[string]Outcome{}
		runs.Unlock()
		defer func() {
			runs.Lock()
			runs.byDevice = saved
			runs.Unlock()
		}()
		record("CPU", cpu)
		compared, err := CheckParity("CPU", "GPU")
		assert.False(t, compared)
		assert.NoError(t, err)
		record("GPU", map[string]Outcome{"node/a": Passed})
		compared, err = CheckParity("CPU", "GPU")
		assert.True(t, compared)
		assert.Error(t, err)
	})
}

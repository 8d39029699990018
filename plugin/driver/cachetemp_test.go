package driver

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCacheTempSweepsStale: creating a blob's temporary file removes the
// same key's temporary files a process left behind (last written more than
// staleCacheTemp ago) and keeps a recent one (a write in progress), other
// keys' files and the blobs themselves.
func TestCacheTempSweepsStale(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * staleCacheTemp)
	files := map[string]bool{ // name: kept
		"k1.111.tmp":   false,
		"k1.222.tmp":   true, // recent
		"k2.333.tmp":   true, // another key
		"k1":           true, // the blob
		"k1.444.tmp.x": true,
	}
	for name := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
		if name != "k1.222.tmp" {
			require.NoError(t, os.Chtimes(p, old, old))
		}
	}
	tmp, err := cacheTemp(dir, "k1")
	require.NoError(t, err)
	require.NoError(t, tmp.Close())
	for name, kept := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		assert.Equal(t, kept, err == nil, "%s kept", name)
	}
	_, err = os.Stat(tmp.Name())
	assert.NoError(t, err, "the new temporary file")
}

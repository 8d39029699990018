package tune

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/kernels"
)

var dev = Device{Architecture: "Vendor; Test Device; OpenCL 3.0; driver 1.0", Driver: "1.0"}

func rec(variant string, ms float64, mode Mode) Record {
	return Record{Variant: variant, Ms: ms, Heuristic: variant, HeuristicMs: ms, Mode: mode.String(), Tried: 1}
}

const (
	v1 = "gemm/direct:VW=4,MR=4,NV=2,WG=1"
	v2 = "gemm/direct:VW=8,MR=8,NV=2,WG=1"
)

func TestModes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Mode
	}{{"NONE", None}, {"fast", Fast}, {" Exhaustive ", Exhaustive}} {
		m, err := ParseMode(c.in)
		require.NoError(t, err)
		assert.Equal(t, c.want, m)
		var u Mode
		require.NoError(t, u.UnmarshalText([]byte(m.String())))
		assert.Equal(t, m, u)
	}
	_, err := ParseMode("quick")
	assert.ErrorIs(t, err, ErrMode)
	assert.Contains(t, err.Error(), "NONE, FAST, EXHAUSTIVE")
	assert.Equal(t, Budget{}, None.Budget())
	assert.Positive(t, Fast.Budget().Candidates, "FAST is budgeted")
	assert.Zero(t, Exhaustive.Budget().Candidates, "EXHAUSTIVE times every candidate")
	assert.Greater(t, Exhaustive.Budget().Runs, Fast.Budget().Runs)
}

// TestDBRoundTrip saves records and reads them back from another DB, as a
// later process would; the file is readable JSON naming the device.
func TestDBRoundTrip(t *testing.T) {
	path := FileName(t.TempDir(), dev)
	db, err := Open(path, dev)
	require.NoError(t, err)
	assert.Zero(t, db.Len())
	db.Put("gemm M=1", rec(v1, 0.5, Fast))
	db.Put("gemm M=2", rec(v2, 0.25, Exhaustive))
	require.NoError(t, db.Save())

	again, err := Open(path, dev)
	require.NoError(t, err)
	assert.Equal(t, []string{"gemm M=1", "gemm M=2"}, again.Keys())
	r, ok := again.Lookup("gemm M=2")
	require.True(t, ok)
	assert.Equal(t, v2, r.Variant)
	assert.InDelta(t, 0.25, r.Ms, 1e-9)
	assert.NotEmpty(t, r.Updated)

	var f map[string]any
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &f))
	assert.Equal(t, Format, f["format"])
	assert.Contains(t, string(b), "\n  \"device\"", "indented, readable JSON")
	assert.Contains(t, string(b), dev.Architecture)
	// Another device gets another file under the same directory.
	other := dev
	other.Driver = "2.0"
	assert.NotEqual(t, path, FileName(filepath.Dir(path), other))
}

// TestDBUntrustedFiles checks that a corrupt, truncated, foreign or stale
// file is reported (ErrFile, naming the file and why), never trusted, and
// rebuilt by the next save.
func TestDBUntrustedFiles(t *testing.T) {
	good, err := json.Marshal(file{Format: Format, Device: dev, Entries: map[string]Record{"k": rec(v1, 1, Fast)}})
	require.NoError(t, err)
	foreign, err := json.Marshal(file{Format: Format, Device: Device{Architecture: "Other GPU", Driver: "9"}, Entries: map[string]Record{"k": rec(v1, 1, Fast)}})
	require.NoError(t, err)
	oldFormat, err := json.Marshal(file{Format: "clinfer-tuning-0", Device: dev})
	require.NoError(t, err)
	stale, err := json.Marshal(file{Format: Format, Device: dev, Entries: map[string]Record{"k": rec("gemm/direct:VW=5,MR=4,NV=2,WG=1", 1, Fast), "ok": rec(v2, 1, Fast)}})
	require.NoError(t, err)
	for _, c := range []struct {
		name, content, why string
		keep               int
	}{
		{"corrupt", "{not json", "corrupt or truncated", 0},
		{"truncated", string(good[:len(good)/2]), "corrupt or truncated", 0},
		{"foreign", string(foreign), "another device", 0},
		{"format", string(oldFormat), "has format", 0},
		{"unknown_field", `{"format":"` + Format + `","device":{"architecture":"a","driver":"b"},"entries":{},"extra":1}`, "corrupt", 0},
		{"stale_variant", string(stale), "no longer declare", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.json")
			require.NoError(t, os.WriteFile(path, []byte(c.content), 0o644))
			db, err := Open(path, dev)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrFile)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), c.why)
			assert.Equal(t, c.keep, db.Len(), "only trusted records are kept")
			db.Put("new", rec(v2, 2, Fast))
			require.NoError(t, db.Save())
			again, err := Open(path, dev)
			require.NoError(t, err, "the save rebuilt the file")
			_, ok := again.Lookup("new")
			assert.True(t, ok)
		})
	}
}

// TestDBMerge checks that saving merges with what another process saved
// meanwhile, an exhaustive record winning over a fast one, and Refresh
// picks up another process's records.
func TestDBMerge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	a, err := Open(path, dev)
	require.NoError(t, err)
	b, err := Open(path, dev)
	require.NoError(t, err)
	a.Put("only-a", rec(v1, 1, Fast))
	a.Put("both", rec(v2, 1, Exhaustive))
	require.NoError(t, a.Save())
	b.Put("only-b", rec(v1, 1, Fast))
	b.Put("both", rec(v1, 0.5, Fast))
	require.NoError(t, b.Save())
	c, err := Open(path, dev)
	require.NoError(t, err)
	assert.Equal(t, []string{"both", "only-a", "only-b"}, c.Keys())
	r, _ := c.Lookup("both")
	assert.Equal(t, v2, r.Variant, "the exhaustive record stays")
	require.NoError(t, a.Refresh())
	_, ok := a.Lookup("only-b")
	assert.True(t, ok, "Refresh reads another process's records")
}

// TestDBConcurrentSaves saves from several DBs on one file at once (each
// its own file handle and lock, as separate processes): the file stays
// valid and holds every record.
func TestDBConcurrentSaves(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	const writers, each = 6, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := Open(path, dev)
			if err != nil {
				errs <- err
				return
			}
			for i := range each {
				db.Put(fmt.Sprintf("w%d-%d", w, i), rec(v1, float64(i+1), Fast))
				errs <- db.Save()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	db, err := Open(path, dev)
	require.NoError(t, err, "the file is valid")
	assert.Equal(t, writers*each, db.Len())
}

// TestTwoProcessesTuning runs this test binary twice at once, each
// saving records to the same file in a loop (TestHelperSaver), and checks
// that the file is valid and holds both processes' records.
func TestTwoProcessesTuning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	var cmds []*exec.Cmd
	for p := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperSaver$", "-test.count=1")
		cmd.Env = append(os.Environ(), "CLINFER_TUNE_HELPER="+path, "CLINFER_TUNE_HELPER_ID="+strconv.Itoa(p))
		require.NoError(t, cmd.Start())
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		require.NoError(t, cmd.Wait())
	}
	db, err := Open(path, dev)
	require.NoError(t, err)
	assert.Equal(t, 2*20, db.Len())
}

// TestHelperSaver is the child of TestTwoProcessesTuning (it does nothing
// on its own).
func TestHelperSaver(t *testing.T) {
	path := os.Getenv("CLINFER_TUNE_HELPER")
	if path == "" {
		return
	}
	db, err := Open(path, dev)
	require.NoError(t, err)
	for i := range 20 {
		db.Put(fmt.Sprintf("p%s-%d", os.Getenv("CLINFER_TUNE_HELPER_ID"), i), rec(v1, 1, Fast))
		require.NoError(t, db.Save())
	}
}

// TestOrder checks the search order: the heuristic's choice first, then
// the family's winners, the closest point of each other algorithm, the
// heuristic's neighbours, the rest; cut to the budget.
func TestOrder(t *testing.T) {
	f, ok := kernels.LookupFamily("gemm")
	require.True(t, ok)
	cands := f.Variants(kernels.Limits{VectorWidth: 16})
	parse := func(s string) kernels.Variant {
		v, err := kernels.ParseVariant(s)
		require.NoError(t, err)
		return v
	}
	heur := parse("gemm/direct:VW=16,MR=8,NV=2,WG=1")
	winner := parse("gemm/direct:VW=8,MR=4,NV=2,WG=0")
	all := Order(cands, heur, []kernels.Variant{winner, parse("conv/direct:VW=4,MR=8,NV=1,WG=1")}, Budget{})
	require.Len(t, all, len(cands), "every candidate once, nothing else")
	assert.True(t, all[0].Equal(heur))
	assert.True(t, all[1].Equal(winner))
	assert.Equal(t, "tiled", all[2].Algorithm, "then the other algorithm")
	// The neighbours of the heuristic (one parameter changed) come before
	// points two parameters away.
	first := map[int]int{}
	for i, v := range all[3:] {
		if v.Algorithm != "direct" {
			continue
		}
		d := 0
		for j := range v.Values {
			if v.Values[j] != heur.Values[j] {
				d++
			}
		}
		if _, ok := first[d]; !ok {
			first[d] = i
		}
	}
	assert.Less(t, first[1], first[2])
	fast := Order(cands, heur, nil, Fast.Budget())
	assert.Len(t, fast, Fast.Budget().Candidates)
	assert.True(t, fast[0].Equal(heur))
	// A heuristic that is not a candidate is skipped, not added.
	narrow := f.Variants(kernels.Limits{VectorWidth: 4})
	for _, v := range Order(narrow, heur, nil, Budget{}) {
		assert.NotEqual(t, 16, v.Get("VW"))
	}
	assert.InDelta(t, 2.0, Median([]float64{3, 1, 2}), 1e-12)
	assert.InDelta(t, 2.5, Median([]float64{4, 1, 2, 3}), 1e-12)
	assert.Zero(t, Median(nil))
}

package driver

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"runtime"
	"sync"
)

// treeLeaf is the size of the leaves treeHash hashes apart.
const treeLeaf = 1 << 20

// treeHash hashes a stream as the SHA-256 of the SHA-256 digests of its
// treeLeaf-byte leaves and of its length; a Write that brings several
// whole leaves hashes them on every core, so the model cache's key over a
// model's weights (IS-Net medium: 176 MB, 0.16 s of one core) takes a
// fraction of that. The leaves are fixed by the stream's offsets, not by
// how it is cut into writes, so equal streams give equal sums; Write
// keeps no reference to what it is given.
type treeHash struct {
	leaf    []byte // the current leaf's bytes, while it is not whole
	digests []byte
	n       uint64
}

func (t *treeHash) Write(p []byte) (int, error) {
	size := len(p)
	t.n += uint64(size)
	if len(t.leaf) > 0 {
		k := min(treeLeaf-len(t.leaf), len(p))
		t.leaf = append(t.leaf, p[:k]...)
		p = p[k:]
		if len(t.leaf) < treeLeaf {
			return size, nil
		}
		t.digests = appendLeaf(t.digests, t.leaf)
		t.leaf = t.leaf[:0]
	}
	if whole := len(p) / treeLeaf; whole > 0 {
		t.digests = appendLeaves(t.digests, p[:whole*treeLeaf])
		p = p[whole*treeLeaf:]
	}
	if len(p) > 0 {
		if t.leaf == nil {
			t.leaf = make([]byte, 0, treeLeaf)
		}
		t.leaf = append(t.leaf, p...)
	}
	return size, nil
}

// Sum returns the stream's hash.
func (t *treeHash) Sum() [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte("clinfer tree sha256\x00"))
	h.Write(t.digests)
	if len(t.leaf) > 0 {
		h.Write(appendLeaf(nil, t.leaf))
	}
	h.Write(binary.LittleEndian.AppendUint64(nil, t.n))
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

func appendLeaf(dst, leaf []byte) []byte {
	d := sha256.Sum256(leaf)
	return append(dst, d[:]...)
}

// appendLeaves appends the digests of whole leaves p, in order, hashed on
// up to GOMAXPROCS goroutines.
func appendLeaves(dst, p []byte) []byte {
	n := len(p) / treeLeaf
	out := make([]byte, n*sha256.Size)
	workers := min(n, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var h hash.Hash = sha256.New()
			for i := w; i < n; i += workers {
				h.Reset()
				h.Write(p[i*treeLeaf : (i+1)*treeLeaf])
				h.Sum(out[i*sha256.Size : i*sha256.Size : (i+1)*sha256.Size])
			}
		}()
	}
	wg.Wait()
	return append(dst, out...)
}

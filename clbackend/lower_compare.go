package clbackend

import "github.com/clinfer/clinfer/graph"

func lowerWhere(b *builder, n *graph.Node) error {
	c, x, y, out := b.in(n, 0), b.in(n, 1), b.in(n, 2), b.out(n, 0)
	os := b.val(out).shape
	m := b.meta(broadcastMeta(os, b.val(c).shape, b.val(x).shape, b.val(y).shape))
	cnt := os.NumElements()
	return b.emit(n, "where", "-DT="+bitsType(b.val(out).typ), cnt, slotArg(c), slotArg(x), slotArg(y), slotArg(out), uint64(cnt), m)
}

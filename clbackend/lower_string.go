package clbackend

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// stringHost is why the string family's ops on strings run in host parts.
const stringHost = "string tensors are host values"

// lowerTfIdf runs TfIdfVectorizer on integer ids as one tfidf launch over
// every output of every row, with the pool laid out at plan time.
func lowerTfIdf(b *builder, n *graph.Node) error {
	x, y := b.in(n, 0), b.out(n, 0)
	it, err := b.indexType(n, x)
	if err != nil {
		return err
	}
	p, err := graph.TfIdfPoolOf(n)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	s := b.val(x).shape
	rows, C := int64(1), s[len(s)-1]
	if len(s) == 2 {
		rows = s[0]
	}
	gram := make([]int64, p.Outputs)
	for o := range gram {
		gram[o] = -1
	}
	var table, pool []int64
	w := make([]float32, len(p.Ints))
	for k, g := range p.Ints {
		if len(g) >= p.Min && len(g) <= p.Max {
			gram[p.Index[k]] = int64(k)
		}
		table = append(table, int64(len(pool)), int64(len(g)))
		pool = append(pool, g...)
		w[k] = p.Weight[k]
	}
	pt, err := tensor.FromI64(tensor.Shape{int64(max(len(pool), 1))}, append(pool, 0)[:max(len(pool), 1)])
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	mode := map[string]int32{"TF": 0, "IDF": 1, "TFIDF": 2}[p.Mode]
	cnt := rows * p.Outputs
	return b.emit(n, "tfidf", "-DIT="+it, cnt, slotArg(x), slotArg(y), uint64(cnt), uint64(C), uint64(p.Outputs),
		b.meta(gram), b.meta(table), slotArg(b.newValue(tensor.I64, pt.Shape(), pt)), b.floats(w), int32(p.Skip), mode)
}

// stringLowerings are the GPU table entries of the string family: the ops
// on strings run in host parts (hostparts.go); TfIdfVectorizer on
// integer ids has a kernel.
func stringLowerings() map[string]lowering {
	return map[string]lowering{
		"StringNormalizer": {hostPart: stringHost},
		"RegexFullMatch":   {hostPart: stringHost},
		"StringConcat":     {hostPart: stringHost},
		"StringSplit":      {hostPart: stringHost},
		"TfIdfVectorizer":  {lower: lowerTfIdf},
	}
}

package ref

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// The string family. String tensors hold Go strings (tensor.String);
// TfIdfVectorizer also counts integer ids.

// stringsOf returns the elements of a string input.
func stringsOf(n *graph.Node, in []*tensor.Tensor, i int) (*tensor.Tensor, []string, error) {
	x, err := need(n, in, i)
	if err != nil {
		return nil, nil, err
	}
	if x.Type() != tensor.String {
		return nil, nil, n.Errorf("%w: input %d is %v, want strings", tensor.ErrType, i, x)
	}
	return x, x.Strings(), nil
}

// stringNormalizerKernel drops the stopwords (compared case-insensitively
// unless is_case_sensitive=1) and changes the case of what is left; when
// nothing is left the output is one empty string.
func stringNormalizerKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, v, err := stringsOf(n, in, 0)
	if err != nil {
		return nil, err
	}
	sensitive := n.Attrs.Int("is_case_sensitive", 0) == 1
	fold := func(s string) string {
		if sensitive {
			return s
		}
		return strings.ToLower(s)
	}
	stop := map[string]bool{}
	for _, w := range n.Attrs.Strings("stopwords", nil) {
		stop[fold(w)] = true
	}
	change := n.Attrs.String("case_change_action", "NONE")
	var out []string
	for _, s := range v {
		if stop[fold(s)] {
			continue
		}
		switch change {
		case "LOWER":
			s = strings.ToLower(s)
		case "UPPER":
			s = strings.ToUpper(s)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		out = []string{""}
	}
	shape := tensor.Shape{int64(len(out))}
	if x.Rank() == 2 {
		shape = tensor.Shape{1, int64(len(out))}
	}
	y, err := tensor.FromStrings(shape, out)
	if err != nil {
		return nil, n.Errorf("%w", err)
	}
	return one(y), nil
}

// tfidfCount counts n-gram g in a row of length l whose item j equals
// g's item k when eq(j, k): at every start and, for n-grams longer than
// one item, every distance between items from 1 to skip+1 (ONNX's
// reference counts unigrams once, whatever the skips).
func tfidfCount(l, glen, skip int, eq func(j, k int) bool) int {
	dists := skip + 1
	if glen == 1 {
		dists = 1
	}
	cnt := 0
	for d := 1; d <= dists; d++ {
	start:
		for s := 0; s+(glen-1)*d < l; s++ {
			for k := range glen {
				if !eq(s+k*d, k) {
					continue start
				}
			}
			cnt++
		}
	}
	return cnt
}

// tfidfKernel is TfIdfVectorizer: per row, the count of each pool n-gram
// of a counted length (TF), 1 where it occurs (IDF), or the count (TFIDF),
// times its weight for IDF and TFIDF, at its output index.
func tfidfKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := need(n, in, 0)
	if err != nil {
		return nil, err
	}
	p, err := graph.TfIdfPoolOf(n)
	if err != nil {
		return nil, err
	}
	s := x.Shape()
	rows, l := int64(1), s[len(s)-1]
	outShape := tensor.Shape{p.Outputs}
	if len(s) == 2 {
		rows, outShape = s[0], tensor.Shape{s[0], p.Outputs}
	}
	y, err := newOut(n, tensor.F32, outShape)
	if err != nil {
		return nil, err
	}
	var ints []int64
	var strs []string
	if x.Type() == tensor.String {
		strs = x.Strings()
	} else {
		ints = toI64s(x)
	}
	out := y.F32()
	for r := range rows {
		base := r * l
		for k, o := range p.Index {
			var glen int
			var eq func(j, i int) bool
			if strs != nil {
				g := p.Strings[k]
				glen, eq = len(g), func(j, i int) bool { return strs[base+int64(j)] == g[i] }
			} else {
				g := p.Ints[k]
				glen, eq = len(g), func(j, i int) bool { return ints[base+int64(j)] == g[i] }
			}
			if glen < p.Min || glen > p.Max {
				continue
			}
			c := float32(tfidfCount(int(l), glen, p.Skip, eq))
			switch p.Mode {
			case "IDF":
				if c > 0 {
					c = p.Weight[k]
				}
			case "TFIDF":
				c *= p.Weight[k]
			}
			out[r*p.Outputs+o] = c
		}
	}
	return one(y), nil
}

// regexFullMatchKernel reports whether each string matches pattern (RE2
// syntax, which Go's regexp implements) as a whole.
func regexFullMatchKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, v, err := stringsOf(n, in, 0)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(`^(?:` + n.Attrs.String("pattern", "") + `)$`)
	if err != nil {
		return nil, n.Errorf("%w: pattern: %v", driver.ErrInvalidArgument, err)
	}
	y, err := newOut(n, tensor.Bool, x.Shape())
	if err != nil {
		return nil, err
	}
	for i, s := range v {
		y.Bool()[i] = re.MatchString(s)
	}
	return one(y), nil
}

// stringConcatKernel concatenates two string tensors element-wise with
// numpy broadcasting.
func stringConcatKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	a, av, err := stringsOf(n, in, 0)
	if err != nil {
		return nil, err
	}
	b, bv, err := stringsOf(n, in, 1)
	if err != nil {
		return nil, err
	}
	shape, err := broadcastShape(a.Shape(), b.Shape())
	if err != nil {
		return nil, n.Errorf("%w", err)
	}
	y, err := newOut(n, tensor.String, shape)
	if err != nil {
		return nil, err
	}
	out := y.Strings()
	walkBroadcast(shape, []tensor.Shape{a.Shape(), b.Shape()}, func(o int64, offs []int64) {
		out[o] = av[offs[0]] + bv[offs[1]]
	})
	return one(y), nil
}

// stringSplitKernel splits each string as Python's str.split does: on
// delimiter (keeping empty parts), or without one on runs of whitespace
// (dropping empty parts), at most maxsplit times when maxsplit is set. Y
// holds the parts padded with empty strings to the most parts, Z the
// counts.
func stringSplitKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, v, err := stringsOf(n, in, 0)
	if err != nil {
		return nil, err
	}
	delim := n.Attrs.String("delimiter", "")
	limit := -1
	if n.Attrs.Has("maxsplit") {
		limit = int(n.Attrs.Int("maxsplit", 0)) + 1
	}
	parts := make([][]string, len(v))
	most := 0
	for i, s := range v {
		if delim == "" {
			parts[i] = fieldsN(s, limit)
		} else {
			parts[i] = strings.SplitN(s, delim, limit)
		}
		most = max(most, len(parts[i]))
	}
	ys := append(x.Shape(), int64(most))
	y, err := newOut(n, tensor.String, ys)
	if err != nil {
		return nil, err
	}
	z, err := newOut(n, tensor.I64, x.Shape())
	if err != nil {
		return nil, err
	}
	for i, p := range parts {
		copy(y.Strings()[i*most:], p)
		z.I64()[i] = int64(len(p))
	}
	return []*tensor.Tensor{y, z}, nil
}

// fieldsN splits s around runs of whitespace into at most limit parts
// (limit < 0: all), the last holding the rest with its leading whitespace
// removed, as Python's str.split(None, limit-1) does.
func fieldsN(s string, limit int) []string {
	var out []string
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return out
		}
		if limit > 0 && len(out) == limit-1 {
			return append(out, s)
		}
		end := strings.IndexFunc(s, unicode.IsSpace)
		if end < 0 {
			return append(out, s)
		}
		out = append(out, s[:end])
		s = s[end:]
	}
}

// stringKernels are the string family's kernels.
func stringKernels() map[string]Kernel {
	return map[string]Kernel{
		"StringNormalizer": stringNormalizerKernel,
		"TfIdfVectorizer":  tfidfKernel,
		"RegexFullMatch":   regexFullMatchKernel,
		"StringConcat":     stringConcatKernel,
		"StringSplit":      stringSplitKernel,
	}
}

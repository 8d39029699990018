package graph

import "github.com/clinfer/clinfer/tensor"

// Text ops. String tensors live on the host (the GPU places their ops in
// host parts); TfIdfVectorizer on integer ids is a tensor op.

// stringInput returns input i, checking that it is a string tensor.
func stringInput(n *Node, i int) (Output, error) {
	in, err := tensorInput(n, i)
	if err != nil {
		return Output{}, err
	}
	if in.Type() != tensor.String {
		return Output{}, n.Errorf("input %d has element type %v, want string", i, in.Type())
	}
	return in, nil
}

// inferStringNormalizer is StringNormalizer(X [C] or [1, C]): X without
// its stopwords, case-changed; a dynamic last axis (one empty string when
// every string is a stopword).
func inferStringNormalizer(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := stringInput(n, 0)
	if err != nil {
		return err
	}
	switch n.Attrs.String("case_change_action", "NONE") {
	case "NONE", "LOWER", "UPPER":
	default:
		return n.Errorf("case_change_action %q is not NONE, LOWER or UPPER", n.Attrs.String("case_change_action", ""))
	}
	s := x.Shape()
	if !s.RankKnown {
		setOutput(n, 0, tensor.String, DynamicRank)
		return nil
	}
	if len(s.Dims) == 2 && s.Dims[0].IsStatic() && s.Dims[0].Size != 1 || len(s.Dims) < 1 || len(s.Dims) > 2 {
		return n.Errorf("input has shape %v, want [C] or [1, C]", s)
	}
	out := s.Clone()
	out.Dims[len(out.Dims)-1] = DynamicDim("")
	setOutput(n, 0, tensor.String, out)
	return nil
}

// TfIdfPool is a TfIdfVectorizer's n-gram pool, read from its attributes:
// the n-grams of each length (Grams[k] the k-th n-gram, of ints or
// strings) with their output index and weight.
type TfIdfPool struct {
	// Ints or Strings hold each n-gram's items.
	Ints    [][]int64
	Strings [][]string
	// Index is each n-gram's output index, Weight its weight (1 without
	// weights).
	Index  []int64
	Weight []float32
	// Outputs is the output's last dimension: the largest index + 1.
	Outputs int64
	// Min, Max are the n-gram lengths counted; Skip the most items
	// skipped between an n-gram's items; Mode TF, IDF or TFIDF.
	Min, Max, Skip int
	Mode           string
}

// TfIdfPoolOf reads and checks the pool of TfIdfVectorizer node n.
func TfIdfPoolOf(n *Node) (*TfIdfPool, error) {
	p := &TfIdfPool{
		Min: int(n.Attrs.Int("min_gram_length", 0)), Max: int(n.Attrs.Int("max_gram_length", 0)),
		Skip: int(n.Attrs.Int("max_skip_count", 0)), Mode: n.Attrs.String("mode", ""),
	}
	switch p.Mode {
	case "TF", "IDF", "TFIDF":
	default:
		return nil, n.Errorf("mode %q is not TF, IDF or TFIDF", p.Mode)
	}
	if p.Min < 1 || p.Max < p.Min || p.Skip < 0 {
		return nil, n.Errorf("min_gram_length %d, max_gram_length %d, max_skip_count %d: want 1 <= min <= max and skip >= 0", p.Min, p.Max, p.Skip)
	}
	counts := n.Attrs.Ints("ngram_counts", nil)
	idx := n.Attrs.Ints("ngram_indexes", nil)
	ints, strs := n.Attrs.Ints("pool_int64s", nil), n.Attrs.Strings("pool_strings", nil)
	size := len(ints)
	if strs != nil {
		size = len(strs)
	}
	if (ints == nil) == (strs == nil) {
		return nil, n.Errorf("needs exactly one of pool_int64s and pool_strings")
	}
	// ngram_counts[i] is where the (i+1)-grams start in the pool.
	for i, start := range counts {
		end := int64(size)
		if i+1 < len(counts) {
			end = counts[i+1]
		}
		l := int64(i + 1)
		if start < 0 || end < start || end > int64(size) || (end-start)%l != 0 {
			return nil, n.Errorf("ngram_counts %v do not cut a pool of %d items into n-grams", counts, size)
		}
		for at := start; at < end; at += l {
			if strs != nil {
				p.Strings = append(p.Strings, strs[at:at+l])
			} else {
				p.Ints = append(p.Ints, ints[at:at+l])
			}
		}
	}
	grams := len(p.Ints) + len(p.Strings)
	if len(idx) != grams {
		return nil, n.Errorf("ngram_indexes has %d entries for %d n-grams", len(idx), grams)
	}
	w := n.Attrs.Floats("weights", nil)
	if w != nil && len(w) != grams {
		return nil, n.Errorf("weights has %d entries for %d n-grams", len(w), grams)
	}
	seen := map[int64]bool{}
	for k, o := range idx {
		if o < 0 || seen[o] {
			return nil, n.Errorf("ngram_indexes %v: an index is negative or repeated", idx)
		}
		seen[o] = true
		p.Outputs = max(p.Outputs, o+1)
		wt := float32(1)
		if w != nil {
			wt = w[k]
		}
		p.Index, p.Weight = append(p.Index, o), append(p.Weight, wt)
	}
	return p, nil
}

// inferTfIdfVectorizer is TfIdfVectorizer(X [C] or [N, C] of i32, i64 or
// strings) -> f32 [outputs] or [N, outputs].
func inferTfIdfVectorizer(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := tensorInput(n, 0)
	if err != nil {
		return err
	}
	p, err := TfIdfPoolOf(n)
	if err != nil {
		return err
	}
	switch t := x.Type(); {
	case (t == tensor.I32 || t == tensor.I64) && p.Ints != nil, t == tensor.String && p.Strings != nil:
	default:
		return n.Errorf("input of %v for a pool of %s", t, map[bool]string{true: "strings", false: "integers"}[p.Strings != nil])
	}
	s := x.Shape()
	out := ShapeOf(p.Outputs)
	if s.RankKnown {
		switch len(s.Dims) {
		case 1:
		case 2:
			out = PartialShape{RankKnown: true, Dims: []Dim{s.Dims[0], StaticDim(p.Outputs)}}
		default:
			return n.Errorf("input has shape %v, want [C] or [N, C]", s)
		}
	} else {
		out = DynamicRank
	}
	setOutput(n, 0, tensor.F32, out)
	return nil
}

// inferRegexFullMatch is RegexFullMatch(X strings) -> booleans: whether
// each string matches pattern (RE2 syntax) as a whole.
func inferRegexFullMatch(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	x, err := stringInput(n, 0)
	if err != nil {
		return err
	}
	setOutput(n, 0, tensor.Bool, x.Shape().Clone())
	return nil
}

// inferStringConcat is StringConcat(X, Y strings, broadcast).
func inferStringConcat(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	a, err := stringInput(n, 0)
	if err != nil {
		return err
	}
	b, err := stringInput(n, 1)
	if err != nil {
		return err
	}
	s, err := BroadcastShapes(a.Shape(), b.Shape())
	if err != nil {
		return n.Errorf("%v", err)
	}
	setOutput(n, 0, tensor.String, s)
	return nil
}

// inferStringSplit is StringSplit(X) -> (Y: X's shape + [the most parts],
// padded with empty strings; Z: i64 part counts of X's shape).
func inferStringSplit(n *Node) error {
	if err := checkOutputs(n, 2, 2); err != nil {
		return err
	}
	x, err := stringInput(n, 0)
	if err != nil {
		return err
	}
	s := x.Shape()
	y := DynamicRank
	if s.RankKnown {
		y = s.Clone()
		y.Dims = append(y.Dims, DynamicDim(""))
	}
	setOutput(n, 0, tensor.String, y)
	setOutput(n, 1, tensor.I64, s.Clone())
	return nil
}

// stringOps are the rows of the string family.
var stringOps = []OpSpec{
	{Name: "StringNormalizer", Since: 10, MinInputs: 1, MaxInputs: 1, Infer: inferStringNormalizer},
	{Name: "TfIdfVectorizer", Since: 9, MinInputs: 1, MaxInputs: 1, Infer: inferTfIdfVectorizer, Examples: []Example{
		{Name: "tf_uni_bi_skip2", Attrs: Attrs{"mode": "TF", "min_gram_length": int64(1), "max_gram_length": int64(2), "max_skip_count": int64(2),
			"ngram_counts": []int64{0, 4}, "ngram_indexes": []int64{0, 1, 2, 3, 4, 5, 6}, "pool_int64s": []int64{-2, 0, 3, 5, 0, 3, 1, -1, 2, 2}},
			Inputs: []ExampleInput{{Type: tensor.I32, Shape: []int64{3, 12}}}},
		{Name: "tfidf_bigrams_weights", Attrs: Attrs{"mode": "TFIDF", "min_gram_length": int64(2), "max_gram_length": int64(2), "max_skip_count": int64(1),
			"ngram_counts": []int64{0, 2}, "ngram_indexes": []int64{4, 0, 2, 1, 3}, "pool_int64s": []int64{1, 4, 0, 0, 1, -3, 2, 2},
			"weights": []float32{0.5, 2, 1.5, 3, 1}},
			Inputs: []ExampleInput{{Type: tensor.I64, Shape: []int64{20}}}},
		{Name: "idf_trigrams", Attrs: Attrs{"mode": "IDF", "min_gram_length": int64(1), "max_gram_length": int64(3), "max_skip_count": int64(0),
			"ngram_counts": []int64{0, 1, 3}, "ngram_indexes": []int64{3, 2, 1, 0}, "pool_int64s": []int64{1, 0, 0, 2, 4, 1, 0, 1, 2}},
			Inputs: []ExampleInput{{Type: tensor.I64, Shape: []int64{2, 9}}}},
	}},
	{Name: "RegexFullMatch", Since: 20, MinInputs: 1, MaxInputs: 1, Infer: inferRegexFullMatch},
	{Name: "StringConcat", Since: 20, MinInputs: 2, MaxInputs: 2, Infer: inferStringConcat},
	{Name: "StringSplit", Since: 20, MinInputs: 1, MaxInputs: 1, Infer: inferStringSplit},
}

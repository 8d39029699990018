package ref

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

func tStr(shape tensor.Shape, v ...string) *tensor.Tensor {
	x, err := tensor.FromStrings(shape, v)
	if err != nil {
		panic(err)
	}
	return x
}

// TestStringKernels checks the string family against ONNX's examples and
// Python's str.split.
func TestStringKernels(t *testing.T) {
	t.Run("StringNormalizer", func(t *testing.T) {
		x := tStr(tensor.Shape{1, 4}, "Monday", "tuesday", "MONDAY", "Friday")
		y := run1(t, "StringNormalizer", graph.Attrs{"stopwords": []string{"monday"}, "case_change_action": "UPPER"}, x)
		assert.Equal(t, tensor.Shape{1, 2}, y.Shape())
		assert.Equal(t, []string{"TUESDAY", "FRIDAY"}, y.Strings())
		y = run1(t, "StringNormalizer", graph.Attrs{"stopwords": []string{"monday"}, "is_case_sensitive": int64(1)}, x)
		assert.Equal(t, []string{"Monday", "tuesday", "MONDAY", "Friday"}, y.Strings())
		all := run1(t, "StringNormalizer", graph.Attrs{"stopwords": []string{"a"}}, tStr(tensor.Shape{2}, "a", "A"))
		assert.Equal(t, tensor.Shape{1}, all.Shape(), "one empty string when nothing is left")
		assert.Equal(t, []string{""}, all.Strings())
	})
	t.Run("RegexFullMatch", func(t *testing.T) {
		y := run1(t, "RegexFullMatch", graph.Attrs{"pattern": `www\.[\w.-]+\.\bcom\b`}, tStr(tensor.Shape{3}, "www.google.com", "www.facebook.com", "www.bbc.co.uk"))
		assert.Equal(t, []bool{true, true, false}, y.Bool())
		_, err := runOp("RegexFullMatch", graph.Attrs{"pattern": "("}, 1, tStr(tensor.Shape{1}, "a"))
		assert.ErrorContains(t, err, "pattern")
	})
	t.Run("StringConcat", func(t *testing.T) {
		y := run1(t, "StringConcat", nil, tStr(tensor.Shape{2, 1}, "a", "b"), tStr(tensor.Shape{3}, "x", "", "zz"))
		assert.Equal(t, tensor.Shape{2, 3}, y.Shape())
		assert.Equal(t, []string{"ax", "a", "azz", "bx", "b", "bzz"}, y.Strings())
	})
	t.Run("StringSplit", func(t *testing.T) {
		x := tStr(tensor.Shape{3}, "hello world !", "  a  b ", "")
		out, err := runOp("StringSplit", nil, 2, x)
		require.NoError(t, err)
		assert.Equal(t, tensor.Shape{3, 3}, out[0].Shape())
		assert.Equal(t, []string{"hello", "world", "!", "a", "b", "", "", "", ""}, out[0].Strings())
		assert.Equal(t, []int64{3, 2, 0}, out[1].I64())
		out, err = runOp("StringSplit", graph.Attrs{"delimiter": "-", "maxsplit": int64(1)}, 2, tStr(tensor.Shape{2}, "1-2-3", "--"))
		require.NoError(t, err)
		assert.Equal(t, []string{"1", "2-3", "", "-"}, out[0].Strings())
		assert.Equal(t, []int64{2, 2}, out[1].I64())
		out, err = runOp("StringSplit", graph.Attrs{"maxsplit": int64(1)}, 2, tStr(tensor.Shape{1}, " a b  c "))
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b  c "}, out[0].Strings(), "whitespace: the rest keeps its trailing spaces")
	})
	t.Run("TfIdfVectorizer", func(t *testing.T) {
		// ONNX's tf_batch_uniandbigrams_skip5 case.
		x := tI32(tensor.Shape{2, 6}, 1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8)
		attrs := graph.Attrs{"mode": "TF", "min_gram_length": int64(1), "max_gram_length": int64(2), "max_skip_count": int64(5),
			"ngram_counts": []int64{0, 4}, "ngram_indexes": []int64{0, 1, 2, 3, 4, 5, 6}, "pool_int64s": []int64{2, 3, 5, 4, 5, 6, 7, 8, 6, 7}}
		y := run1(t, "TfIdfVectorizer", attrs, x)
		assert.Equal(t, tensor.Shape{2, 7}, y.Shape())
		assert.Equal(t, []float32{0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1}, y.F32())
		s := tStr(tensor.Shape{4}, "a", "b", "a", "b")
		sattrs := graph.Attrs{"mode": "IDF", "min_gram_length": int64(2), "max_gram_length": int64(2), "max_skip_count": int64(0),
			"ngram_counts": []int64{0, 0}, "ngram_indexes": []int64{1, 0}, "pool_strings": []string{"a", "b", "b", "a"}, "weights": []float32{2, 5}}
		assert.Equal(t, []float32{5, 2}, run1(t, "TfIdfVectorizer", sattrs, s).F32())
	})
}

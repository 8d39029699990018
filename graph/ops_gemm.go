package graph

import "github.com/clinfer/clinfer/tensor"

func inferMatMul(n *Node) error {
	a, b, err := matMulOperands(n)
	if err != nil {
		return err
	}
	t, err := sameTypes(n, 0, 1)
	if err != nil {
		return err
	}
	return matMulOutput(n, a, b, t)
}

// matMulOperands checks that a matrix product has one output and its
// operands A and B (inputs 0 and 1) and returns them.
func matMulOperands(n *Node) (a, b Output, err error) {
	if err := checkOutputs(n, 1, 1); err != nil {
		return a, b, err
	}
	if a, err = requiredInput(n, 0); err != nil {
		return a, b, err
	}
	b, err = requiredInput(n, 1)
	return a, b, err
}

// matMulOutput sets output 0 of type t of a numpy matrix product of a and
// b (batch dims broadcast, 1-D operands promoted); the integer and
// quantized products call it with their own operands.
func matMulOutput(n *Node, a, b Output, t tensor.ElementType) error {
	as, bs := a.Shape(), b.Shape()
	if !as.RankKnown || !bs.RankKnown {
		setOutput(n, 0, t, DynamicRank)
		return nil
	}
	if len(as.Dims) == 0 || len(bs.Dims) == 0 {
		return n.Errorf("operands %v and %v: MatMul needs rank >= 1", as, bs)
	}
	ad, bd := as.Dims, bs.Dims
	aVec, bVec := len(ad) == 1, len(bd) == 1
	if aVec {
		ad = []Dim{StaticDim(1), ad[0]}
	}
	if bVec {
		bd = []Dim{bd[0], StaticDim(1)}
	}
	k1, k2 := ad[len(ad)-1], bd[len(bd)-2]
	if _, ok := mergeDim(k1, k2); !ok {
		return n.Errorf("operands %v and %v: inner dimensions %v and %v differ", as, bs, k1, k2)
	}
	batch, err := BroadcastShapes(PartialShape{Dims: ad[:len(ad)-2], RankKnown: true}, PartialShape{Dims: bd[:len(bd)-2], RankKnown: true})
	if err != nil {
		return n.Errorf("batch dimensions of %v and %v: %w", as, bs, err)
	}
	out := batch.Dims
	if !aVec {
		out = append(out, ad[len(ad)-2])
	}
	if !bVec {
		out = append(out, bd[len(bd)-1])
	}
	if out == nil {
		out = []Dim{}
	}
	setOutput(n, 0, t, PartialShape{Dims: out, RankKnown: true})
	return nil
}

func inferGemm(n *Node) error {
	if err := checkOutputs(n, 1, 1); err != nil {
		return err
	}
	a, err := requiredInput(n, 0)
	if err != nil {
		return err
	}
	b, err := requiredInput(n, 1)
	if err != nil {
		return err
	}
	t, err := sameTypes(n, 0, 1, 2)
	if err != nil {
		return err
	}
	as, bs := a.Shape(), b.Shape()
	for i, s := range []PartialShape{as, bs} {
		if s.RankKnown && len(s.Dims) != 2 {
			return n.Errorf("input %d has shape %v, want rank 2", i, s)
		}
	}
	if !as.RankKnown {
		as = dynamicShape(2)
	}
	if !bs.RankKnown {
		bs = dynamicShape(2)
	}
	mDim, k1 := as.Dims[0], as.Dims[1]
	if n.Attrs.Int("transA", 0) != 0 {
		mDim, k1 = k1, mDim
	}
	k2, nDim := bs.Dims[0], bs.Dims[1]
	if n.Attrs.Int("transB", 0) != 0 {
		k2, nDim = nDim, k2
	}
	if _, ok := mergeDim(k1, k2); !ok {
		return n.Errorf("A %v and B %v (transA=%d, transB=%d): inner dimensions %v and %v differ", as, bs, n.Attrs.Int("transA", 0), n.Attrs.Int("transB", 0), k1, k2)
	}
	out := PartialShape{Dims: []Dim{mDim, nDim}, RankKnown: true}
	if c := n.Input(2); c.Valid() {
		if err := unidirectional(n, c.Shape(), out, "C"); err != nil {
			return err
		}
	}
	setOutput(n, 0, t, out)
	return nil
}

// inferFullyConnected is MatMul's inference with a 2-D weight, the bias
// check and the post-op checks.
func inferFullyConnected(n *Node) error {
	if err := inferMatMul(n); err != nil {
		return err
	}
	w := n.Input(1).Shape()
	if w.RankKnown && len(w.Dims) != 2 {
		return n.Errorf("weights %v must be a [K, N] matrix", w)
	}
	if b := n.Input(2); b.Valid() {
		if b.Type() != n.Outputs[0].Type {
			return n.Errorf("bias has element type %v, output has %v", b.Type(), n.Outputs[0].Type)
		}
		bs := b.Shape()
		if bs.RankKnown && w.RankKnown {
			if len(bs.Dims) != 1 {
				return n.Errorf("bias %v must be a vector of N=%v elements", bs, w.Dims[1])
			}
			if _, ok := mergeDim(bs.Dims[0], w.Dims[1]); !ok {
				return n.Errorf("bias %v does not match N=%v", bs, w.Dims[1])
			}
		}
	}
	return checkPostOps(n)
}

// gemmOps are the matrix products.
var gemmOps = []OpSpec{
	{Name: "MatMul", Since: 1, MinInputs: 2, MaxInputs: 2, Infer: inferMatMul},
	{Name: "Gemm", Since: 7, MinInputs: 2, MaxInputs: 3, Infer: inferGemm},
	{Name: OpFullyConnected, MinInputs: 2, MaxInputs: 4, Infer: inferFullyConnected},
	{Name: "Einsum", Since: 12, MinInputs: 1, MaxInputs: -1, Infer: inferEinsum, Examples: []Example{
		{Name: "batch_matmul", Attrs: Attrs{"equation": "bij,bjk->bik"}, Inputs: []ExampleInput{{Shape: []int64{3, 5, 7}}, {Shape: []int64{3, 7, 9}}}},
		{Name: "attention_scores", Attrs: Attrs{"equation": "bhqd,bhkd->bhqk"}, Inputs: []ExampleInput{{Shape: []int64{2, 3, 6, 8}}, {Shape: []int64{2, 3, 5, 8}}}},
		{Name: "ellipsis_broadcast", Attrs: Attrs{"equation": "...ij,...jk->...ik"}, Inputs: []ExampleInput{{Shape: []int64{2, 1, 4, 3}}, {Shape: []int64{5, 3, 6}}}},
		{Name: "diagonal", Attrs: Attrs{"equation": "bii->bi"}, Inputs: []ExampleInput{{Shape: []int64{3, 5, 5}}}},
		{Name: "trace_implicit", Attrs: Attrs{"equation": "ii"}, Inputs: []ExampleInput{{Shape: []int64{6, 6}}}},
		{Name: "implicit_sum_outer", Attrs: Attrs{"equation": "ij,jk"}, Inputs: []ExampleInput{{Shape: []int64{4, 3}}, {Shape: []int64{3, 5}}}},
		{Name: "chain_three", Attrs: Attrs{"equation": "ij,jk,kl->li"}, Inputs: []ExampleInput{{Shape: []int64{2, 3}}, {Shape: []int64{3, 4}}, {Shape: []int64{4, 5}}}},
		{Name: "reduce_transpose", Attrs: Attrs{"equation": "abcd->db"}, Inputs: []ExampleInput{{Shape: []int64{2, 3, 4, 5}}}},
		{Name: "inner_outer", Attrs: Attrs{"equation": "i,i,j->j"}, Inputs: []ExampleInput{{Shape: []int64{7}}, {Shape: []int64{7}}, {Shape: []int64{4}}}},
		{Name: "bilinear", Attrs: Attrs{"equation": "bn,anm,bm->ba"}, Inputs: []ExampleInput{{Shape: []int64{3, 4}}, {Shape: []int64{5, 4, 6}}, {Shape: []int64{3, 6}}}},
		{Name: "broadcast_labels", Attrs: Attrs{"equation": "ij,ij,kj->ik"}, Inputs: []ExampleInput{{Shape: []int64{1, 6}}, {Shape: []int64{4, 6}}, {Shape: []int64{3, 1}}}},
		{Name: "ellipsis_diagonal", Attrs: Attrs{"equation": "...ii->...i"}, Inputs: []ExampleInput{{Shape: []int64{2, 3, 4, 4}}}},
	}},
}

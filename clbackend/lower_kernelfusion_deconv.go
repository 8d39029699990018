package clbackend

import (
	"slices"

	"github.com/clinfer/clinfer/fusion"
	"github.com/clinfer/clinfer/graph"
)

// lowerDeconvFusion launches KernelFusion node n of graph.LaunchDeconv
// (fusion.FuseDeconvActivation): the body's ConvTranspose on n's inputs
// with the activation as its post-op, through the register-blocked
// transposed convolution (fastDeconv, which takes post-ops) where it
// takes the ConvTranspose; otherwise the body's two nodes run as before
// the fusion.
func lowerDeconvFusion(b *builder, n *graph.Node) error {
	body, err := graph.KernelFusionBody(n)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	cv, post, err := fusion.DeconvFusionParts(body)
	if err != nil {
		return errUnsupported(n, "%v", err)
	}
	if len(n.Outputs) != 1 || len(n.Inputs) < 2 || len(n.Inputs) > 3 {
		return errUnsupported(n, "%d inputs and %d outputs (want x, w and an optional bias, one output)", len(n.Inputs), len(n.Outputs))
	}
	// The ConvTranspose on n's values, the activation its post-op; its
	// launches are n's.
	shadow := graph.Node{Name: n.Name, OpType: cv.OpType, Attrs: cv.Attrs.Clone(), Inputs: slices.Clone(n.Inputs), Outputs: slices.Clone(n.Outputs)}
	graph.SetPostOps(&shadow, []graph.PostOp{post})
	b.of[shadow.Out(0)] = b.out(n, 0)
	first := len(b.pl.launches)
	ok, err := b.fastDeconv(&shadow)
	for i := first; i < len(b.pl.launches); i++ {
		if b.pl.launches[i].node == &shadow {
			b.pl.launches[i].node = n
		}
	}
	delete(b.pl.impl, &shadow)
	delete(b.of, shadow.Out(0))
	if err != nil || ok {
		return err
	}
	return b.lowerFusionBody(n, body, "a ConvTranspose the blocked kernel does not take")
}

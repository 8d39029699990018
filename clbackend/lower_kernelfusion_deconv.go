package clbackend

import (
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
	// The ConvTranspose on n's values (its inputs and output are the
	// ConvTranspose's), the activation its post-op; the launches are n's.
	ok, err := b.fastDeconv(n, cv.Attrs, []graph.PostOp{post})
	if err != nil || ok {
		return err
	}
	return b.lowerFusionBody(n, body, "a ConvTranspose the blocked kernel does not take")
}

package fusion

import (
	"context"
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// PassFuseDeconvActivation is the pass name of FuseDeconvActivation.
const PassFuseDeconvActivation = "FuseDeconvActivation"

// DeconvKernel is the catalogue kernel of the KernelFusion nodes
// FuseDeconvActivation makes: the register-blocked transposed convolution
// (kernels/conv_transpose_blocked.cl), whose epilogue applies post-ops.
const DeconvKernel = "fused_deconv2d"

// FuseDeconvActivation replaces a 2-D ConvTranspose with constant weights
// followed by an activation of one input (Relu, Sigmoid, HardSigmoid,
// HardSwish, Tanh, Gelu, LeakyRelu: PP-OCRv4 det's head, ConvTranspose +
// Relu, then ConvTranspose + Sigmoid), the ConvTranspose's output read
// only by it, with one KernelFusion node of kernel fused_deconv2d
// (graph.LaunchDeconv) whose body is the pair: the GPU runs the
// activation in the deconvolution's epilogue where its register-blocked
// kernel takes the ConvTranspose (kernel = stride, no padding), and the
// body's two nodes otherwise. It runs only where the device sets
// Options.BodyFusions (the GPU).
func FuseDeconvActivation() Pass {
	return Pass{Name: PassFuseDeconvActivation,
		Doc: "run a ConvTranspose and the activation after it as one fused_deconv2d launch with the activation as its post-op, where the blocked kernel takes the ConvTranspose",
		Ops: []string{"ConvTranspose", "Relu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Gelu", "LeakyRelu"},
		Run: func(ctx context.Context, m *graph.Model, o *Options) (int, error) {
			if o == nil || !o.BodyFusions {
				return 0, nil
			}
			return fuseDeconvActivations(ctx, m, o)
		}}
}

// fuseDeconvActivations is FuseDeconvActivation's rewrite.
func fuseDeconvActivations(ctx context.Context, m *graph.Model, o *Options) (int, error) {
	exclude := o.excluded()
	return rewriteEach(ctx, m, func(n *graph.Node, cons map[graph.Output][]graph.Input) (bool, error) {
		if len(n.Inputs) != 1 || len(n.Outputs) != 1 || exclude[n.OpType] {
			return false, nil
		}
		if _, ok := activationPostOp(n); !ok {
			return false, nil
		}
		cv := n.Input(0).Node
		if cv == nil || cv.OpType != "ConvTranspose" || exclude[cv.OpType] || len(cons[n.Input(0)]) != 1 || !deconvFits(cv) {
			return false, nil
		}
		inputs := []graph.Output{cv.Input(0), cv.Input(1)}
		if cv.Input(2).Valid() {
			inputs = append(inputs, cv.Input(2))
		}
		var params []*graph.Node
		var outs []graph.Output
		for i, name := range []string{"x", "w", "b"}[:len(inputs)] {
			p := graph.NewParameter(name, inputs[i].Type(), inputs[i].Shape())
			params = append(params, p)
			outs = append(outs, p.Out(0))
		}
		act := bodyCopy(n, bodyCopy(cv, outs...).Out(0))
		body := graph.NewModel(DeconvKernel, params, []*graph.Node{graph.NewResult("y", act.Out(0))})
		names := mergeNames(cv.OriginalNames(), n.OriginalNames())
		return true, replaceByKernelFusion(cons, n, inputs, body, DeconvKernel, graph.LaunchDeconv, []float32{0}, names)
	})
}

// deconvFits reports whether ConvTranspose node cv is one the blocked
// kernel may take: f32, 2-D, one group, constant 4-D weights and a
// constant bias when it has one (the strides, pads and the device's
// vector width decide at plan time, where the body runs otherwise).
func deconvFits(cv *graph.Node) bool {
	if len(cv.Outputs) != 1 || cv.Input(0).Type() != tensor.F32 || cv.Attrs.Int("group", 1) != 1 {
		return false
	}
	w, ok := cv.ConstInput(1)
	if !ok || w.Type() != tensor.F32 || w.Rank() != 4 {
		return false
	}
	if cv.Input(2).Valid() {
		if _, ok := cv.ConstInput(2); !ok {
			return false
		}
	}
	return true
}

// DeconvFusionParts returns the ConvTranspose of the body of a
// FuseDeconvActivation KernelFusion node and the activation after it as
// a post-op: an error names what does not fit that form.
func DeconvFusionParts(body *graph.Model) (*graph.Node, graph.PostOp, error) {
	nodes, err := body.Nodes()
	if err != nil {
		return nil, graph.PostOp{}, err
	}
	var cv, act *graph.Node
	for _, n := range nodes {
		switch {
		case n.OpType == graph.OpParameter || n.OpType == graph.OpResult:
		case n.OpType == "ConvTranspose" && cv == nil:
			cv = n
		case cv != nil && act == nil:
			act = n
		default:
			return nil, graph.PostOp{}, n.Errorf("deconv fusion %q: node out of place (want ConvTranspose, then one activation)", body.Name)
		}
	}
	if act == nil {
		return nil, graph.PostOp{}, fmt.Errorf("deconv fusion %q: no activation after the ConvTranspose", body.Name)
	}
	p, ok := activationPostOp(act)
	if !ok {
		return nil, graph.PostOp{}, act.Errorf("deconv fusion %q: not an activation a post-op takes", body.Name)
	}
	return cv, p, nil
}

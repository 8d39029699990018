package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// windowGeom is the geometry of a sliding window over the spatial dims of
// a convolution or pooling: input sizes, window sizes, strides, dilations,
// begin/end pads and output sizes.
type windowGeom struct {
	in, k, stride, dil, padB, padE, out []int64
}

// windowGeometry computes output sizes and effective pads from the node's
// strides, dilations, pads and auto_pad attributes (ONNX Conv/pool
// semantics). ceilMode selects ceil rounding of the output size (pools).
func windowGeometry(n *graph.Node, in, k []int64, ceilMode bool) (*windowGeom, error) {
	r := len(in)
	g := &windowGeom{in: in, k: k, stride: make([]int64, r), dil: make([]int64, r),
		padB: make([]int64, r), padE: make([]int64, r), out: make([]int64, r)}
	strides := n.Attrs.Ints("strides", nil)
	dils := n.Attrs.Ints("dilations", nil)
	pads := n.Attrs.Ints("pads", nil)
	if strides != nil && len(strides) != r {
		return nil, n.Errorf("strides %v: want %d values", strides, r)
	}
	if dils != nil && len(dils) != r {
		return nil, n.Errorf("dilations %v: want %d values", dils, r)
	}
	if pads != nil && len(pads) != 2*r {
		return nil, n.Errorf("pads %v: want %d values", pads, 2*r)
	}
	autoPad := n.Attrs.String("auto_pad", "NOTSET")
	for i := 0; i < r; i++ {
		g.stride[i], g.dil[i] = 1, 1
		if strides != nil {
			g.stride[i] = strides[i]
		}
		if dils != nil {
			g.dil[i] = dils[i]
		}
		if g.stride[i] < 1 || g.dil[i] < 1 || k[i] < 1 {
			return nil, n.Errorf("strides %v, dilations %v and kernel %v must be positive", g.stride, g.dil, k)
		}
		ext := (k[i]-1)*g.dil[i] + 1
		switch autoPad {
		case "NOTSET", "":
			if pads != nil {
				g.padB[i], g.padE[i] = pads[i], pads[i+r]
			}
			span := in[i] + g.padB[i] + g.padE[i] - ext
			if span < 0 {
				return nil, n.Errorf("window %d (dilated) exceeds padded input %d on spatial axis %d", ext, in[i]+g.padB[i]+g.padE[i], i)
			}
			if ceilMode {
				g.out[i] = (span+g.stride[i]-1)/g.stride[i] + 1
				// The last window must start inside the input or the
				// begin padding (PyTorch/ONNX rule).
				if (g.out[i]-1)*g.stride[i] >= in[i]+g.padB[i] {
					g.out[i]--
				}
			} else {
				g.out[i] = span/g.stride[i] + 1
			}
		case "VALID":
			if in[i] < ext {
				return nil, n.Errorf("window %d (dilated) exceeds input %d on spatial axis %d", ext, in[i], i)
			}
			g.out[i] = (in[i]-ext)/g.stride[i] + 1
		case "SAME_UPPER", "SAME_LOWER":
			g.out[i] = (in[i] + g.stride[i] - 1) / g.stride[i]
			total := max(0, (g.out[i]-1)*g.stride[i]+ext-in[i])
			if autoPad == "SAME_UPPER" {
				g.padB[i] = total / 2
			} else {
				g.padB[i] = total - total/2
			}
			g.padE[i] = total - g.padB[i]
		default:
			return nil, n.Errorf("auto_pad %q: want NOTSET, SAME_UPPER, SAME_LOWER or VALID", autoPad)
		}
	}
	return g, nil
}

// taps returns, for every spatial axis, a table tab[kd*out+od] holding the
// input coordinate read by output od at window offset kd, or -1 when it
// falls in the padding.
func (g *windowGeom) taps() [][]int64 {
	tabs := make([][]int64, len(g.in))
	for d := range g.in {
		t := make([]int64, g.k[d]*g.out[d])
		for kd := int64(0); kd < g.k[d]; kd++ {
			for od := int64(0); od < g.out[d]; od++ {
				i := od*g.stride[d] - g.padB[d] + kd*g.dil[d]
				if i < 0 || i >= g.in[d] {
					i = -1
				}
				t[kd*g.out[d]+od] = i
			}
		}
		tabs[d] = t
	}
	return tabs
}

// im2col writes the column matrix [channels*nnProd(k), nnProd(out)] of x, which
// holds channels planes of nnProd(in) elements.
func im2col(g *windowGeom, tabs [][]int64, x []float32, channels int, col []float32) {
	r := len(g.in)
	P := int(nnProd(g.out))
	K := int(nnProd(g.k))
	inPlane := int(nnProd(g.in))
	inStr := tensor.ContiguousStrides(g.in)
	lastOut := int(g.out[r-1])
	outer := P / max(lastOut, 1)
	kidx := make([]int64, r)
	oidx := make([]int64, r)
	for c := 0; c < channels; c++ {
		plane := x[c*inPlane : (c+1)*inPlane]
		for ki := 0; ki < K; ki++ {
			// kernel multi-index from ki
			rem := ki
			for d := r - 1; d >= 0; d-- {
				kidx[d] = int64(rem) % g.k[d]
				rem /= int(g.k[d])
			}
			dst := col[(c*K+ki)*P : (c*K+ki+1)*P]
			lastTab := tabs[r-1][kidx[r-1]*g.out[r-1] : (kidx[r-1]+1)*g.out[r-1]]
			for d := range oidx {
				oidx[d] = 0
			}
			for o := 0; o < outer; o++ {
				base := int64(0)
				valid := true
				for d := 0; d < r-1; d++ {
					i := tabs[d][kidx[d]*g.out[d]+oidx[d]]
					if i < 0 {
						valid = false
						break
					}
					base += i * inStr[d]
				}
				row := dst[o*lastOut : (o+1)*lastOut]
				if !valid {
					clear(row)
				} else {
					src := plane[base:]
					for j, i := range lastTab {
						if i < 0 {
							row[j] = 0
						} else {
							row[j] = src[i]
						}
					}
				}
				for d := r - 2; d >= 0; d-- {
					oidx[d]++
					if oidx[d] < g.out[d] {
						break
					}
					oidx[d] = 0
				}
			}
		}
	}
}

// convKernel is ONNX Conv: X [N,C,D...] * W [M,C/group,K...] (+ B [M]).
// Depthwise 2-D convolutions run directly (convDepthwise2D), 3x3 stride-1
// ones with enough channels as Winograd F(2x2, 3x3) (convWinograd3x3), the
// others as a tiled GEMM over the input (1x1, stride 1, unpadded) or its
// im2col (convGEMM); the bias is added in the output pass (convFused).
func convKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	y, err := convFused(n, in[:min(len(in), 3)], nil, nil)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{y}, nil
}

// convInputs returns the data and weights of a Conv or ConvTranspose
// (rank >= 3, the same rank) and its group count.
func convInputs(n *graph.Node, in []*tensor.Tensor) (x, w *tensor.Tensor, group int64, err error) {
	if x, err = nnInput(n, in, 0, 3); err != nil {
		return nil, nil, 0, err
	}
	if w, err = nnInput(n, in, 1, 3); err != nil {
		return nil, nil, 0, err
	}
	if w.Rank() != x.Rank() {
		return nil, nil, 0, n.Errorf("weights %v and input %v differ in rank", w.Shape(), x.Shape())
	}
	return x, w, n.Attrs.Int("group", 1), nil
}

// convTransposeKernel is ONNX ConvTranspose: per (batch, group), the column
// matrix W_g^T X_g (gonum Sgemm) is scattered into the output (col2im).
func convTransposeKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, w, group, err := convInputs(n, in)
	if err != nil {
		return nil, err
	}
	xs, ws := x.Shape(), w.Shape()
	N, C := xs[0], xs[1]
	if group < 1 || C%group != 0 || ws[0] != C {
		return nil, n.Errorf("input %v, weights %v and group %d do not fit (want W[0] = C, C divisible by group)", xs, ws, group)
	}
	Mg := ws[1]
	M := Mg * group
	var bias []float32
	if len(in) > 2 && in[2] != nil {
		if in[2].NumElements() != M {
			return nil, n.Errorf("bias %v: want %d elements", in[2].Shape(), M)
		}
		bias = in[2].F32()
	}
	r := len(xs) - 2
	inSp, k := xs[2:], ws[2:]
	if ks := n.Attrs.Ints("kernel_shape", nil); ks != nil && !tensor.Shape(ks).Equal(k) {
		return nil, n.Errorf("kernel_shape %v differs from weights %v", ks, ws)
	}
	strides, err := n.IntsAttr("strides", r, 1)
	if err != nil {
		return nil, err
	}
	dils, err := n.IntsAttr("dilations", r, 1)
	if err != nil {
		return nil, err
	}
	outPad, err := n.IntsAttr("output_padding", r, 0)
	if err != nil {
		return nil, err
	}
	pads, err := n.IntsAttr("pads", 2*r, 0)
	if err != nil {
		return nil, err
	}
	outShape := n.Attrs.Ints("output_shape", nil)
	if len(outShape) == r+2 {
		outShape = outShape[2:]
	}
	if outShape != nil && len(outShape) != r {
		return nil, n.Errorf("output_shape %v: want %d values", outShape, r)
	}
	autoPad := n.Attrs.String("auto_pad", "NOTSET")
	padB, out := make([]int64, r), make([]int64, r)
	for d := 0; d < r; d++ {
		full := strides[d]*(inSp[d]-1) + outPad[d] + (k[d]-1)*dils[d] + 1
		switch {
		case outShape != nil || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER":
			if outShape != nil {
				out[d] = outShape[d]
			} else {
				out[d] = inSp[d] * strides[d]
			}
			// Floor division as in the ONNX reference: a negative total
			// (output_shape larger than the full output) pads at the end.
			total := full - out[d]
			half := total / 2
			if total < 0 && total%2 != 0 {
				half--
			}
			if autoPad == "SAME_UPPER" {
				padB[d] = half
			} else {
				padB[d] = total - half
			}
		case autoPad == "NOTSET" || autoPad == "" || autoPad == "VALID":
			if autoPad != "VALID" {
				padB[d] = pads[d]
				out[d] = full - pads[d] - pads[d+r]
			} else {
				out[d] = full
			}
		default:
			return nil, n.Errorf("auto_pad %q: want NOTSET, SAME_UPPER, SAME_LOWER or VALID", autoPad)
		}
		if out[d] < 0 {
			return nil, n.Errorf("output size %d on spatial axis %d is negative", out[d], d)
		}
	}
	y, err := nnNewF32(n, append(tensor.Shape{N, M}, out...))
	if err != nil {
		return nil, err
	}
	X, W, Y := x.F32(), w.F32(), y.F32()
	Cg := int(C / group)
	K := int(nnProd(k))
	Pin := int(nnProd(inSp))
	Pout := int(nnProd(out))
	outStr := tensor.ContiguousStrides(out)
	// tab[d][kd*in+id] = output coordinate or -1.
	tabs := make([][]int64, r)
	for d := 0; d < r; d++ {
		t := make([]int64, k[d]*inSp[d])
		for kd := int64(0); kd < k[d]; kd++ {
			for id := int64(0); id < inSp[d]; id++ {
				o := id*strides[d] - padB[d] + kd*dils[d]
				if o < 0 || o >= out[d] {
					o = -1
				}
				t[kd*inSp[d]+id] = o
			}
		}
		tabs[d] = t
	}
	nnParallel(int(N*group), func(lo, hi int) {
		held, col := scratchF32(int(Mg) * K * Pin)
		defer convScratch.Put(held)
		kidx := make([]int64, r)
		iidx := make([]int64, r)
		lastIn := int(inSp[r-1])
		outer := Pin / max(lastIn, 1)
		for t := lo; t < hi; t++ {
			b, gi := t/int(group), t%int(group)
			xg := X[(b*int(C)+gi*Cg)*Pin : (b*int(C)+(gi+1)*Cg)*Pin]
			wg := W[gi*Cg*int(Mg)*K : (gi+1)*Cg*int(Mg)*K]
			nnSgemm(true, false, int(Mg)*K, Pin, Cg, 1, wg, int(Mg)*K, xg, Pin, 0, col, Pin)
			for m := 0; m < int(Mg); m++ {
				ch := b*int(M) + gi*int(Mg) + m
				yp := Y[ch*Pout : (ch+1)*Pout]
				if bias != nil {
					bv := bias[gi*int(Mg)+m]
					for j := range yp {
						yp[j] = bv
					}
				}
				for ki := 0; ki < K; ki++ {
					rem := ki
					for d := r - 1; d >= 0; d-- {
						kidx[d] = int64(rem) % k[d]
						rem /= int(k[d])
					}
					src := col[(m*K+ki)*Pin : (m*K+ki+1)*Pin]
					lastTab := tabs[r-1][kidx[r-1]*inSp[r-1] : (kidx[r-1]+1)*inSp[r-1]]
					clear(iidx)
					for o := 0; o < outer; o++ {
						base := int64(0)
						valid := true
						for d := 0; d < r-1; d++ {
							oc := tabs[d][kidx[d]*inSp[d]+iidx[d]]
							if oc < 0 {
								valid = false
								break
							}
							base += oc * outStr[d]
						}
						if valid {
							row := src[o*lastIn : (o+1)*lastIn]
							dst := yp[base:]
							for j, oc := range lastTab {
								if oc >= 0 {
									dst[oc] += row[j]
								}
							}
						}
						for d := r - 2; d >= 0; d-- {
							iidx[d]++
							if iidx[d] < inSp[d] {
								break
							}
							iidx[d] = 0
						}
					}
				}
			}
		}
	})
	return []*tensor.Tensor{y}, nil
}

// fusedConvKernel is Conv on inputs 0..2 followed by the post-ops, which may
// read the residual input 3; the post-ops run in the conv's output pass
// (convFused).
func fusedConvKernel(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	ops, err := graph.PostOps(n)
	if err != nil {
		return nil, err
	}
	y, err := convFused(n, in[:min(len(in), 3)], ops, opt(in, 3))
	if err != nil {
		return nil, err
	}
	return one(y), nil
}

// convKernels are the convolutions, FusedConv with its post-ops included.
func convKernels() map[string]Kernel {
	return map[string]Kernel{
		"Conv":            nnFloatKernel(convKernel),
		"ConvTranspose":   nnFloatKernel(convTransposeKernel),
		graph.OpFusedConv: nnFloatKernel(fusedConvKernel),
	}
}

// convImpls name the implementations of the convolutions for the runtime
// model (see Impl).
var convImpls = map[string]string{
	"Conv":          "ref_conv_gonum", // depthwise direct, Winograd F(2x2,3x3), 1x1 GEMM or im2col GEMM by shape (convShape.path)
	"ConvTranspose": "ref_convtranspose_col2im_gonum",
}

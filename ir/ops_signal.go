package ir

import (
	"github.com/clinfer/clinfer/tensor"

	"github.com/clinfer/clinfer/graph"
)

// signalImports are the Fourier transforms of one axis.
var signalImports = []importRow{
	{"DFT", 7, importDFT(false, false)},
	{"IDFT", 7, importDFT(true, false)},
	{"RDFT", 9, importDFT(false, true)},
	{"IRDFT", 9, importIRDFT},
}

// dftAxis reads the (I)(R)DFT layers' constant axes, one axis, and
// signal_size (-1 when absent or -1).
func (c *layerCtx) dftAxis() ([]int64, int64, error) {
	if err := c.inputs(2, 3); err != nil {
		return nil, 0, err
	}
	axes, err := c.ints(1, "axes")
	if err != nil {
		return nil, 0, err
	}
	if len(axes) != 1 {
		return nil, 0, c.errorf(ErrUnsupportedAttribute, "a transform over axes %v is not supported (over one axis is)", axes)
	}
	if len(c.in) < 3 {
		return axes, -1, nil
	}
	l, err := c.ints(2, "signal_size")
	if err != nil {
		return nil, 0, err
	}
	if len(l) != 1 {
		return nil, 0, c.errorf(ErrInvalidModel, "signal_size has %d values for one axis", len(l))
	}
	return axes, l[0], nil
}

// importIRDFT reads IRDFT-9 over one axis: the one-sided spectrum (cut or
// zero-padded to N/2+1 bins, N the signal_size or 2*(bins-1)) completed
// by Hermitian symmetry (bin k > N/2 is bin N-k conjugated), inverted by
// a complex DFT of length N, its real part the output.
func importIRDFT(c *layerCtx) ([]graph.Output, error) {
	axes, size, err := c.dftAxis()
	if err != nil {
		return nil, err
	}
	r, err := c.rank(0)
	if err != nil {
		return nil, err
	}
	a := axes[0]
	if a < 0 {
		a += int64(r - 1) // IR counts axes without the trailing complex one
	}
	s := c.in[0].Shape()
	if a < 0 || a >= int64(r-1) || !s.Dims[a].IsStatic() {
		return nil, c.errorf(ErrUnsupportedAttribute, "IRDFT needs axis %d of input %v static", axes[0], s)
	}
	bins := s.Dims[a].Size
	n := 2 * (bins - 1)
	if size != -1 {
		n = size
	}
	if n < 1 {
		return nil, c.errorf(ErrInvalidModel, "IRDFT of %d bins gives a signal of %d samples", bins, n)
	}
	keep := n/2 + 1
	x := c.in[0]
	if keep != bins {
		pads := make([]int64, 2*r)
		pads[r+int(a)] = keep - bins // negative: cut
		if x, err = c.op("Pad", "half", nil, x, c.constI64("half_pads", false, pads...)); err != nil {
			return nil, err
		}
	}
	full := x
	if n-keep > 0 {
		var idx []int64
		for k := keep; k < n; k++ {
			idx = append(idx, n-k)
		}
		mirror, err := c.op("Gather", "mirror", graph.Attrs{"axis": a}, x, c.constI64("mirror_bins", false, idx...))
		if err != nil {
			return nil, err
		}
		conj, err := c.constOf("conjugate", x.Type(), false, 1, -1)
		if err != nil {
			return nil, err
		}
		if mirror, err = c.op("Mul", "conjugated", nil, mirror, conj); err != nil {
			return nil, err
		}
		if full, err = c.op("Concat", "spectrum", graph.Attrs{"axis": a}, x, mirror); err != nil {
			return nil, err
		}
	}
	y, err := c.op("DFT", "inverse", graph.Attrs{"inverse": int64(1), "onesided": int64(0)}, full, graph.Output{}, c.constI64("axis", true, a))
	if err != nil {
		return nil, err
	}
	return one(c.op("Gather", "", graph.Attrs{"axis": int64(-1)}, y, c.constI64("real", true, 0)))
}

// importDFT is DFT over one axis (axes with one entry), signal_size its
// dft_length; RDFT takes a real input (without the trailing complex axis)
// and keeps the one-sided half.
func importDFT(inverse, real bool) importFunc {
	return func(c *layerCtx) ([]graph.Output, error) {
		axes, size, err := c.dftAxis()
		if err != nil {
			return nil, err
		}
		x := c.in[0]
		axis := axes[0]
		if real {
			if x, err = c.op("Unsqueeze", "complex", nil, x, c.constI64("complex_axis", false, -1)); err != nil {
				return nil, err
			}
		}
		if axis < 0 {
			axis-- // IR counts negative axes without the trailing complex one
		}
		length := graph.Output{}
		if size != -1 {
			length = c.constI64("dft_length", true, size)
		}
		attrs := graph.Attrs{"inverse": b2i(inverse), "onesided": b2i(real)}
		return one(c.op("DFT", "", attrs, x, length, c.constI64("axis", true, axis)))
	}
}

// signalExports write a complex DFT of one constant axis as DFT-7 or
// IDFT-7.
var signalExports = map[string]exportFunc{
	"DFT": func(e *exportCtx) (bool, error) {
		x := e.in(0)
		if !x.Valid() || !e.onlyAttrs("inverse", "onesided") || e.attrInt("onesided", 0) != 0 || len(e.n.Inputs) != 3 {
			return false, nil
		}
		xs := x.Shape()
		if !xs.RankKnown || len(xs.Dims) < 2 || xs.Dims[len(xs.Dims)-1].Size != 2 {
			return false, nil
		}
		axis, ok := e.ints(2)
		if v, _ := e.value(2); !ok || !e.owned(2) || len(axis) != 1 || v.Type() != tensor.I64 || len(v.Shape()) != 0 {
			return false, nil
		}
		a := axis[0]
		if a < 0 {
			a++ // IR counts negative axes without the complex one
			if a >= 0 {
				return false, nil
			}
		}
		in := []src{from(x), e.i64Src("axes", false, a)}
		if l := e.in(1); l.Valid() {
			lv, ok := e.ints(1)
			if v, _ := e.value(1); !ok || !e.owned(1) || len(lv) != 1 || v.Type() != tensor.I64 || len(v.Shape()) != 0 || lv[0] == -1 {
				return false, nil
			}
			in = append(in, e.i64Src("signal_size", false, lv[0]))
		}
		typ := "DFT"
		if e.attrInt("inverse", 0) != 0 {
			typ = "IDFT"
		}
		return e.single(typ, 7, nil, in...)
	},
}

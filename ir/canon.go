package ir

import (
	"github.com/clinfer/clinfer/graph"
)

// The canonical form of a node read from an op of OpenVINO's opsets: the
// attributes whose value is the op set's default are left out, and the
// ones IR has no place for (ONNX's training-time BatchNormalization
// momentum, a Conv's kernel_shape that repeats its weights' shape) are
// dropped. The reader puts every node it makes from a standard op in
// this form; the round-trip tests put the source model's nodes that the
// writer expresses in standard ops in it too (Canonical), so "reads back
// to the same graph" is an exact comparison.

// attrDefault says whether value v of an attribute of n is its default.
type attrDefault func(n *graph.Node, v any) bool

func isInt(d int64) attrDefault {
	return func(_ *graph.Node, v any) bool {
		switch x := v.(type) {
		case int64:
			return x == d
		case int:
			return int64(x) == d
		}
		return false
	}
}

func isStr(d string) attrDefault {
	return func(_ *graph.Node, v any) bool { s, ok := v.(string); return ok && s == d }
}

func isFloat(d float32) attrDefault {
	return func(_ *graph.Node, v any) bool { f, ok := v.(float32); return ok && f == d }
}

// allAre is the default of window lists: every element is d.
func allAre(d int64) attrDefault {
	return func(_ *graph.Node, v any) bool {
		l, ok := v.([]int64)
		if !ok {
			return false
		}
		for _, x := range l {
			if x != d {
				return false
			}
		}
		return true
	}
}

// isWeightWindow is the default of a convolution's kernel_shape: the
// spatial dims of its weights.
func isWeightWindow(n *graph.Node, v any) bool {
	l, ok := v.([]int64)
	w := n.Input(1)
	if !ok || !w.Valid() {
		return false
	}
	ws := w.Shape()
	if !ws.RankKnown || len(ws.Dims) != len(l)+2 {
		return false
	}
	for i, k := range l {
		if d := ws.Dims[2+i]; !d.IsStatic() || d.Size != k {
			return false
		}
	}
	return true
}

// isOutputCount is the default of Split's num_outputs: the node's count.
func isOutputCount(n *graph.Node, v any) bool { return isInt(int64(len(n.Outputs)))(n, v) }

// always marks attributes IR cannot carry and inference ignores.
func always(*graph.Node, any) bool { return true }

var windowDefaults = map[string]attrDefault{
	"auto_pad": isStr("NOTSET"), "strides": allAre(1), "dilations": allAre(1), "pads": allAre(0),
}

// attrDefaults lists, per op, the attributes the canonical form leaves out
// at their defaults. Float attributes of an op's Params are covered by the
// op table.
var attrDefaults = withReductions(map[string]map[string]attrDefault{
	"Conv":               merge(windowDefaults, map[string]attrDefault{"group": isInt(1), "kernel_shape": isWeightWindow}),
	"ConvTranspose":      merge(windowDefaults, map[string]attrDefault{"group": isInt(1), "kernel_shape": isWeightWindow, "output_padding": allAre(0)}),
	"MaxPool":            merge(windowDefaults, map[string]attrDefault{"ceil_mode": isInt(0), "storage_order": isInt(0)}),
	"AveragePool":        merge(windowDefaults, map[string]attrDefault{"ceil_mode": isInt(0), "count_include_pad": isInt(0)}),
	"Softmax":            {"axis": isInt(-1)},
	"LogSoftmax":         {"axis": isInt(-1)},
	"Gather":             {"axis": isInt(0)},
	"GatherElements":     {"axis": isInt(0)},
	"GatherND":           {"batch_dims": isInt(0)},
	"ScatterElements":    {"axis": isInt(0), "reduction": isStr("none")},
	"ScatterND":          {"reduction": isStr("none")},
	"Split":              {"axis": isInt(0), "num_outputs": isOutputCount},
	"OneHot":             {"axis": isInt(-1)},
	"TopK":               {"axis": isInt(-1), "largest": isInt(1), "sorted": isInt(1)},
	"CumSum":             {"exclusive": isInt(0), "reverse": isInt(0)},
	"DepthToSpace":       {"mode": isStr("DCR")},
	"Mod":                {"fmod": isInt(0)},
	"Reshape":            {"allowzero": isInt(0)},
	"Pad":                {"mode": isStr("constant")},
	"Gelu":               {"approximate": isStr("none")},
	"BatchNormalization": {"epsilon": isFloat(1e-5), "momentum": always, "spatial": always, "training_mode": isInt(0)},
	"Resize": {"mode": isStr("nearest"), "coordinate_transformation_mode": isStr("half_pixel"),
		"nearest_mode": isStr("round_prefer_floor"), "cubic_coeff_a": isFloat(-0.75), "antialias": isInt(0),
		"exclude_outside": isInt(0), "extrapolation_value": isFloat(0), "keep_aspect_ratio_policy": isStr("stretch")},
	"GridSample":        {"mode": isStr("linear"), "padding_mode": isStr("zeros"), "align_corners": isInt(0)},
	"RoiAlign":          {"mode": isStr("avg"), "output_height": isInt(1), "output_width": isInt(1), "sampling_ratio": isInt(0), "spatial_scale": isFloat(1), "coordinate_transformation_mode": isStr("half_pixel")},
	"Cast":              {"saturate": isInt(1)},
	"ReverseSequence":   {"batch_axis": isInt(1), "time_axis": isInt(0)},
	"DFT":               {"inverse": isInt(0), "onesided": isInt(0)},
	"Concat":            {},
	"Shape":             {"start": isInt(0)},
	"MatMul":            {},
	"Unique":            {"sorted": isInt(1)},
	"NonMaxSuppression": {"center_point_box": isInt(0)},
	"Einsum":            {},
})

// withReductions adds the reductions' defaults to t.
func withReductions(t map[string]map[string]attrDefault) map[string]map[string]attrDefault {
	for _, op := range []string{"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2"} {
		t[op] = map[string]attrDefault{"keepdims": isInt(1), "noop_with_empty_axes": isInt(0)}
	}
	return t
}

func merge(a, b map[string]attrDefault) map[string]attrDefault {
	out := make(map[string]attrDefault, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// canonAttrs removes n's attributes that are at their defaults.
func canonAttrs(n *graph.Node) {
	if len(n.Attrs) == 0 {
		return
	}
	spec, _ := graph.Lookup(n.OpType)
	defs := attrDefaults[n.OpType]
	for k, v := range n.Attrs {
		if d, ok := defs[k]; ok && d(n, v) {
			delete(n.Attrs, k)
			continue
		}
		for _, p := range spec.Params {
			if p.Name == k && n.Attrs.Float(k, p.Default+1) == p.Default {
				delete(n.Attrs, k)
			}
		}
	}
	if len(n.Attrs) == 0 {
		n.Attrs = graph.Attrs{}
	}
}

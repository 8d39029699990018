package onnx

import (
	"slices"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// importFunc converts one ONNX node into graph nodes in the op set's
// newest-opset form. It returns one Output per ONNX output (a zero Output
// for an output it cannot provide; using such an output is an error).
type importFunc func(c *nodeCtx) ([]graph.Output, error)

// OpEntry is one row of the versioned op table.
type opEntry struct {
	// OpType and Domain name the ONNX op ("" is the default domain).
	OpType, Domain string
	// Since and Until bound the imported opset versions the entry handles:
	// Since <= version < Until, with Until 0 meaning no upper bound.
	Since, Until int64
	// Import converts a node.
	Import importFunc
}

// opTable is the versioned op table: every ONNX op the frontend imports.
// Nodes whose op type, domain and opset version match no row fail with
// ErrUnsupportedOp. It has two kinds of rows: every op of graph's op set
// with a Since version imports as itself from that opset on (one row each,
// made here from graph's table), and the families' rows in ops_F.go
// convert the older forms and the ops that need checks or conversion at
// every version. An importer that emits an op graph.Lookup does not know
// fails with ErrUnsupportedOp too.
var opTable []opEntry

// The control ops' importers convert subgraphs through the table, so the
// table is built in init rather than by its declaration (which would be
// an initialisation cycle).
func init() { opTable = buildOpTable() }

func buildOpTable() []opEntry {
	t := slices.Concat(modelImports, eltwiseImports, activationImports, compareImports, movementImports,
		indexImports, reduceImports, convImports, poolImports, normImports, gemmImports, resizeImports,
		castImports, shapeImports, detectionImports, signalImports, quantImports, sequenceImports, randomImports, windowImports,
		controlImports)
	for _, op := range graph.OpTypes() {
		if s, _ := graph.Lookup(op); s.Since > 0 {
			t = append(t, opEntry{OpType: op, Since: s.Since, Import: same()})
		}
	}
	return t
}

// lookupOp finds the table row for an op at an imported opset version.
func lookupOp(opType, domain string, version int64) (opEntry, bool) {
	if domain == "" && (version < 1 || version > maxOpset) {
		return opEntry{}, false
	}
	for _, e := range opTable {
		if e.OpType == opType && e.Domain == domain && version >= e.Since && (e.Until == 0 || version < e.Until) {
			return e, true
		}
	}
	return opEntry{}, false
}

// check inspects or rewrites a node's attributes before it is emitted.
type check func(c *nodeCtx) error

// enum accepts attribute values from a fixed list.
func enum(attr string, allowed ...string) check {
	return func(c *nodeCtx) error {
		v, ok := c.attrs[attr]
		if !ok {
			return nil
		}
		s, ok := v.(string)
		if !ok {
			return c.attrErrorf(attr, "is a %T, want a string", v)
		}
		for _, a := range allowed {
			if s == a {
				return nil
			}
		}
		return c.attrErrorf(attr, "value %q is not one of %s", s, strings.Join(allowed, ", "))
	}
}

// drop removes attributes that do not change inference results.
func drop(attrs ...string) check {
	return func(c *nodeCtx) error {
		for _, a := range attrs {
			delete(c.attrs, a)
		}
		return nil
	}
}

// defaultInt sets an attribute whose default changed between opsets.
func defaultInt(attr string, v int64) check {
	return func(c *nodeCtx) error {
		if !c.attrs.Has(attr) {
			c.attrs[attr] = v
		}
		return nil
	}
}

// numOutputs is the number of ONNX outputs without trailing omitted ones
// (at least 1).
func numOutputs(c *nodeCtx) int {
	n := len(c.n.outputs)
	for n > 0 && c.n.outputs[n-1] == "" {
		n--
	}
	return max(n, 1)
}

func outputsOf(n *graph.Node) []graph.Output {
	outs := make([]graph.Output, len(n.Outputs))
	for i := range outs {
		outs[i] = n.Out(i)
	}
	return outs
}

func runChecks(c *nodeCtx, checks []check) error {
	for _, ch := range checks {
		if err := ch(c); err != nil {
			return err
		}
	}
	return nil
}

// same emits the op unchanged, after the checks.
func same(checks ...check) importFunc {
	return func(c *nodeCtx) ([]graph.Output, error) {
		if err := runChecks(c, checks); err != nil {
			return nil, err
		}
		return outputsOf(c.node(c.n.opType, "", c.in, c.attrs, numOutputs(c))), nil
	}
}

// attrInput describes an attribute of an old opset that is an input in the
// newest one.
type attrInput struct {
	name     string
	required bool
}

// attrsToInputs moves integer-list attributes to constant i64 inputs
// appended after the node's inputs, in order; an absent optional attribute
// becomes an omitted input.
func attrsToInputs(ins ...attrInput) importFunc {
	return func(c *nodeCtx) ([]graph.Output, error) {
		inputs := append([]graph.Output{}, c.input(0))
		for _, a := range ins {
			v, ok := c.attrs[a.name]
			if !ok {
				if a.required {
					return nil, c.invalidf("required attribute %q is missing", a.name)
				}
				inputs = append(inputs, graph.Output{})
				continue
			}
			ints, ok := v.([]int64)
			if !ok {
				return nil, c.attrErrorf(a.name, "is a %T, want a list of integers", v)
			}
			delete(c.attrs, a.name)
			inputs = append(inputs, c.constI64(a.name, ints))
		}
		for len(inputs) > 1 && inputs[len(inputs)-1].Node == nil {
			inputs = inputs[:len(inputs)-1]
		}
		return outputsOf(c.node(c.n.opType, "", inputs, c.attrs, numOutputs(c))), nil
	}
}

// constInput returns input i's value when it is a Constant node.
func constInput(c *nodeCtx, i int) (*tensor.Tensor, bool) {
	in := c.input(i)
	if in.Node == nil || in.Node.OpType != graph.OpConstant || in.Node.Value == nil {
		return nil, false
	}
	return in.Node.Value, true
}

// Opsets returns the ONNX opset versions (default domain) in which the
// frontend imports the ONNX op called opType: from since on, up to but
// not including until (0: every version up to the newest the frontend
// reads). ok is false for an op it never imports.
func Opsets(opType string) (since, until int64, ok bool) {
	for _, e := range opTable {
		if e.OpType != opType || e.Domain != "" {
			continue
		}
		if !ok || e.Since < since {
			since = e.Since
		}
		if !ok || e.Until == 0 || (until != 0 && e.Until > until) {
			until = e.Until
		}
		ok = true
	}
	return since, until, ok
}

// OpTypes returns the ONNX op types (default domain) the frontend imports
// at some opset, sorted.
func OpTypes() []string {
	var out []string
	for _, e := range opTable {
		if e.Domain == "" && !slices.Contains(out, e.OpType) {
			out = append(out, e.OpType)
		}
	}
	slices.Sort(out)
	return out
}

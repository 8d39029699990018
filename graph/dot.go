package graph

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteText writes a readable dump of the model, one line per node in
// topological order:
//
//	%3 = Conv "conv1" (%0:0, %1:0, %2:0) -> f32[1,8,32,32] {group=1, ...} fused=[conv1,bn1] affinity=GPU
//
// Nodes are numbered in order; inputs name the producer's number and output
// index, or "-" for an omitted optional input.
//
// The bodies a node owns (If branches, Loop and Scan bodies, KernelFusion
// bodies) follow it, indented, each numbered on its own.
func (m *Model) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if err := m.writeText(bw, "", 0); err != nil {
		return err
	}
	return bw.Flush()
}

func (m *Model) writeText(bw *bufio.Writer, indent string, depth int) error {
	if depth > maxBodyDepth {
		return fmt.Errorf("graph: model %q: bodies nest deeper than %d levels", m.Name, maxBodyDepth)
	}
	nodes, err := m.Nodes()
	if err != nil {
		return err
	}
	fmt.Fprintf(bw, "%smodel %q: %d parameters, %d results, %d nodes\n", indent, m.Name, len(m.Parameters), len(m.Results), len(nodes))
	id := make(map[*Node]int, len(nodes))
	for i, n := range nodes {
		id[n] = i
		var b strings.Builder
		fmt.Fprintf(&b, "%%%d = %s %q (", i, n.OpType, n.Name)
		for j, in := range n.Inputs {
			if j > 0 {
				b.WriteString(", ")
			}
			if in.Node == nil {
				b.WriteString("-")
				continue
			}
			fmt.Fprintf(&b, "%%%d:%d", id[in.Node], in.Index)
		}
		b.WriteString(") -> ")
		for j, p := range n.Outputs {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%v%v", p.Type, p.Shape)
		}
		if len(n.Attrs) > 0 {
			fmt.Fprintf(&b, " {%s}", n.Attrs.Format())
		}
		if n.Value != nil && n.OpType == OpConstant {
			fmt.Fprintf(&b, " value=%v", n.Value)
		}
		if len(n.RT.FusedNames) > 0 {
			fmt.Fprintf(&b, " fused=[%s]", strings.Join(n.RT.FusedNames, ","))
		}
		if n.RT.Affinity != "" {
			fmt.Fprintf(&b, " affinity=%s", n.RT.Affinity)
		}
		for _, k := range sortedKeys(n.RT.Extra) {
			fmt.Fprintf(&b, " %s=%s", k, strconv.Quote(n.RT.Extra[k]))
		}
		b.WriteByte('\n')
		bw.WriteString(indent + b.String())
		for _, body := range n.Bodies() {
			fmt.Fprintf(bw, "%s  %s:\n", indent, body.Attr)
			if err := body.Model.writeText(bw, indent+"    ", depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteDot writes the model as a Graphviz digraph: one box per node labelled
// with its op, name and affinity, one edge per input labelled with the
// value's type and shape.
func (m *Model) WriteDot(w io.Writer) error {
	return m.WriteDotLabeled(w, func(n *Node) []string {
		lines := []string{n.OpType, n.Name}
		if n.RT.Affinity != "" {
			lines = append(lines, "@"+n.RT.Affinity)
		}
		return lines
	})
}

// WriteDotLabeled is WriteDot with each node's label lines from label
// (tools label nodes with their runtime facts).
func (m *Model) WriteDotLabeled(w io.Writer, label func(n *Node) []string) error {
	nodes, err := m.Nodes()
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "digraph %s {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n", strconv.Quote(m.Name))
	id := make(map[*Node]int, len(nodes))
	for i, n := range nodes {
		id[n] = i
		style := ""
		switch n.OpType {
		case OpParameter:
			style = ", shape=ellipse, style=filled, fillcolor=\"#d0e8ff\""
		case OpResult:
			style = ", shape=ellipse, style=filled, fillcolor=\"#d8f5d0\""
		case OpConstant:
			style = ", style=filled, fillcolor=\"#eeeeee\""
		}
		fmt.Fprintf(bw, "  n%d [label=%s%s];\n", i, strconv.Quote(strings.Join(label(n), "\n")), style)
		for j, in := range n.Inputs {
			if !in.Valid() {
				continue
			}
			p := in.Node.Outputs[in.Index]
			fmt.Fprintf(bw, "  n%d -> n%d [label=%s];\n", id[in.Node], i, strconv.Quote(fmt.Sprintf("%d: %v%v", j, p.Type, p.Shape)))
		}
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

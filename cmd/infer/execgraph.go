package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin"
)

// execGraphKeys are the runtime-model annotations an -exec_graph node
// label shows, in this order (OpenVINO's exec graph names).
var execGraphKeys = []string{"LAYER_TYPE", "IMPL_TYPE", "EXECUTION_ORDER", "PERF_COUNTER", "ORIGINAL_NAMES"}

// writeExecGraph writes the compiled model's runtime model to path as a
// Graphviz digraph: one box per executed node labelled with its name and
// the execGraphKeys annotations it has, one edge per input labelled
// with the value's type and shape.
func writeExecGraph(path string, cm plugin.CompiledModel) error {
	rm, err := cm.RuntimeModel()
	if err != nil {
		return fmt.Errorf("-exec_graph %s: %w", path, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("-exec_graph: %w", err)
	}
	if err := writeExecDot(f, rm); err != nil {
		_ = f.Close()
		return fmt.Errorf("-exec_graph %s: %w", path, err)
	}
	return f.Close()
}

// writeExecDot writes rm as dot (see writeExecGraph).
func writeExecDot(w io.Writer, rm *graph.Model) error {
	nodes, err := rm.Nodes()
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "digraph %s {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n", strconv.Quote(rm.Name))
	id := make(map[*graph.Node]int, len(nodes))
	for i, n := range nodes {
		id[n] = i
		lines := []string{n.Name}
		for _, k := range execGraphKeys {
			if v, ok := n.RT.Extra[k]; ok {
				lines = append(lines, k+": "+v)
			}
		}
		if n.RT.Affinity != "" {
			lines = append(lines, "AFFINITY: "+n.RT.Affinity)
		}
		style := ""
		switch n.OpType {
		case graph.OpParameter, graph.OpResult:
			style = ", shape=ellipse"
		case graph.OpConstant:
			style = ", style=filled, fillcolor=\"#eeeeee\""
		}
		fmt.Fprintf(bw, "  n%d [label=%s%s];\n", i, strconv.Quote(strings.Join(lines, "\n")), style)
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

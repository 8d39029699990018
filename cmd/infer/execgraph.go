package main

import (
	"fmt"
	"io"
	"os"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
)

// execGraphKeys are the runtime-model annotations an -exec_graph node
// label shows, in this order (OpenVINO's exec graph names).
var execGraphKeys = []string{"LAYER_TYPE", "IMPL_TYPE", "EXECUTION_ORDER", "PERF_COUNTER", "ORIGINAL_NAMES"}

// writeExecGraph writes the compiled model's runtime model to path as a
// Graphviz digraph: one box per executed node labelled with its name and
// the execGraphKeys annotations it has, one edge per input labelled
// with the value's type and shape.
func writeExecGraph(path string, cm driver.CompiledModel) error {
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
	return rm.WriteDotLabeled(w, func(n *graph.Node) []string {
		lines := []string{n.Name}
		for _, k := range execGraphKeys {
			if v, ok := n.RT.Extra[k]; ok {
				lines = append(lines, k+": "+v)
			}
		}
		if n.RT.Affinity != "" {
			lines = append(lines, "AFFINITY: "+n.RT.Affinity)
		}
		return lines
	})
}

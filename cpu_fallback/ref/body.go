package ref

import (
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// Program is a body (an If branch, a Loop or Scan body, a KernelFusion
// body) planned once for the reference kernels: its nodes in topological
// order, each with its kernel and the value slots it reads and writes, and
// when each slot can be dropped. Running it costs the kernels and nothing
// else, so a Loop runs its body's plan on every iteration instead of
// walking the graph again. A Program is immutable and safe for concurrent
// Runs.
type Program struct {
	name    string
	steps   []progStep
	slots   int
	params  []int // slot of each Parameter
	results []int // slot each Result reads
	consts  []progConst
	// owned says, per result, whether its value is made by a step (and so
	// belongs to the caller) rather than a Parameter or a Constant.
	owned []bool
}

type progStep struct {
	node *graph.Node
	k    Kernel
	in   []int // -1 for an omitted input
	out  []int
	free []int // slots read for the last time here
}

type progConst struct {
	slot int
	v    *tensor.Tensor
}

// Compile plans body m. Nested bodies (a control op inside m) are planned
// too, once, by Prepare. An op without a reference kernel is an error
// naming the node.
func Compile(m *graph.Model) (*Program, error) {
	return compile(m, hostKernels())
}

func compile(m *graph.Model, table map[string]Kernel) (*Program, error) {
	nodes, err := m.Nodes()
	if err != nil {
		return nil, err
	}
	p := &Program{name: m.Name}
	slot := map[graph.Output]int{}
	for _, n := range nodes {
		for i := range n.Outputs {
			slot[n.Out(i)] = p.slots
			p.slots++
		}
	}
	param := make(map[*graph.Node]bool, len(m.Parameters))
	for _, prm := range m.Parameters {
		param[prm] = true
		s, ok := slot[prm.Out(0)]
		if !ok {
			// A Parameter nothing reads is not among the nodes.
			s = p.slots
			p.slots++
		}
		p.params = append(p.params, s)
	}
	last := make([]int, p.slots)
	for i := range last {
		last[i] = -1
	}
	isConst := make([]bool, p.slots)
	for _, n := range nodes {
		switch n.OpType {
		case graph.OpParameter:
			if !param[n] {
				return nil, n.Errorf("body %q reads a parameter that is not in its parameter list", m.Name)
			}
			continue
		case graph.OpConstant:
			if n.Value == nil {
				return nil, n.Errorf("constant has no value")
			}
			p.consts = append(p.consts, progConst{slot: slot[n.Out(0)], v: n.Value.Contiguous()})
			isConst[slot[n.Out(0)]] = true
			continue
		case graph.OpResult:
			continue
		}
		k, err := prepare(n, table)
		if err != nil {
			return nil, err
		}
		st := progStep{node: n, k: k, in: make([]int, len(n.Inputs)), out: make([]int, len(n.Outputs))}
		for i, in := range n.Inputs {
			st.in[i] = -1
			if in.Valid() {
				st.in[i] = slot[in]
				last[st.in[i]] = len(p.steps)
			}
		}
		for i := range n.Outputs {
			st.out[i] = slot[n.Out(i)]
		}
		p.steps = append(p.steps, st)
	}
	keep := make([]bool, p.slots)
	for _, r := range m.Results {
		if !r.Input(0).Valid() {
			return nil, r.Errorf("result has no input")
		}
		s := slot[r.Input(0)]
		keep[s] = true
		p.results = append(p.results, s)
		src := r.Input(0).Node.OpType
		p.owned = append(p.owned, src != graph.OpParameter && src != graph.OpConstant)
	}
	for s, l := range last {
		if l >= 0 && !keep[s] && !isConst[s] {
			p.steps[l].free = append(p.steps[l].free, s)
		}
	}
	return p, nil
}

// Run computes the body's results from its parameters' values (nil for an
// omitted one). The results belong to the caller: a result that is a
// Parameter or a Constant of the body is a copy.
func (p *Program) Run(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	vals := make([]*tensor.Tensor, p.slots)
	for i, s := range p.params {
		if i < len(in) {
			vals[s] = in[i]
		}
	}
	for _, c := range p.consts {
		vals[c.slot] = c.v
	}
	args := make([]*tensor.Tensor, 0, 8)
	for i := range p.steps {
		st := &p.steps[i]
		args = args[:0]
		for _, s := range st.in {
			if s < 0 {
				args = append(args, nil)
				continue
			}
			args = append(args, vals[s])
		}
		outs, err := st.k(st.node, args)
		if err != nil {
			return nil, err
		}
		if len(outs) < len(st.out) {
			return nil, st.node.Errorf("kernel returned %d outputs, want %d", len(outs), len(st.out))
		}
		for j, s := range st.out {
			vals[s] = outs[j]
		}
		for _, s := range st.free {
			vals[s] = nil
		}
	}
	out := make([]*tensor.Tensor, len(p.results))
	for j, s := range p.results {
		v := vals[s]
		if v == nil {
			return nil, p.errorf("result %d has no value", j)
		}
		if !p.owned[j] {
			v = v.Clone()
		}
		out[j] = v.Contiguous()
	}
	return out, nil
}

// errorf returns an error naming the body.
func (p *Program) errorf(format string, args ...any) error {
	return fmt.Errorf("ref: body %q: %s", p.name, fmt.Sprintf(format, args...))
}

// prepare returns the kernel that runs n: the table's, or, for a node that
// owns bodies (a control op, a KernelFusion), a kernel holding its bodies'
// programs, planned here once.
func prepare(n *graph.Node, table map[string]Kernel) (Kernel, error) {
	if n.Domain != "" {
		return nil, n.Errorf("op %s.%s has no CPU kernel", n.Domain, n.OpType)
	}
	switch n.OpType {
	case graph.OpIf:
		return prepareIf(n, table)
	case graph.OpLoop:
		return prepareLoop(n, table)
	case graph.OpScan:
		return prepareScan(n, table)
	case graph.OpKernelFusion:
		return prepareKernelFusion(n, table)
	}
	k, ok := table[n.OpType]
	if !ok {
		return nil, n.Errorf("op %s has no CPU kernel", n.OpType)
	}
	return k, nil
}

// Prepare returns the kernel the CPU device runs n with: Lookup's, or, for
// a node that owns bodies, one that runs their programs, planned once here
// (see Program).
func Prepare(n *graph.Node) (Kernel, error) { return prepare(n, hostKernels()) }

package hetero

import (
	"fmt"
	"sort"

	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Links between subgraphs that stay on the device. A link whose producer
// and consumers are all subgraphs compiled in one remote context (GPU
// subgraphs on the same device), which is no model output and which no
// consumer reads on the host (driver.OutputShaper.HostInputs: a shape or
// an index the consumer plans on), is a remote tensor of that context
// bound as the producer's output and the consumers' input. A link of
// static shape gets its tensor when the request is made. A link of
// dynamic shape is sized before each run of its producer: the producer's
// compiled model (a driver.OutputShaper) tells its output shapes from
// the concrete shapes of its inputs and the values of its host inputs,
// and the link takes the tensor it has for that shape, made on the first
// inference of that shape, so that steady state allocates nothing. Every
// other link goes through host memory; so does a link of dynamic shape
// once its producer cannot tell its shape before running (an output whose
// size depends on values computed on the device): HostLinks lists them.

// deviceLink is a link of dynamic shape kept on the device.
type deviceLink struct {
	src  source
	typ  tensor.ElementType
	out  int      // the link's index among its producer's outputs
	uses [][2]int // consumers: (subgraph, input index)
	// tensors holds one remote tensor per shape seen (by tensor.Shape's
	// String), owned by the request's remotes; bound is the one bound
	// now.
	tensors map[string]driver.RemoteTensor
	bound   driver.RemoteTensor
	// host is set once the producer could not tell the link's shape
	// before running it: the link goes through host memory from then on.
	host bool
}

// linkOnDevice finds the links that stay on the device (see above),
// binds a remote tensor to each of static shape and records those of
// dynamic shape in r.dynamic for sizeLinks.
func (r *InferRequest) linkOnDevice() error {
	c := r.c
	consumers := map[source][][2]int{} // link -> (subgraph, input index)
	for k, sg := range c.subs {
		for i, in := range sg.inputs {
			if in.from.sub >= 0 {
				consumers[in.from] = append(consumers[in.from], [2]int{k, i})
			}
		}
	}
	contextOf := func(k int) string {
		cm, ok := c.compiled[k].(driver.ContextModel)
		if _, binds := r.subs[k].(driver.RemoteBinder); !ok || !binds {
			return ""
		}
		rc, err := cm.Context()
		if err != nil {
			return ""
		}
		defer rc.Close()
		return rc.DeviceName() + "/" + rc.Params()[driver.KeyOCLContext]
	}
	r.dynamic = make([][]*deviceLink, len(c.subs))
	for _, src := range sortedSources(consumers) {
		uses := consumers[src]
		want := contextOf(src.sub)
		if want == "" || isModelOutput(c.subs[src.sub], src.name) {
			continue
		}
		same := true
		for _, u := range uses {
			same = same && contextOf(u[0]) == want && !r.readsOnHost(u[0], c.subs[u[0]].inputs[u[1]].name)
		}
		outs := c.compiled[src.sub].Outputs()
		out := portIndex(outs, src.name)
		if !same || out < 0 {
			continue
		}
		if s, static := outs[out].Shape.ToShape(); static {
			if _, err := r.deviceTensor(src, outs[out].Type, s, uses); err != nil {
				return err
			}
			continue
		}
		if _, ok := c.compiled[src.sub].(driver.OutputShaper); !ok {
			continue
		}
		r.dynamic[src.sub] = append(r.dynamic[src.sub], &deviceLink{src: src, typ: outs[out].Type, out: out, uses: uses, tensors: map[string]driver.RemoteTensor{}})
		for _, u := range uses {
			r.bound[u[0]][u[1]] = true
		}
	}
	return nil
}

// readsOnHost reports whether subgraph k's compiled model reads the
// values of its input called name on the host, so that input takes host
// tensors only.
func (r *InferRequest) readsOnHost(k int, name string) bool {
	sh, ok := r.c.compiled[k].(driver.OutputShaper)
	if !ok {
		return false
	}
	i := portIndex(r.c.compiled[k].Inputs(), name)
	host := sh.HostInputs()
	return i >= 0 && i < len(host) && host[i]
}

// deviceTensor makes a remote tensor of link src's context of that type
// and shape, binds it as the producer's output and the consumers' input,
// and returns it; the request closes it.
func (r *InferRequest) deviceTensor(src source, typ tensor.ElementType, s tensor.Shape, uses [][2]int) (driver.RemoteTensor, error) {
	c := r.c
	rc, err := c.compiled[src.sub].(driver.ContextModel).Context()
	if err != nil {
		return nil, fmt.Errorf("hetero: intermediate %q: %w", src.name, err)
	}
	t, err := rc.CreateTensor(src.name, typ, s, nil)
	_ = rc.Close() // the tensor holds the context
	if err != nil {
		return nil, fmt.Errorf("hetero: intermediate %q of shape %v on %s: %w", src.name, s, c.subs[src.sub].device, err)
	}
	r.core.Mu.Lock()
	r.remotes = append(r.remotes, t)
	r.core.Mu.Unlock()
	return t, r.bindLink(src, t, uses)
}

// bindLink binds t (a remote tensor, or nil to unbind) as the output of
// link src's producer and the input of its consumers, marking those
// inputs bound by the request when t is not nil.
func (r *InferRequest) bindLink(src source, t driver.RemoteTensor, uses [][2]int) error {
	c := r.c
	if err := r.subs[src.sub].(driver.RemoteBinder).SetRemoteTensor(src.name, t); err != nil {
		return fmt.Errorf("hetero: binding intermediate %q as output of %s: %w", src.name, c.subs[src.sub].name, err)
	}
	for _, u := range uses {
		in := c.subs[u[0]].inputs[u[1]]
		if err := r.subs[u[0]].(driver.RemoteBinder).SetRemoteTensor(in.name, t); err != nil {
			return fmt.Errorf("hetero: binding intermediate %q as input of %s: %w", in.name, c.subs[u[0]].name, err)
		}
		r.core.Mu.Lock()
		r.bound[u[0]][u[1]] = t != nil
		r.core.Mu.Unlock()
	}
	return nil
}

// sizeLinks binds, before subgraph k runs, a remote tensor of this
// inference's shape to each link of dynamic shape k makes on the device:
// k's compiled model tells its output shapes from the shapes of the
// inputs now bound (and the values of its host inputs, which are host
// tensors). A link whose shape it cannot tell goes through host memory
// from now on.
func (r *InferRequest) sizeLinks(k int) error {
	links := r.dynamic[k]
	if len(links) == 0 {
		return nil
	}
	c := r.c
	sub, binder := r.subs[k], r.subs[k].(driver.RemoteBinder)
	ins := c.compiled[k].Inputs()
	shapes := make([]tensor.Shape, len(ins))
	values := make([]*tensor.Tensor, len(ins))
	for i, p := range ins {
		if rt, err := binder.RemoteTensor(p.Name); err == nil {
			shapes[i] = rt.Shape()
			continue
		}
		t, err := sub.Tensor(p.Name)
		if err != nil {
			return fmt.Errorf("hetero: sizing the links of %s: input %q: %w", c.subs[k].name, p.Name, err)
		}
		shapes[i], values[i] = t.Shape(), t
	}
	outs, err := c.compiled[k].(driver.OutputShaper).OutputShapes(shapes, values)
	if err != nil {
		return fmt.Errorf("hetero: sizing the links of %s on %s: %w", c.subs[k].name, c.subs[k].device, err)
	}
	for _, l := range links {
		if l.host {
			continue
		}
		var s tensor.Shape
		if l.out < len(outs) {
			s = outs[l.out]
		}
		if s == nil {
			r.core.Mu.Lock()
			l.host, l.bound = true, nil
			r.core.Mu.Unlock()
			if err := r.bindLink(l.src, nil, l.uses); err != nil {
				return err
			}
			continue
		}
		t, ok := l.tensors[s.String()]
		if !ok {
			if t, err = r.deviceTensor(l.src, l.typ, s, l.uses); err != nil {
				return err
			}
			l.tensors[s.String()], l.bound = t, t
			continue
		}
		if t != l.bound {
			if err := r.bindLink(l.src, t, l.uses); err != nil {
				return err
			}
			l.bound = t
		}
	}
	return nil
}

// HostLinks returns the links between subgraphs that go through host
// memory, as "subgraphN/name", in subgraph order: those a CPU subgraph
// reads or makes, model outputs, values a consumer reads on the host,
// and links of dynamic shape whose producer could not tell their shape
// before running (checked at each inference, so the answer is as of the
// last one). The others stay on the device. It is meant for between
// inferences.
func (r *InferRequest) HostLinks() []string {
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	onDevice := map[source]bool{}
	for _, ls := range r.dynamic {
		for _, l := range ls {
			onDevice[l.src] = !l.host
		}
	}
	seen := map[source]bool{}
	var out []source
	for k, sg := range r.c.subs {
		for i, in := range sg.inputs {
			if in.from.sub < 0 || seen[in.from] {
				continue
			}
			seen[in.from] = true
			dev, dynamic := onDevice[in.from]
			if !dynamic {
				dev = r.onDevice(k, in.name, i)
			}
			if !dev {
				out = append(out, in.from)
			}
		}
	}
	sortSources(out)
	names := make([]string, len(out))
	for i, s := range out {
		names[i] = r.c.subs[s.sub].name + "/" + s.name
	}
	return names
}

// onDevice reports whether input i (called name) of subgraph k is bound
// to a remote tensor.
func (r *InferRequest) onDevice(k int, name string, i int) bool {
	if !r.bound[k][i] {
		return false
	}
	b, ok := r.subs[k].(driver.RemoteBinder)
	if !ok {
		return false
	}
	_, err := b.RemoteTensor(name)
	return err == nil
}

// portIndex returns the index of the port called name, or -1.
func portIndex(ps []driver.PortInfo, name string) int {
	for i, p := range ps {
		if p.Name == name {
			return i
		}
	}
	return -1
}

// isModelOutput reports whether the subgraph's Result called name is also
// a model output (read on the host by postprocess).
func isModelOutput(sg *subgraph, name string) bool {
	for _, o := range sg.outputs {
		if o.name == name {
			return true
		}
	}
	return false
}

// sortedSources orders links by producer and name, so that tensors are
// made in the same order every time.
func sortedSources(m map[source][][2]int) []source {
	out := make([]source, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sortSources(out)
	return out
}

// sortSources orders links by producer and name.
func sortSources(s []source) {
	sort.Slice(s, func(i, j int) bool {
		if s[i].sub != s[j].sub {
			return s[i].sub < s[j].sub
		}
		return s[i].name < s[j].name
	})
}

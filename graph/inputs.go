package graph

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/internal/sentinel"
	"github.com/clinfer/clinfer/internal/suggest"
	"github.com/clinfer/clinfer/tensor"
)

// ErrInputShape is wrapped by the errors of input shapes a model cannot
// take (*InputShapeError). Those errors also match the user API's
// ErrInvalidArgument: the inputs, not the model, are at fault.
var ErrInputShape = errors.New("graph: input shape does not fit the model")

// maxProbes bounds the shape inferences one diagnosis runs.
const maxProbes = 96

// probeLimit is the largest dimension size a diagnosis tries.
const probeLimit = 1 << 16

// InputShapeError says which input has a shape the model cannot take,
// which of its dimensions are at fault and what fits there. It is worked
// out from the shapes alone, by inferring the model's shapes for other
// sizes of the input, never from the node where inference failed (which
// differs between the user's graph and a device's transformed one), so
// every device reports the same input in the same words.
type InputShapeError struct {
	// Inputs are the model's input names, Shapes the shapes given for
	// them and Declared the model's own shapes of them, in order.
	Inputs           []string
	Shapes, Declared []PartialShape
	// Input is the index of the input at fault, or -1 when no single
	// input is (the shapes do not fit together).
	Input int
	// Dims are the input's dimensions at fault (none when they were not
	// narrowed down), and Fits the nearest size that fits at each, or -1
	// when no size up to 65536 does.
	Dims []int
	Fits []int64
	// Example is the input's shape with Fits in place when the model was
	// found to take it (RankKnown false otherwise).
	Example PartialShape
}

// Error says what does not fit and what would.
func (e *InputShapeError) Error() string {
	if e.Input < 0 {
		var got, want []string
		for i, n := range e.Inputs {
			got = append(got, fmt.Sprintf("%q %v", n, e.Shapes[i]))
			want = append(want, fmt.Sprintf("%q %v", n, e.Declared[i]))
		}
		return fmt.Sprintf("the input shapes %s do not fit the model together (it takes %s)", strings.Join(got, ", "), strings.Join(want, ", "))
	}
	s := fmt.Sprintf("input %q of shape %v does not fit the model (declared as %v)", e.Inputs[e.Input], e.Shapes[e.Input], e.Declared[e.Input])
	var parts []string
	for k, d := range e.Dims {
		have := e.Shapes[e.Input].Dims[d].Size
		switch fit := e.Fits[k]; {
		case fit < 0:
			parts = append(parts, fmt.Sprintf("dimension %d is %d, and no size from 0 to %d fits there", d, have, probeLimit))
		case fit > have:
			parts = append(parts, fmt.Sprintf("dimension %d is %d: too small, the smallest size that fits there is %d", d, have, fit))
		default:
			parts = append(parts, fmt.Sprintf("dimension %d is %d: too large, the largest size that fits there is %d", d, have, fit))
		}
	}
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, "; ")
	}
	if len(e.Dims) > 1 && e.Example.RankKnown {
		s += fmt.Sprintf(" (%v fits)", e.Example)
	}
	return s
}

// Unwrap returns ErrInputShape.
func (e *InputShapeError) Unwrap() error { return ErrInputShape }

// Is matches the user API's ErrInvalidArgument.
func (e *InputShapeError) Is(target error) bool { return target == sentinel.ErrInvalidArgument }

// FitInputs returns a copy of m for inputs of the given static shapes and,
// where values[i] is not nil, values (as Specialize does), with every
// shape inferred: what a device reads to plan or to budget an inference of
// those inputs. Unlike Specialize the copy shares m's constant values
// (read them only). Shapes the model cannot take are an *InputShapeError.
func (m *Model) FitInputs(shapes []tensor.Shape, values []*tensor.Tensor) (*Model, error) {
	if len(shapes) != len(m.Parameters) {
		return nil, invalid(fmt.Errorf("model %q: %d input shapes for %d parameters", m.Name, len(shapes), len(m.Parameters)))
	}
	ps := make([]PartialShape, len(shapes))
	for i, s := range shapes {
		ps[i] = StaticShape(s)
	}
	out, err := m.withInputs(ps, values)
	if err != nil {
		return nil, m.diagnose(ps, values)
	}
	return out, nil
}

// Reshape sets the shapes of the inputs named in shapes, as OpenVINO's
// Model::reshape does, and infers every shape of the model again: a
// dimension given as dynamic (ShapeOf's -1) stays dynamic, so a shape may
// fix all of an input's dimensions or some. Inputs not named keep their
// shapes. An unknown name is an error wrapping the user API's ErrNotFound
// that lists the inputs (and suggests the nearest); shapes the model
// cannot take are an *InputShapeError; on error m is unchanged.
func (m *Model) Reshape(shapes map[string]PartialShape) error {
	names := make([]string, len(m.Parameters))
	for i, p := range m.Parameters {
		names[i] = p.Name
	}
	keys := make([]string, 0, len(shapes))
	for k := range shapes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ps := make([]PartialShape, len(m.Parameters))
	for i, p := range m.Parameters {
		ps[i] = p.Outputs[0].Shape.Clone()
	}
	for _, k := range keys {
		i := indexOf(names, k)
		if i < 0 {
			return sentinel.Errorf(sentinel.ErrNotFound, "graph: reshape model %q: no input %q%s (inputs: %s)",
				m.Name, k, suggest.DidYouMean(k, names), strings.Join(names, ", "))
		}
		s := shapes[k].Clone()
		for _, d := range s.Dims {
			if d.Size < -1 {
				return sentinel.Errorf(sentinel.ErrInvalidArgument, "graph: reshape model %q: input %q: bad dimension %d in %v (a size, or -1 for dynamic)", m.Name, k, d.Size, s)
			}
		}
		ps[i] = s
	}
	if _, err := m.withInputs(ps, nil); err != nil {
		return fmt.Errorf("graph: reshape model %q: %w", m.Name, m.diagnose(ps, nil))
	}
	for i, p := range m.Parameters {
		p.Outputs[0].Shape = ps[i]
	}
	if err := m.InferShapes(); err != nil {
		return fmt.Errorf("graph: reshape model %q: %w", m.Name, err) // the copy took the shapes: cannot happen
	}
	return nil
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

// withInputs is a copy of m sharing its constant values, with the inputs'
// shapes set to shapes and, where values[i] is set, the input a constant
// of that value, after shape inference.
func (m *Model) withInputs(shapes []PartialShape, values []*tensor.Tensor) (*Model, error) {
	out := m.clone(false)
	for i, prm := range out.Parameters {
		prm.Outputs[0].Shape = shapes[i]
		if i < len(values) && values[i] != nil {
			prm.OpType, prm.Value = OpConstant, values[i]
		}
	}
	if err := out.InferShapes(); err != nil {
		return nil, err
	}
	return out, nil
}

// diagnose works out the *InputShapeError of shapes the model cannot
// take: the first input whose given dimensions, made dynamic, let the
// inference through; the fewest of them that do; and per dimension, with
// the others dynamic, the nearest size that fits (searched up, then down,
// by doubling and bisection, the declared size tried too).
func (m *Model) diagnose(shapes []PartialShape, values []*tensor.Tensor) *InputShapeError {
	e := &InputShapeError{Shapes: shapes, Input: -1}
	for _, p := range m.Parameters {
		e.Inputs = append(e.Inputs, p.Name)
		e.Declared = append(e.Declared, p.Outputs[0].Shape.Clone())
	}
	probes := 0
	fits := func(i int, s PartialShape) bool {
		if probes >= maxProbes {
			return false
		}
		probes++
		try := append([]PartialShape(nil), shapes...)
		try[i] = s
		vals := append([]*tensor.Tensor(nil), values...)
		if i < len(vals) {
			vals[i] = nil // a shape probed has no value
		}
		_, err := m.withInputs(try, vals)
		return err == nil
	}
	relax := func(s PartialShape, dims []int) PartialShape {
		s = s.Clone()
		for _, d := range dims {
			s.Dims[d] = DynamicDim("")
		}
		return s
	}
	for i, s := range shapes {
		if !s.RankKnown {
			continue
		}
		var given []int
		for d, dim := range s.Dims {
			if dim.IsStatic() {
				given = append(given, d)
			}
		}
		if len(given) == 0 || !fits(i, relax(s, given)) {
			continue
		}
		e.Input = i
		// The fewest dimensions whose relaxing lets the inference through.
		dims := given
		for _, d := range given {
			if len(dims) == 1 {
				break
			}
			fewer := without(dims, d)
			if fits(i, relax(s, fewer)) {
				dims = fewer
			}
		}
		e.Dims = dims
		ex := s.Clone()
		for _, d := range dims {
			others := relax(s, without(dims, d))
			try := func(v int64) bool {
				t := others.Clone()
				t.Dims[d] = StaticDim(v)
				return fits(i, t)
			}
			var decl int64 = -1
			if dd := e.Declared[i]; dd.RankKnown && d < len(dd.Dims) {
				decl = dd.Dims[d].Size
			}
			fit := nearestFit(s.Dims[d].Size, decl, try)
			e.Fits = append(e.Fits, fit)
			ex.Dims[d] = StaticDim(fit)
			if fit < 0 {
				ex = PartialShape{}
			}
		}
		if ex.RankKnown && !fits(i, ex) {
			ex = PartialShape{}
		}
		e.Example = ex
		return e
	}
	return e
}

// without returns dims less d.
func without(dims []int, d int) []int {
	var out []int
	for _, x := range dims {
		if x != d {
			out = append(out, x)
		}
	}
	return out
}

// nearestFit returns the smallest size above have that try accepts (found
// by doubling, then bisection), else the largest below it, else decl when
// try accepts it, else -1.
func nearestFit(have, decl int64, try func(int64) bool) int64 {
	bad := have
	for v := max(2*have, have+1); v <= probeLimit; v *= 2 {
		if try(v) {
			return bisect(bad, v, try)
		}
		bad = v
	}
	bad = have
	for v := have / 2; v < have; v /= 2 {
		if try(v) {
			return bisect(bad, v, try)
		}
		if v == 0 {
			break
		}
		bad = v
	}
	if decl >= 0 && decl != have && try(decl) {
		return decl
	}
	return -1
}

// bisect narrows bad (try refuses it) and good (try accepts it), in either
// order, to neighbours and returns good: the accepted size nearest bad.
func bisect(bad, good int64, try func(int64) bool) int64 {
	for good-bad > 1 || bad-good > 1 {
		mid := bad + (good-bad)/2
		if try(mid) {
			good = mid
		} else {
			bad = mid
		}
	}
	return good
}

// ParsePartialShape parses "[1,3,?,?]" (or "1,3,-1,-1"): a size, or ?, -1
// or a name for a dynamic dimension; "[...]" is the unknown rank.
func ParsePartialShape(s string) (PartialShape, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimPrefix(t, "["), "]")
	if strings.TrimSpace(t) == "..." {
		return DynamicRank, nil
	}
	p := PartialShape{Dims: []Dim{}, RankKnown: true}
	if strings.TrimSpace(t) == "" {
		return p, nil
	}
	for _, f := range strings.Split(t, ",") {
		f = strings.TrimSpace(f)
		switch n, err := strconv.ParseInt(f, 10, 64); {
		case f == "?" || f == "-1":
			p.Dims = append(p.Dims, DynamicDim(""))
		case err == nil && n >= 0:
			p.Dims = append(p.Dims, StaticDim(n))
		case err == nil:
			return PartialShape{}, fmt.Errorf("graph: shape %q: dimension %d is negative (-1 or ? is dynamic)", s, n)
		case f != "" && !strings.ContainsAny(f, " []"):
			p.Dims = append(p.Dims, DynamicDim(f))
		default:
			return PartialShape{}, fmt.Errorf("graph: shape %q: bad dimension %q (want a size, ? or -1)", s, f)
		}
	}
	return p, nil
}

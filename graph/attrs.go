package graph

import (
	"fmt"
	"strings"

	"github.com/clinfer/clinfer/tensor"
)

// Attrs are a node's attributes. Values have one of the types int64,
// float32, string, []int64, []float32, []string, *tensor.Tensor, *Model
// (subgraphs: bodies, see bodies.go).
type Attrs map[string]any

// Has reports whether the attribute is set.
func (a Attrs) Has(name string) bool { _, ok := a[name]; return ok }

// Int returns an integer attribute or def when it is absent.
func (a Attrs) Int(name string, def int64) int64 {
	switch v := a[name].(type) {
	case int64:
		return v
	case int:
		return int64(v)
	}
	return def
}

// Float returns a float attribute or def when it is absent.
func (a Attrs) Float(name string, def float32) float32 {
	switch v := a[name].(type) {
	case float32:
		return v
	case float64:
		return float32(v)
	case int64:
		return float32(v)
	}
	return def
}

// String returns a string attribute or def when it is absent.
func (a Attrs) String(name string, def string) string {
	if v, ok := a[name].(string); ok {
		return v
	}
	return def
}

// Ints returns an integer-list attribute or def when it is absent. The
// result must not be modified.
func (a Attrs) Ints(name string, def []int64) []int64 {
	if v, ok := a[name].([]int64); ok {
		return v
	}
	return def
}

// IntsAttr returns n's integer-list attribute name, which must have want
// entries, or want copies of def when n does not set it; a list of another
// length is an error naming the node.
func (n *Node) IntsAttr(name string, want int, def int64) ([]int64, error) {
	v := n.Attrs.Ints(name, nil)
	if v == nil {
		v = make([]int64, want)
		for i := range v {
			v[i] = def
		}
		return v, nil
	}
	if len(v) != want {
		return nil, n.Errorf("%s %v has %d entries, want %d", name, v, len(v), want)
	}
	return v, nil
}

// Floats returns a float-list attribute or def when it is absent.
func (a Attrs) Floats(name string, def []float32) []float32 {
	if v, ok := a[name].([]float32); ok {
		return v
	}
	return def
}

// Strings returns a string-list attribute or def when it is absent.
func (a Attrs) Strings(name string, def []string) []string {
	if v, ok := a[name].([]string); ok {
		return v
	}
	return def
}

// Tensor returns a tensor attribute or nil when it is absent.
func (a Attrs) Tensor(name string) *tensor.Tensor {
	if v, ok := a[name].(*tensor.Tensor); ok {
		return v
	}
	return nil
}

// Clone returns a deep copy of the attributes.
func (a Attrs) Clone() Attrs {
	if a == nil {
		return nil
	}
	c := make(Attrs, len(a))
	for k, v := range a {
		switch v := v.(type) {
		case []int64:
			c[k] = append([]int64(nil), v...)
		case []float32:
			c[k] = append([]float32(nil), v...)
		case []string:
			c[k] = append([]string(nil), v...)
		case *tensor.Tensor:
			c[k] = v.Clone()
		case *Model:
			c[k] = v.Clone()
		default:
			c[k] = v
		}
	}
	return c
}

// Format renders the attributes as "k=v, k=v" in key order, for dumps.
func (a Attrs) Format() string {
	var parts []string
	for _, k := range sortedKeys(a) {
		v := a[k]
		if t, ok := v.(*tensor.Tensor); ok {
			parts = append(parts, fmt.Sprintf("%s=%v", k, t))
			continue
		}
		if m, ok := v.(*Model); ok && m != nil {
			parts = append(parts, fmt.Sprintf("%s=%s", k, bodySummary(m)))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%v", k, v))
	}
	return strings.Join(parts, ", ")
}

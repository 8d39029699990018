package driver

import (
	"fmt"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/suggest"
	"github.com/clinfer/clinfer/tensor"
)

// ParseDeviceName splits a device name into the plugin name, the device id
// and the priority list:
//
//	"CPU"            -> "CPU", "", ""
//	"GPU.1"          -> "GPU", "1", ""
//	"HETERO:GPU,CPU" -> "HETERO", "", "GPU,CPU"
//
// Each entry of a priority list must itself be a device name without a
// priority list ("GPU.1" is fine, "HETERO:CPU" is not). A malformed name is
// an error wrapping ErrInvalidArgument.
func ParseDeviceName(s string) (name, id, priorities string, err error) {
	bad := func(why string) (string, string, string, error) {
		return "", "", "", errorf(ErrInvalidArgument, "plugin: bad device name %q: %s (want NAME, NAME.ID or NAME:DEV1,DEV2)", s, why)
	}
	if s == "" {
		return bad("empty")
	}
	if strings.ContainsAny(s, " \t\n") {
		return bad("contains white space")
	}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		name, priorities = s[:i], s[i+1:]
		if name == "" || strings.ContainsAny(name, ".,") {
			return bad("bad plugin name before ':'")
		}
		if priorities == "" {
			return bad("empty device list after ':'")
		}
		for _, d := range strings.Split(priorities, ",") {
			if d == "" || strings.Contains(d, ":") {
				return bad("bad entry " + `"` + d + `"` + " in the device list")
			}
			if _, _, _, err := ParseDeviceName(d); err != nil {
				return bad("bad entry " + `"` + d + `"` + " in the device list")
			}
		}
		return name, "", priorities, nil
	}
	if strings.Contains(s, ",") {
		return bad("a device list needs a plugin name and ':' before it")
	}
	name, id, hasID := strings.Cut(s, ".")
	if name == "" {
		return bad("empty plugin name")
	}
	if hasID && id == "" {
		return bad("empty device id after '.'")
	}
	return name, id, "", nil
}

// CheckTensor checks that t may be bound to the port called name among
// ports and returns that port's index. An unknown name is an error wrapping
// ErrNotFound that lists the port names; a nil tensor, a different element
// type or a shape that does not fit the port's static dimensions is an
// error wrapping ErrInvalidArgument that names the port, what it wants and
// what it got. The messages carry no package prefix: callers add theirs.
func CheckTensor(ports []PortInfo, name string, t *tensor.Tensor) (int, error) {
	idx, err := portIndex(ports, name)
	if err != nil {
		return -1, err
	}
	p := ports[idx]
	if t == nil {
		return idx, errorf(ErrInvalidArgument, "port %q: nil tensor (want %s)", name, p)
	}
	return idx, checkValue(p, t)
}

// checkValue checks that value t fits port p: its kind, element type and
// the shapes of the tensors it holds.
func checkValue(p PortInfo, t *tensor.Tensor) error {
	if t.Kind() != p.Kind {
		return errorf(ErrInvalidArgument, "port %q: a %v value %v, want %s", p.Name, t.Kind(), t, p)
	}
	if t.Kind() == tensor.KindTensor {
		return checkFit(p, t.Type(), t.Shape())
	}
	if t.Type() != p.Type && len(t.Items()) > 0 {
		return errorf(ErrInvalidArgument, "port %q: %v, want %s", p.Name, t, p)
	}
	item := tensor.KindTensor // a sequence's items; an optional's content
	if t.Kind().IsOptional() {
		item = t.Kind().Elem()
	}
	for _, it := range t.Items() {
		if err := checkValue(PortInfo{Name: p.Name, Type: p.Type, Shape: p.Shape, Kind: item}, it); err != nil {
			return err
		}
	}
	return nil
}

// CheckRemote is CheckTensor for a remote tensor: the port called name
// must exist and take t's element type and shape.
func CheckRemote(ports []PortInfo, name string, t RemoteTensor) (int, error) {
	idx, err := portIndex(ports, name)
	if err != nil {
		if t != nil {
			err = fmt.Errorf("remote tensor %q: %w", t.Name(), err)
		}
		return -1, err
	}
	p := ports[idx]
	if t == nil {
		return idx, errorf(ErrInvalidArgument, "port %q: nil remote tensor (want %s)", name, p)
	}
	if p.Kind != tensor.KindTensor {
		return idx, errorf(ErrInvalidArgument, "remote tensor %q: port %q takes a %v (%s), which lives on the host; bind it with SetTensor", t.Name(), name, p.Kind, p)
	}
	if err := checkFit(p, t.Type(), t.Shape()); err != nil {
		return idx, fmt.Errorf("remote tensor %q: %w", t.Name(), err)
	}
	return idx, nil
}

// portIndex finds the port called name; an unknown name is an error
// wrapping ErrNotFound that suggests the nearest name and lists them all.
func portIndex(ports []PortInfo, name string) (int, error) {
	for i, p := range ports {
		if p.Name == name {
			return i, nil
		}
	}
	names := make([]string, len(ports))
	for i, p := range ports {
		names[i] = p.Name
	}
	return -1, errorf(ErrNotFound, "no port %q%s (ports: %s)", name, suggest.DidYouMean(name, names), strings.Join(names, ", "))
}

// checkFit fails when a tensor of typ and shape cannot be bound to p.
func checkFit(p PortInfo, typ tensor.ElementType, shape tensor.Shape) error {
	if typ != p.Type {
		return errorf(ErrInvalidArgument, "port %q: element type %s, want %s", p.Name, typ, p.Type)
	}
	if !p.Shape.Compatible(shape) {
		return errorf(ErrInvalidArgument, "port %q: shape %s does not fit the model (declared as %s)%s", p.Name, shape, p.Shape, misfit(p.Shape, shape))
	}
	return nil
}

// misfit says how shape differs from p (": rank 3, the model needs rank
// 4", ": dimension 1 is 3, the model needs 4"), or "" when it does not.
func misfit(p graph.PartialShape, shape tensor.Shape) string {
	if !p.RankKnown {
		return ""
	}
	if len(p.Dims) != len(shape) {
		return fmt.Sprintf(": rank %d, the model needs rank %d", len(shape), len(p.Dims))
	}
	for i, d := range p.Dims {
		if d.IsStatic() && d.Size != shape[i] {
			return fmt.Sprintf(": dimension %d is %d, the model needs %d", i, shape[i], d.Size)
		}
	}
	return ""
}

package tensor

import (
	"fmt"
	"strings"
)

// Kind is what a value of a model is: a tensor (the zero Kind), a
// sequence of tensors, or an optional one. Sequences and optionals (ONNX
// seq(tensor), optional(tensor), optional(seq(tensor))) travel as
// *Tensor values too, as ONNX Runtime's OrtValue holds every kind of
// value: requests, devices and HETERO links pass them unchanged, and only
// the code that reads tensor data (kernels) checks the kind. A port of a
// model declares its kind (graph.Port.Kind), its element type and the
// shape of its tensors.
type Kind uint8

// The kinds of values.
const (
	// KindTensor is a tensor.
	KindTensor Kind = iota
	// KindSequence is a sequence of tensors of one element type (their
	// shapes may differ); Items are the tensors.
	KindSequence
	// KindOptional is an optional tensor: Items holds the tensor, or
	// nothing for an empty optional (ONNX None).
	KindOptional
	// KindOptionalSequence is an optional sequence of tensors: Items holds
	// the sequence (a KindSequence value), or nothing.
	KindOptionalSequence
)

var kindNames = [...]string{KindTensor: "tensor", KindSequence: "sequence", KindOptional: "optional", KindOptionalSequence: "optional sequence"}

// String names the kind ("tensor", "sequence", "optional", "optional
// sequence").
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// IsOptional reports whether k is an optional kind.
func (k Kind) IsOptional() bool { return k == KindOptional || k == KindOptionalSequence }

// Elem is the kind of an optional's content (a tensor or a sequence);
// other kinds are their own.
func (k Kind) Elem() Kind {
	switch k {
	case KindOptional:
		return KindTensor
	case KindOptionalSequence:
		return KindSequence
	}
	return k
}

// Describe writes a port's kind, element type and shape for messages:
// "f32[2,3]", "sequence<f32[?]>", "optional<sequence<i64>>".
func (k Kind) Describe(t ElementType, shape string) string {
	s := t.String() + shape
	switch k {
	case KindSequence:
		return "sequence<" + s + ">"
	case KindOptional:
		return "optional<" + s + ">"
	case KindOptionalSequence:
		return "optional<sequence<" + s + ">>"
	}
	return s
}

// NewSequence returns a sequence of element type t holding items (not
// copied); every item must be a tensor of type t. An empty sequence keeps
// its element type.
func NewSequence(t ElementType, items []*Tensor) (*Tensor, error) {
	if !t.Valid() {
		return nil, fmt.Errorf("%w: sequence of %v", ErrType, t)
	}
	for i, x := range items {
		if x == nil || x.kind != KindTensor || x.typ != t {
			return nil, fmt.Errorf("%w: sequence<%v> item %d is %v", ErrType, t, i, x)
		}
	}
	return &Tensor{typ: t, kind: KindSequence, shape: Shape{int64(len(items))}, strides: []int64{1}, items: append([]*Tensor{}, items...)}, nil
}

// NewOptional returns an optional of kind k (KindOptional or
// KindOptionalSequence) and element type t holding v, or empty when v is
// nil. v must be a tensor (KindOptional) or a sequence (KindOptionalSequence)
// of type t.
func NewOptional(k Kind, t ElementType, v *Tensor) (*Tensor, error) {
	if !k.IsOptional() || !t.Valid() {
		return nil, fmt.Errorf("%w: %v of %v", ErrType, k, t)
	}
	o := &Tensor{typ: t, kind: k, shape: Shape{0}, strides: []int64{1}, items: []*Tensor{}}
	if v != nil {
		if v.kind != k.Elem() || v.typ != t {
			return nil, fmt.Errorf("%w: %s holds %v", ErrType, k.Describe(t, ""), v)
		}
		o.shape, o.items = Shape{1}, []*Tensor{v}
	}
	return o, nil
}

// Kind is what x is: a tensor, a sequence or an optional.
func (x *Tensor) Kind() Kind { return x.kind }

// Items are the tensors of a sequence, or the content of an optional (none
// when it is empty); nil for a tensor. The caller must not modify the
// slice.
func (x *Tensor) Items() []*Tensor { return x.items }

// HasElement reports whether x holds a value: false only for an empty
// optional.
func (x *Tensor) HasElement() bool { return !x.kind.IsOptional() || len(x.items) > 0 }

// describeValue writes a sequence or optional for String.
func (x *Tensor) describeValue() string {
	var b strings.Builder
	b.WriteString(x.kind.String())
	b.WriteString("<")
	b.WriteString(x.typ.String())
	b.WriteString(">")
	fmt.Fprintf(&b, "(%d)", len(x.items))
	return b.String()
}

// cloneValue deep-copies a sequence or optional.
func (x *Tensor) cloneValue() *Tensor {
	items := make([]*Tensor, len(x.items))
	for i, it := range x.items {
		items[i] = it.Clone()
	}
	return &Tensor{typ: x.typ, kind: x.kind, shape: x.shape.Clone(), strides: []int64{1}, items: items}
}

// notTensor is the error of tensor-only operations on sequences and
// optionals.
func (x *Tensor) notTensor(op string) error {
	return fmt.Errorf("%w: %s of a %v value %v (only tensors have elements)", ErrType, op, x.kind, x)
}

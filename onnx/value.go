package onnx

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/clinfer/clinfer/tensor"
)

// SequenceProto.elem_type and OptionalProto.elem_type values.
const (
	valueUndefined = 0
	valueTensor    = 1
	valueSequence  = 3
)

// ReadValue decodes a serialized value of kind k: a TensorProto for
// tensor.KindTensor, a SequenceProto for KindSequence and an OptionalProto
// for the optional kinds (the input_*.pb and output_*.pb files of ONNX
// test data sets whose ports are sequences or optionals). elem is the
// element type of an empty sequence or optional, whose proto does not say
// it (the port declares it). It returns the value and its name.
func ReadValue(data []byte, k tensor.Kind, elem tensor.ElementType) (*tensor.Tensor, string, error) {
	return readValue(data, "", k, elem)
}

// ReadValueFile reads a serialized value file (see ReadValue); external
// tensor data is resolved relative to the file's directory.
func ReadValueFile(path string, k tensor.Kind, elem tensor.ElementType) (*tensor.Tensor, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("onnx: %w", err)
	}
	v, name, err := readValue(data, filepath.Dir(path), k, elem)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return v, name, nil
}

func readValue(data []byte, baseDir string, k tensor.Kind, elem tensor.ElementType) (*tensor.Tensor, string, error) {
	if k == tensor.KindTensor {
		return readTensor(data, baseDir)
	}
	src := tensorSource{baseDir: baseDir}
	var (
		v    *tensor.Tensor
		name string
		err  error
	)
	if k == tensor.KindSequence {
		v, name, err = src.sequence(data, elem)
	} else {
		v, name, err = src.optional(data, k, elem)
	}
	if err != nil {
		return nil, "", fmt.Errorf("onnx: value %q: %w", name, err)
	}
	return v, name, nil
}

// sequence decodes a SequenceProto of tensors.
func (src tensorSource) sequence(b []byte, elem tensor.ElementType) (*tensor.Tensor, string, error) {
	const what = "SequenceProto"
	var (
		name  string
		kind  int64
		items []*tensor.Tensor
	)
	err := walk(b, what, func(f field) error {
		var err error
		switch f.num {
		case 1:
			name, err = f.str(what + ".name")
		case 2:
			kind, err = f.varint(what + ".elem_type")
		case 3:
			var mb []byte
			if mb, err = f.msg(what + ".tensor_values"); err != nil {
				return err
			}
			var tp *tensorProto
			if tp, err = decodeTensor(mb); err != nil {
				return err
			}
			var x *tensor.Tensor
			if x, err = src.decodeTensorValue(tp); err == nil {
				items = append(items, x)
			}
		case 4, 5, 6, 7:
			err = fmt.Errorf("%w: a sequence of sparse tensors, sequences, maps or optionals", ErrUnsupportedType)
		}
		return err
	})
	if err != nil {
		return nil, name, err
	}
	if kind != valueUndefined && kind != valueTensor {
		return nil, name, fmt.Errorf("%w: a sequence whose elements are not tensors (elem_type %d)", ErrUnsupportedType, kind)
	}
	if len(items) > 0 {
		elem = items[0].Type()
	}
	s, err := tensor.NewSequence(elem, items)
	if err != nil {
		return nil, name, fmt.Errorf("%w: %v", ErrInvalidModel, err)
	}
	return s, name, nil
}

// optional decodes an OptionalProto holding a tensor or a sequence of
// tensors, or nothing.
func (src tensorSource) optional(b []byte, k tensor.Kind, elem tensor.ElementType) (*tensor.Tensor, string, error) {
	const what = "OptionalProto"
	var (
		name string
		kind int64
		v    *tensor.Tensor
	)
	err := walk(b, what, func(f field) error {
		var err error
		switch f.num {
		case 1:
			name, err = f.str(what + ".name")
		case 2:
			kind, err = f.varint(what + ".elem_type")
		case 3:
			var mb []byte
			if mb, err = f.msg(what + ".tensor_value"); err != nil {
				return err
			}
			var tp *tensorProto
			if tp, err = decodeTensor(mb); err == nil {
				v, err = src.decodeTensorValue(tp)
			}
		case 5:
			var mb []byte
			if mb, err = f.msg(what + ".sequence_value"); err == nil {
				v, _, err = src.sequence(mb, elem)
			}
		case 4, 6, 7:
			err = fmt.Errorf("%w: an optional sparse tensor, map or optional", ErrUnsupportedType)
		}
		return err
	})
	if err != nil {
		return nil, name, err
	}
	switch {
	case kind == valueUndefined && v == nil:
	case kind == valueTensor && v != nil && k == tensor.KindOptional:
	case kind == valueSequence && v != nil && k == tensor.KindOptionalSequence:
	default:
		return nil, name, fmt.Errorf("%w: an optional with elem_type %d does not hold a value of the port's kind (%v)", ErrInvalidModel, kind, k)
	}
	if v != nil {
		elem = v.Type()
	}
	o, err := tensor.NewOptional(k, elem, v)
	if err != nil {
		return nil, name, fmt.Errorf("%w: %v", ErrInvalidModel, err)
	}
	return o, name, nil
}

package onnx

import "github.com/clinfer/clinfer/tensor"

// decodeType reads a TypeProto. Tensor types are decoded, and sequences
// and optionals of tensors and optional sequences of tensors (recorded in
// v.kind); maps, sparse tensors and other nestings are recorded as
// non-tensor without descending further, so nesting depth never grows with
// the input.
func decodeType(b []byte, v *valueInfo) error { return decodeTypeIn(b, v, nil) }

// decodeTypeIn reads a TypeProto nested in the containers outer (outermost
// first).
func decodeTypeIn(b []byte, v *valueInfo, outer []int) error {
	const what = "TypeProto"
	return walk(b, what, func(f field) error {
		switch f.num {
		case 1:
			mb, err := f.msg(what + ".tensor_type")
			if err != nil {
				return err
			}
			switch {
			case len(outer) == 0:
				v.kind = tensor.KindTensor
			case len(outer) == 1 && outer[0] == typeSequence:
				v.kind = tensor.KindSequence
			case len(outer) == 1 && outer[0] == typeOptional:
				v.kind = tensor.KindOptional
			case len(outer) == 2 && outer[0] == typeOptional && outer[1] == typeSequence:
				v.kind = tensor.KindOptionalSequence
			default:
				v.nonTensor = true
				return nil
			}
			v.tensorType = true
			return walk(mb, what+".Tensor", func(f field) error {
				var err error
				switch f.num {
				case 1:
					v.elemType, err = f.varint(what + ".Tensor.elem_type")
				case 2:
					var sb []byte
					if sb, err = f.msg(what + ".Tensor.shape"); err == nil {
						v.hasShape = true
						v.dims = v.dims[:0]
						err = decodeShape(sb, v)
					}
				}
				return err
			})
		case typeSequence, typeOptional:
			if len(outer) >= 2 {
				v.nonTensor = true
				return nil
			}
			mb, err := f.msg(what + ".container")
			if err != nil {
				return err
			}
			return walk(mb, what+".container", func(e field) error {
				if e.num != 1 {
					return nil
				}
				eb, err := e.msg(what + ".container.elem_type")
				if err != nil {
					return err
				}
				return decodeTypeIn(eb, v, append(append([]int(nil), outer...), int(f.num)))
			})
		case 5, 8:
			v.nonTensor = true
		}
		return nil
	})
}

// TypeProto fields of the containers decodeType follows.
const (
	typeSequence = 4
	typeOptional = 9
)

func decodeShape(b []byte, v *valueInfo) error {
	const what = "TensorShapeProto"
	return walk(b, what, func(f field) error {
		if f.num != 1 {
			return nil
		}
		db, err := f.msg(what + ".dim")
		if err != nil {
			return err
		}
		var d dimProto
		err = walk(db, what+".Dimension", func(f field) error {
			var err error
			switch f.num {
			case 1:
				d.value, err = f.varint(what + ".Dimension.dim_value")
				d.hasValue = true
			case 2:
				d.param, err = f.str(what + ".Dimension.dim_param")
			}
			return err
		})
		v.dims = append(v.dims, d)
		return err
	})
}

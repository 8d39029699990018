package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/clinfer/clinfer/tensor"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "f32twin:", err)
		os.Exit(1)
	}
}

// run parses the flags, converts the model and writes it.
func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("f32twin", flag.ContinueOnError)
	in := fs.String("i", "", "the float16 ONNX model")
	out := fs.String("o", "", "the float32 model to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *in == "" || *out == "" {
		return errors.New("want -i MODEL_F16.onnx -o MODEL_F32.onnx")
	}
	b, err := os.ReadFile(*in)
	if err != nil {
		return err
	}
	var c converter
	twin, err := c.model(b)
	if err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}
	if err := os.WriteFile(*out, twin, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d f16 tensors (%d values), %d value types and %d Casts made f32\n", *out, c.tensors, c.values, c.types, c.casts)
	return nil
}

// ONNX's TensorProto.DataType values the conversion reads and writes.
const (
	onnxFloat   = 1
	onnxFloat16 = 10
)

// converter rewrites messages and counts what it changed.
type converter struct {
	tensors, values, types, casts int
}

// eachField calls fn for every field of message b with its number, wire
// type, whole encoding (tag and value) and encoded value (read with
// bytesOf or varint).
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, field, val []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return protowire.ParseError(m)
		}
		if err := fn(num, typ, b[:n+m], b[n:n+m]); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}

// bytesOf is the payload of a bytes field's value.
func bytesOf(val []byte) []byte { v, _ := protowire.ConsumeBytes(val); return v }

// varint is a varint field's value.
func varint(val []byte) uint64 { v, _ := protowire.ConsumeVarint(val); return v }

// appendVarint appends varint field num = v.
func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

// rewrite re-emits message b field by field: bytes fields listed in sub
// are messages rewritten by their function, the others are copied as they
// are.
func rewrite(b []byte, sub map[protowire.Number]func([]byte) ([]byte, error)) ([]byte, error) {
	var out []byte
	err := eachField(b, func(num protowire.Number, typ protowire.Type, field, val []byte) error {
		fn := sub[num]
		if fn == nil || typ != protowire.BytesType {
			out = append(out, field...)
			return nil
		}
		nv, err := fn(bytesOf(val))
		if err != nil {
			return err
		}
		out = protowire.AppendBytes(protowire.AppendTag(out, num, protowire.BytesType), nv)
		return nil
	})
	return out, err
}

// retype re-emits message b with varint field num set to onnxFloat where
// it is onnxFloat16, counting the changes in *count.
func retype(b []byte, num protowire.Number, count *int) ([]byte, error) {
	var out []byte
	err := eachField(b, func(n protowire.Number, typ protowire.Type, field, val []byte) error {
		if n == num && typ == protowire.VarintType && varint(val) == onnxFloat16 {
			*count++
			out = appendVarint(out, num, onnxFloat)
			return nil
		}
		out = append(out, field...)
		return nil
	})
	return out, err
}

// stringField is the value of bytes field num of message b ("" if absent).
func stringField(b []byte, num protowire.Number) (string, error) {
	s := ""
	err := eachField(b, func(n protowire.Number, typ protowire.Type, _, val []byte) error {
		if n == num && typ == protowire.BytesType {
			s = string(bytesOf(val))
		}
		return nil
	})
	return s, err
}

// model rewrites a ModelProto: its graph (7) and its functions (25).
func (c *converter) model(b []byte) ([]byte, error) {
	return rewrite(b, map[protowire.Number]func([]byte) ([]byte, error){7: c.graph, 25: c.function})
}

// function rewrites a FunctionProto's nodes (7).
func (c *converter) function(b []byte) ([]byte, error) {
	return rewrite(b, map[protowire.Number]func([]byte) ([]byte, error){7: c.node})
}

// graph rewrites a GraphProto: nodes (1), initializers (5), inputs (11),
// outputs (12) and value_info (13).
func (c *converter) graph(b []byte) ([]byte, error) {
	return rewrite(b, map[protowire.Number]func([]byte) ([]byte, error){
		1: c.node, 5: c.tensor, 11: c.valueInfo, 12: c.valueInfo, 13: c.valueInfo,
	})
}

// valueInfo rewrites a ValueInfoProto's type (2).
func (c *converter) valueInfo(b []byte) ([]byte, error) {
	return rewrite(b, map[protowire.Number]func([]byte) ([]byte, error){2: c.typeProto})
}

// typeProto rewrites a TypeProto: tensor (1), sequence (4), map (5),
// sparse tensor (8) and optional (9) types.
func (c *converter) typeProto(b []byte) ([]byte, error) {
	elem := func(b []byte) ([]byte, error) { return c.elemType(b) }
	return rewrite(b, map[protowire.Number]func([]byte) ([]byte, error){
		1: elem, 8: elem,
		4: func(b []byte) ([]byte, error) { // Sequence.elem_type
			return rewrite(b, map[protowire.Number]func([]byte) ([]byte, error){1: c.typeProto})
		},
		5: func(b []byte) ([]byte, error) { // Map.value_type
			return rewrite(b, map[protowire.Number]func([]byte) ([]byte, error){2: c.typeProto})
		},
		9: func(b []byte) ([]byte, error) { // Optional.elem_type
			return rewrite(b, map[protowire.Number]func([]byte) ([]byte, error){1: c.typeProto})
		},
	})
}

// elemType rewrites TypeProto.Tensor's elem_type (1) FLOAT16 -> FLOAT.
func (c *converter) elemType(b []byte) ([]byte, error) { return retype(b, 1, &c.types) }

// node rewrites a NodeProto's attributes (5); a Cast's "to" of FLOAT16
// becomes FLOAT.
func (c *converter) node(b []byte) ([]byte, error) {
	opType, err := stringField(b, 4)
	if err != nil {
		return nil, err
	}
	return rewrite(b, map[protowire.Number]func([]byte) ([]byte, error){
		5: func(a []byte) ([]byte, error) { return c.attribute(a, opType == "Cast") },
	})
}

// attribute rewrites an AttributeProto: its tensor (5), tensors (10), graph
// (6), graphs (11) and type protos (14, 15); for a Cast, an "i" (3) of
// FLOAT16 under the name "to".
func (c *converter) attribute(b []byte, cast bool) ([]byte, error) {
	name, err := stringField(b, 1)
	if err != nil {
		return nil, err
	}
	b, err = rewrite(b, map[protowire.Number]func([]byte) ([]byte, error){
		5: c.tensor, 10: c.tensor, 6: c.graph, 11: c.graph, 14: c.typeProto, 15: c.typeProto,
	})
	if err != nil || !cast || name != "to" {
		return b, err
	}
	return retype(b, 3, &c.casts)
}

// tensor rewrites a FLOAT16 TensorProto as FLOAT: data_type (2) and the
// values, from raw_data (9) or int32_data (5), into raw_data; other
// tensors are copied. A FLOAT16 tensor with external data (13) is an
// error.
func (c *converter) tensor(b []byte) ([]byte, error) {
	var dataType uint64
	var raw, keep []byte
	var halves []uint16
	external := false
	err := eachField(b, func(num protowire.Number, typ protowire.Type, field, val []byte) error {
		switch {
		case num == 2 && typ == protowire.VarintType:
			dataType = varint(val)
		case num == 9 && typ == protowire.BytesType:
			raw = bytesOf(val)
		case num == 5 && typ == protowire.BytesType: // packed int32_data
			for v := bytesOf(val); len(v) > 0; {
				x, k := protowire.ConsumeVarint(v)
				if k < 0 {
					return protowire.ParseError(k)
				}
				halves = append(halves, uint16(x))
				v = v[k:]
			}
		case num == 5 && typ == protowire.VarintType:
			halves = append(halves, uint16(varint(val)))
		default:
			external = external || num == 13
			keep = append(keep, field...)
		}
		return nil
	})
	if err != nil || dataType != onnxFloat16 {
		return b, err
	}
	if external {
		return nil, errors.New("an f16 tensor with external data (convert the model with its data inlined)")
	}
	if raw != nil {
		if len(raw)%2 != 0 {
			return nil, fmt.Errorf("f16 raw_data of %d bytes", len(raw))
		}
		halves = make([]uint16, len(raw)/2)
		for i := range halves {
			halves[i] = binary.LittleEndian.Uint16(raw[2*i:])
		}
	}
	f32 := make([]byte, 4*len(halves))
	for i, h := range halves {
		binary.LittleEndian.PutUint32(f32[4*i:], math.Float32bits(tensor.F16ToFloat32(h)))
	}
	c.tensors++
	c.values += len(halves)
	out := appendVarint(keep, 2, onnxFloat)
	return protowire.AppendBytes(protowire.AppendTag(out, 9, protowire.BytesType), f32), nil
}

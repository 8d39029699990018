// onnxpb.js encodes the small ONNX protobufs the case writers need (a
// ModelProto of one node, TensorProtos with raw data), with no protobuf
// library: varints, length-delimited fields and fixed32 floats.
'use strict';

function varint(n) {
  const out = [];
  let v = BigInt(n);
  if (v < 0n) v += 1n << 64n;
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return Buffer.from(out);
}
const key = (field, wire) => varint((field << 3) | wire);
const vint = (field, n) => Buffer.concat([key(field, 0), varint(n)]);
const bytes = (field, b) => Buffer.concat([key(field, 2), varint(b.length), b]);
const str = (field, s) => bytes(field, Buffer.from(s, 'utf8'));
function f32(field, v) {
  const b = Buffer.alloc(4);
  b.writeFloatLE(v);
  return Buffer.concat([key(field, 5), b]);
}

// TensorProto element types.
const FLOAT = 1;
const INT32 = 6;
const INT64 = 7;

// raw returns data (numbers) as the little-endian bytes of type.
function raw(type, data) {
  if (type === INT32) return Buffer.from(Int32Array.from(data).buffer);
  if (type === INT64) return Buffer.from(BigInt64Array.from(data.map((x) => BigInt(x))).buffer);
  return Buffer.from(Float32Array.from(data).buffer);
}

// tensorProto encodes a TensorProto with raw data.
function tensorProto(name, type, dims, data) {
  return Buffer.concat([...dims.map((d) => vint(1, d)), vint(2, type), str(8, name), bytes(9, raw(type, data))]);
}

// attr encodes an AttributeProto of a JS value: number (int when
// integral and not marked float), string, or arrays of those.
function attr(name, v) {
  const parts = [str(1, name)];
  if (typeof v === 'string') parts.push(vint(20, 3), bytes(4, Buffer.from(v)));
  else if (v && v.float !== undefined) parts.push(vint(20, 1), f32(2, v.float));
  else if (typeof v === 'number') parts.push(vint(20, 2), vint(3, v));
  else if (Array.isArray(v) && typeof v[0] === 'string') parts.push(vint(20, 8), ...v.map((s) => bytes(9, Buffer.from(s))));
  else if (Array.isArray(v) && typeof v[0] === 'number') parts.push(vint(20, 7), ...v.map((x) => vint(8, x)));
  else if (v && v.floats) parts.push(vint(20, 6), ...v.floats.map((x) => f32(7, x)));
  else throw new Error(`attr ${name}: unsupported value ${JSON.stringify(v)}`);
  return Buffer.concat(parts);
}

// valueInfo encodes a ValueInfoProto of a tensor of type and dims.
function valueInfo(name, type, dims) {
  const shape = Buffer.concat(dims.map((d) => bytes(1, vint(1, d))));
  const tensorType = Buffer.concat([vint(1, type), bytes(2, shape)]);
  return Buffer.concat([str(1, name), bytes(2, bytes(1, tensorType))]);
}

// model encodes a ModelProto (IR version 8) of one node of op over inputs
// and outputs ({name, type, dims}; an input without a name is an omitted
// optional one), importing the default domain at opset, made by producer.
function model(op, inputs, outputs, attrs, opset, producer) {
  const node = Buffer.concat([
    ...inputs.map((i) => str(1, i.name)), ...outputs.map((o) => str(2, o.name)), str(3, 'node'), str(4, op),
    ...Object.entries(attrs).map(([k, v]) => bytes(5, attr(k, v))),
  ]);
  const graph = Buffer.concat([
    bytes(1, node), str(2, `test_${op}`),
    ...inputs.filter((i) => i.name).map((i) => bytes(11, valueInfo(i.name, i.type, i.dims))),
    ...outputs.map((o) => bytes(12, valueInfo(o.name, o.type, o.dims))),
  ]);
  return Buffer.concat([vint(1, 8), str(2, producer), bytes(7, graph), bytes(8, vint(2, opset))]);
}

module.exports = { FLOAT, INT32, INT64, tensorProto, model };

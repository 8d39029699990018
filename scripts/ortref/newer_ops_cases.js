// newer_ops_cases.js writes ONNX backend-style test cases of the ops newer
// than the installed ONNX backend suite (libonnx-testdata has no cases of
// them): Col2Im and CenterCropPad (opset 18) and AffineGrid (opset 20),
// with ONNX Runtime's outputs as the expected ones:
//
//   tests/testdata/newerops/<case>/model.onnx
//   tests/testdata/newerops/<case>/test_data_set_0/{input,output}_<i>.pb
//
// The shape inputs (image_shape, block_shape, shape, size) are graph
// inputs, as in ONNX's own cases; the float inputs are seeded (seeded.js).
// No AffineGrid case has an axis of one point with align_corners: there
// PyTorch (whose affine_grid the spec names, and clinfer) gives 0, ONNX's
// reference -1 and ONNX Runtime 1.
// Usage (after `make models`, for ONNX Runtime):
//   NODE_PATH=.cache/node_modules node scripts/ortref/newer_ops_cases.js [--out DIR]
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const { float32s } = require('./seeded');
const { FLOAT, INT32, INT64, tensorProto, model } = require('./onnxpb');

const ROOT = path.resolve(__dirname, '..', '..');

// f is a seeded float input, i an integer one with the given values.
const f = (name, dims) => ({ name, type: FLOAT, dims });
const i64 = (name, values) => ({ name, type: INT64, dims: [values.length], values });
const i32 = (name, dims) => ({ name, type: INT32, dims });

// A case: op, opset, attributes, inputs, the output's type.
const CASES = [
  { name: 'col2im', op: 'Col2Im', opset: 18, attrs: {}, ins: [f('input', [1, 5, 5]), i64('image_shape', [5, 5]), i64('block_shape', [1, 5])] },
  { name: 'col2im_strides_dilations_pads', op: 'Col2Im', opset: 18, attrs: { strides: [2, 1], dilations: [1, 2], pads: [1, 0, 0, 1] },
    ins: [f('input', [2, 12, 12]), i64('image_shape', [6, 5]), i64('block_shape', [3, 2])] },
  { name: 'col2im_3d', op: 'Col2Im', opset: 18, attrs: { strides: [1, 2, 1] },
    ins: [f('input', [1, 16, 12]), i64('image_shape', [3, 5, 4]), i64('block_shape', [2, 2, 2])] },
  { name: 'center_crop_pad_crop_and_pad', op: 'CenterCropPad', opset: 18, attrs: {}, ins: [f('input_data', [20, 8, 3]), i64('shape', [10, 11, 3])] },
  { name: 'center_crop_pad_odd', op: 'CenterCropPad', opset: 18, attrs: {}, ins: [f('input_data', [5, 7]), i64('shape', [2, 10])] },
  { name: 'center_crop_pad_axes_chw', op: 'CenterCropPad', opset: 18, attrs: { axes: [1, 2] }, ins: [f('input_data', [3, 20, 8]), i64('shape', [10, 9])] },
  { name: 'center_crop_pad_int32', op: 'CenterCropPad', opset: 18, attrs: { axes: [0] }, ins: [i32('input_data', [6, 4]), i64('shape', [9])] },
  { name: 'affine_grid_2d', op: 'AffineGrid', opset: 20, attrs: {}, ins: [f('theta', [2, 2, 3]), i64('size', [2, 3, 5, 6])] },
  { name: 'affine_grid_2d_align_corners', op: 'AffineGrid', opset: 20, attrs: { align_corners: 1 }, ins: [f('theta', [2, 2, 3]), i64('size', [2, 3, 5, 6])] },
  { name: 'affine_grid_3d', op: 'AffineGrid', opset: 20, attrs: {}, ins: [f('theta', [2, 3, 4]), i64('size', [2, 1, 3, 4, 5])] },
  { name: 'affine_grid_3d_align_corners', op: 'AffineGrid', opset: 20, attrs: { align_corners: 1 }, ins: [f('theta', [1, 3, 4]), i64('size', [1, 2, 4, 2, 3])] },
];

// ortTensor returns input inp holding data as an ONNX Runtime tensor.
function ortTensor(inp, data) {
  if (inp.type === INT64) return new ort.Tensor('int64', BigInt64Array.from(data.map((x) => BigInt(x))), inp.dims);
  if (inp.type === INT32) return new ort.Tensor('int32', Int32Array.from(data), inp.dims);
  return new ort.Tensor('float32', Float32Array.from(data), inp.dims);
}

async function writeCase(c, out) {
  const feeds = {};
  const data = c.ins.map((inp, k) => {
    const n = inp.dims.reduce((a, b) => a * b, 1);
    if (inp.values) return inp.values;
    const v = Array.from(float32s(2000 + 10 * k, n, -1, 1));
    return inp.type === INT32 ? v.map((x) => Math.round(x * 100)) : v;
  });
  c.ins.forEach((inp, k) => { feeds[inp.name] = ortTensor(inp, data[k]); });
  const outType = c.ins[0].type;
  // Run once with an unknown output shape to learn it, then encode it.
  const probe = model(c.op, c.ins, [{ name: 'output', type: outType, dims: [] }], c.attrs, c.opset, 'clinfer-newer-ops-cases');
  const r0 = await (await ort.InferenceSession.create(probe, { executionProviders: ['cpu'] })).run(feeds);
  const dims = r0.output.dims.map(Number);
  const bytesModel = model(c.op, c.ins, [{ name: 'output', type: outType, dims }], c.attrs, c.opset, 'clinfer-newer-ops-cases');
  const r = await (await ort.InferenceSession.create(bytesModel, { executionProviders: ['cpu'] })).run(feeds);
  const dir = path.join(out, c.name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, 'test_data_set_0'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'model.onnx'), bytesModel);
  c.ins.forEach((inp, k) => {
    fs.writeFileSync(path.join(dir, 'test_data_set_0', `input_${k}.pb`), tensorProto(inp.name, inp.type, inp.dims, data[k]));
  });
  const got = Array.from(r.output.data, Number);
  fs.writeFileSync(path.join(dir, 'test_data_set_0', 'output_0.pb'), tensorProto('output', outType, dims, got));
  console.log(`${c.name}: ${c.op} ${JSON.stringify(c.attrs)} -> [${dims}]`);
}

async function main() {
  const argv = process.argv.slice(2);
  const out = argv[0] === '--out' ? argv[1] : path.join(ROOT, 'tests', 'testdata', 'newerops');
  for (const c of CASES) await writeCase(c, out);
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});

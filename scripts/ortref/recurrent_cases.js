// recurrent_cases.js writes ONNX backend-style test cases of LSTM, GRU
// and RNN with the attributes the ONNX suite leaves out (bidirectional,
// reverse, sequence_lens, clip, input_forget,
// linear_before_reset, parameterised activations), with ONNX Runtime's
// outputs as the expected ones (ONNX Runtime has no layout 1: the suite's
// batchwise cases cover it):
//
//   tests/testdata/recurrent/<case>/model.onnx
//   tests/testdata/recurrent/<case>/test_data_set_0/{input,output}_<i>.pb
//
// The models are encoded here (a minimal protobuf writer); inputs are
// seeded (seeded.js). Usage (after `make models`, for ONNX Runtime):
//   NODE_PATH=.cache/node_modules node scripts/ortref/recurrent_cases.js [--out DIR]
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const { float32s } = require('./seeded');
const pb = require('./onnxpb');

const { FLOAT, INT32, tensorProto } = pb;

const ROOT = path.resolve(__dirname, '..', '..');

// model is a ModelProto of one node at opset 14 with f32 outputs.
function model(op, inputs, outputs, attrs) {
  return pb.model(op, inputs, outputs.map((o) => ({ ...o, type: FLOAT })), attrs, 14, 'clinfer-recurrent-cases');
}

const GATES = { LSTM: 4, GRU: 3, RNN: 1 };

// A case: op, attributes, and which optional inputs it has.
const CASES = [
  { name: 'lstm_bidirectional_lens_peepholes', op: 'LSTM', attrs: { direction: 'bidirectional' }, lens: [3, 1, 2], init: true, peep: true },
  { name: 'lstm_reverse_clip_forget', op: 'LSTM', attrs: { direction: 'reverse', clip: { float: 0.5 }, input_forget: 1 }, lens: [2, 3, 1], init: true },
  { name: 'lstm_activations', op: 'LSTM', attrs: { activations: ['HardSigmoid', 'LeakyRelu', 'ScaledTanh'], activation_alpha: { floats: [0.3, 0.1, 0.8] }, activation_beta: { floats: [0.4, 1.2] } }, init: true, peep: true },
  { name: 'gru_bidirectional_lens', op: 'GRU', attrs: { direction: 'bidirectional' }, lens: [1, 3, 2], init: true },
  { name: 'gru_linear_before_reset_reverse', op: 'GRU', attrs: { linear_before_reset: 1, direction: 'reverse' }, lens: [3, 2, 3], init: true },
  { name: 'gru_activations_clip', op: 'GRU', attrs: { activations: ['Affine', 'Elu'], activation_alpha: { floats: [0.5, 0.7] }, activation_beta: { floats: [0.1] }, clip: { float: 2 } } },
  { name: 'rnn_bidirectional_lens_activations', op: 'RNN', attrs: { direction: 'bidirectional', activations: ['Relu', 'Softsign'] }, lens: [2, 3, 1], init: true },
  { name: 'rnn_thresholded', op: 'RNN', attrs: { activations: ['ThresholdedRelu'], activation_alpha: { floats: [0.2] } }, init: true },
];

async function writeCase(c, out) {
  const S = 3, N = 3, I = 4, H = 5;
  const D = c.attrs.direction === 'bidirectional' ? 2 : 1;
  const G = GATES[c.op];
  const layout = c.attrs.layout === 1;
  const x = layout ? [N, S, I] : [S, N, I];
  const st = layout ? [N, D, H] : [D, N, H];
  const ins = [
    { name: 'X', type: FLOAT, dims: x }, { name: 'W', type: FLOAT, dims: [D, G * H, I] }, { name: 'R', type: FLOAT, dims: [D, G * H, H] },
    { name: 'B', type: FLOAT, dims: [D, 2 * G * H] },
    c.lens ? { name: 'sequence_lens', type: INT32, dims: [N] } : { name: '' },
    c.init ? { name: 'initial_h', type: FLOAT, dims: st } : { name: '' },
  ];
  if (c.op === 'LSTM') {
    ins.push(c.init ? { name: 'initial_c', type: FLOAT, dims: st } : { name: '' });
    ins.push(c.peep ? { name: 'P', type: FLOAT, dims: [D, 3 * H] } : { name: '' });
  }
  while (!ins[ins.length - 1].name) ins.pop();
  const yDims = layout ? [N, S, D, H] : [S, D, N, H];
  const outs = [{ name: 'Y', dims: yDims }, { name: 'Y_h', dims: st }];
  if (c.op === 'LSTM') outs.push({ name: 'Y_c', dims: st });
  const attrs = { hidden_size: H, ...c.attrs };
  const bytesModel = model(c.op, ins, outs, attrs);
  const dir = path.join(out, c.name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, 'test_data_set_0'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'model.onnx'), bytesModel);
  const session = await ort.InferenceSession.create(bytesModel, { executionProviders: ['cpu'] });
  const feeds = {};
  let k = 0;
  ins.forEach((inp, i) => {
    if (!inp.name) return;
    const n = inp.dims.reduce((a, b) => a * b, 1);
    const data = inp.type === INT32 ? c.lens : Array.from(float32s(1000 + 10 * i, n, -1, 1));
    feeds[inp.name] = inp.type === INT32 ? new ort.Tensor('int32', Int32Array.from(data), inp.dims) : new ort.Tensor('float32', Float32Array.from(data), inp.dims);
    fs.writeFileSync(path.join(dir, 'test_data_set_0', `input_${k++}.pb`), tensorProto(inp.name, inp.type, inp.dims, data));
  });
  const r = await session.run(feeds);
  outs.forEach((o, i) => {
    fs.writeFileSync(path.join(dir, 'test_data_set_0', `output_${i}.pb`), tensorProto(o.name, FLOAT, r[o.name].dims.map(Number), Array.from(r[o.name].data)));
  });
  console.log(`${c.name}: ${c.op} ${JSON.stringify(c.attrs)}`);
}

async function main() {
  const argv = process.argv.slice(2);
  const out = argv[0] === '--out' ? argv[1] : path.join(ROOT, 'tests', 'testdata', 'recurrent');
  for (const c of CASES) await writeCase(c, out);
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});

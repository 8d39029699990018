// make_refs.js runs ONNX Runtime (CPU, onnxruntime-node) on the real models
// with seeded inputs and writes the reference outputs the real-model tests
// compare clinfer against:
//
//   tests/testdata/realmodels/<case>/case.json
//   tests/testdata/realmodels/<case>/output_<i>.npy
//
// The inputs are not stored: they are regenerated from (seed, shape, lo, hi)
// with mulberry32 (seeded.js here, internal/seeded in Go), bit-identically.
//
// Usage (after `bash scripts/fetch-models.sh`):
//   NODE_PATH=.cache/node_modules node scripts/ortref/make_refs.js [--models DIR] [--out DIR] [case ...]
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const { float32s } = require('./seeded');
const { writeF32 } = require('./npy');

const ROOT = path.resolve(__dirname, '..', '..');

// CASES lists every reference case. Input shapes are the ones the models are
// used with: PaddleOCR's cls takes 48x192 crops, det any multiple of 32, rec
// 48-pixel-high lines; hello_deepa (openWakeWord) has a static [1,25,96]
// input of 25 frames of 96-dim speech embeddings. Inputs are uniform in
// [lo, hi), [-1, 1) unless a case says otherwise.
const CASES = [
  { name: 'cls', model: 'ch_ppocr_mobile_v2.0_cls_infer.onnx', inputs: [{ shape: [1, 3, 48, 192] }], seed: 1 },
  { name: 'det', model: 'ch_PP-OCRv4_det_infer.onnx', inputs: [{ shape: [1, 3, 320, 320] }], seed: 2 },
  // Uniform [-1,1) noise drives det's sigmoid map to ~0 everywhere (max
  // 1.1e-3), which an absolute tolerance cannot tell from all zeros; this
  // wide-range case lights up ~1% of the map (max 1.0, mean 8.5e-3).
  { name: 'det_wide', model: 'ch_PP-OCRv4_det_infer.onnx', inputs: [{ shape: [1, 3, 320, 320], lo: -30, hi: 30 }], seed: 6 },
  { name: 'det_640', model: 'ch_PP-OCRv4_det_infer.onnx', inputs: [{ shape: [1, 3, 640, 640] }], seed: 3 },
  { name: 'rec', model: 'ch_PP-OCRv4_rec_infer.onnx', inputs: [{ shape: [1, 3, 48, 320] }], seed: 4 },
  { name: 'hello_deepa', model: 'hello_deepa.onnx', inputs: [{ shape: [1, 25, 96] }], seed: 5 },
];

// Outputs larger than this are not committed; the case is skipped with a
// message (det_640's 1x1x640x640 f32 map is 1.6 MB and stays under it).
const MAX_OUTPUT_BYTES = 2 * 1024 * 1024;

function parseArgs(argv) {
  const o = { models: path.join(ROOT, '.cache', 'models'), out: path.join(ROOT, 'tests', 'testdata', 'realmodels'), only: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--models') o.models = argv[++i];
    else if (a === '--out') o.out = argv[++i];
    else if (a.startsWith('--')) throw new Error(`make_refs: unknown flag ${a}`);
    else o.only.push(a);
  }
  return o;
}

async function runCase(c, opts, version) {
  const modelPath = path.join(opts.models, c.model);
  if (!fs.existsSync(modelPath)) {
    throw new Error(`make_refs: ${modelPath} is missing; run: bash scripts/fetch-models.sh`);
  }
  const session = await ort.InferenceSession.create(modelPath, {
    executionProviders: ['cpu'],
    intraOpNumThreads: 2,
  });
  if (session.inputNames.length !== c.inputs.length) {
    throw new Error(`make_refs: ${c.model} has inputs ${session.inputNames}, case ${c.name} describes ${c.inputs.length}`);
  }
  const feeds = {};
  const inputs = [];
  session.inputNames.forEach((name, i) => {
    const spec = c.inputs[i];
    const lo = spec.lo ?? -1;
    const hi = spec.hi ?? 1;
    const seed = c.seed + i;
    const n = spec.shape.reduce((a, b) => a * b, 1);
    feeds[name] = new ort.Tensor('float32', float32s(seed, n, lo, hi), spec.shape);
    inputs.push({ name, type: 'f32', shape: spec.shape, seed, lo, hi });
  });
  const t0 = process.hrtime.bigint();
  const results = await session.run(feeds);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;

  const outputs = [];
  let bytes = 0;
  session.outputNames.forEach((name, i) => {
    const r = results[name];
    if (r.type !== 'float32') throw new Error(`make_refs: ${c.name} output ${name} is ${r.type}, only float32 is written`);
    outputs.push({ name, file: `output_${i}.npy`, type: 'f32', shape: r.dims.map(Number), data: r.data });
    bytes += r.data.length * 4;
  });
  if (bytes > MAX_OUTPUT_BYTES) {
    console.error(`make_refs: ${c.name}: outputs are ${bytes} bytes, over ${MAX_OUTPUT_BYTES}; not written`);
    return 0;
  }
  const dir = path.join(opts.out, c.name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  let written = 0;
  for (const o of outputs) {
    writeF32(path.join(dir, o.file), o.data, o.shape);
    written += fs.statSync(path.join(dir, o.file)).size;
  }
  const doc = {
    model: c.model,
    inputs,
    outputs: outputs.map(({ name, file, type, shape }) => ({ name, file, type, shape })),
    ort_version: version,
  };
  fs.writeFileSync(path.join(dir, 'case.json'), JSON.stringify(doc, null, 2) + '\n');
  const shapes = outputs.map((o) => `${o.name}[${o.shape}]`).join(' ');
  console.log(`${c.name}: ${c.model} -> ${shapes}, ${written} bytes, ORT ${ms.toFixed(1)} ms`);
  return written;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const version = ort.env.versions?.node ?? require('onnxruntime-node/package.json').version;
  const cases = opts.only.length ? CASES.filter((c) => opts.only.includes(c.name)) : CASES;
  if (opts.only.length && cases.length !== opts.only.length) {
    throw new Error(`make_refs: unknown case in ${opts.only}; known: ${CASES.map((c) => c.name)}`);
  }
  let total = 0;
  for (const c of cases) total += await runCase(c, opts, version);
  console.log(`total reference data: ${total} bytes`);
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});

// qdq_compare.js runs a float model and its QDQ twin (cmd/quantize's
// output) in ONNX Runtime (CPU, onnxruntime-node) on the same input and
// prints one JSON line: ONNX Runtime loads and runs the QDQ model, the
// agreement of their first outputs thresholded at --threshold (IoU of the
// pixels above it, PP-OCR det's binarized map at 0.3), the largest
// difference, and each model's median and fastest latency over --iters runs,
// alternating the two so load changes hit both alike. --out writes the
// QDQ model's output as .npy (cmd/quantize's figures compare it with
// clinfer's).
//
// Usage: NODE_PATH=.cache/node_modules node scripts/ortref/qdq_compare.js
//   --f32 det.onnx --int8 det_int8.onnx --input x=page.npy
//   [--threshold 0.3] [--iters 10] [--threads 2] [--out int8_out.npy]
'use strict';

const ort = require('onnxruntime-node');
const { readF32, writeF32 } = require('./npy');

function usage(msg) {
  console.error(`qdq_compare: ${msg}`);
  console.error('usage: qdq_compare.js --f32 M --int8 M --input name=file.npy [--threshold T] [--iters N] [--threads N] [--out file.npy]');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { threshold: 0.3, iters: 10, threads: 2, out: '' };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[++i];
    if (v === undefined) usage(`${argv[i - 1]} needs a value`);
    switch (argv[i - 1]) {
      case '--f32': o.f32 = v; break;
      case '--int8': o.int8 = v; break;
      case '--input': {
        const eq = v.indexOf('=');
        if (eq <= 0) usage(`--input wants name=file.npy, got ${v}`);
        o.input = { name: v.slice(0, eq), path: v.slice(eq + 1) };
        break;
      }
      case '--threshold': o.threshold = Number(v); break;
      case '--iters': o.iters = Number(v); break;
      case '--threads': o.threads = Number(v); break;
      case '--out': o.out = v; break;
      default: usage(`unknown argument ${argv[i - 1]}`);
    }
  }
  if (!o.f32 || !o.int8 || !o.input) usage('want --f32, --int8 and --input');
  if (!(o.iters >= 1) || !(o.threads >= 1)) usage('--iters and --threads must be at least 1');
  return o;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const x = readF32(o.input.path);
  const feeds = { [o.input.name]: new ort.Tensor('float32', x.data, x.shape) };
  const opts = { executionProviders: ['cpu'], intraOpNumThreads: o.threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' };
  const sessions = [await ort.InferenceSession.create(o.f32, opts), await ort.InferenceSession.create(o.int8, opts)];
  const outs = [];
  for (const s of sessions) {
    const r = await s.run(feeds); // warm-up, and the outputs compared
    outs.push(r[s.outputNames[0]]);
  }
  const times = [[], []];
  for (let i = 0; i < o.iters; i++) {
    for (let k = 0; k < 2; k++) {
      const t0 = process.hrtime.bigint();
      await sessions[k].run(feeds);
      times[k].push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  }
  const [a, b] = [outs[0].data, outs[1].data];
  let inter = 0, union = 0, maxDiff = 0;
  for (let i = 0; i < a.length; i++) {
    const p = a[i] > o.threshold, q = b[i] > o.threshold;
    if (p && q) inter++;
    if (p || q) union++;
    maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));
  }
  if (o.out) writeF32(o.out, b, outs[1].dims);
  const median = (t) => { const s = [...t].sort((p, q) => p - q); return Math.round(s[Math.floor(s.length / 2)] * 1000) / 1000; };
  const fastest = (t) => Math.round(Math.min(...t) * 1000) / 1000;
  console.log(JSON.stringify({
    f32: o.f32, int8: o.int8, threshold: o.threshold, iou: union ? inter / union : 1, positive_f32: a.filter((v) => v > o.threshold).length,
    max_diff: maxDiff, f32_median_ms: median(times[0]), int8_median_ms: median(times[1]),
    f32_min_ms: fastest(times[0]), int8_min_ms: fastest(times[1]), iters: o.iters, threads: o.threads,
    ort_version: require('onnxruntime-node/package.json').version,
  }));
  for (const s of sessions) await s.release();
}

main().catch((e) => { console.error(e); process.exit(1); });

// bench.js times ONNX Runtime (CPU, onnxruntime-node) on the real models: the
// performance peer that clinfer's Go benchmarks are compared against in the
// same run. It prints one JSON line per model:
//
//   {"model":"ch_ppocr_mobile_v2.0_cls_infer.onnx","shape":"x=1x3x48x192","threads":2,
//    "median_ms":..,"mean_ms":..,"min_ms":..,"p90_ms":..,"iters":50,"ort_version":"1.30.0"}
//
// Usage (after `bash scripts/fetch-models.sh`):
//   NODE_PATH=.cache/node_modules node scripts/ortref/bench.js [--threads N]
//       [--iters N | --seconds S] [--warmup N] [--models DIR]
//       [--model PATH --shape name=1x3x320x320 [--shape ...]
//        [--value name=V[:int64|int32|float32] ...] [--stateful input:output[,...]] [--rounds]]
//
// --value fills an input with one value (Silero's sample rate); --stateful
// feeds each run's output into the paired input of the next (a streaming
// model's state, as clinfer's MAKE_STATEFUL keeps it), which is how
// cmd/benchmark -ort times a streaming model beside clinfer.
//
// --rounds makes it a peer process that another program interleaves with its
// own timings (bench/modelbench): after the warm-up it prints {"ready":true,...}
// and then, for each line "S" read from stdin, runs the model for S seconds
// (at least once) and prints {"times_ms":[...]}; it ends at the end of stdin.
//
// Without --model it runs cls at 1x3x48x192 (50 iterations) and det at
// 1x3x320x320 (20 iterations) and 1x3x640x640 (10). Inputs are seeded uniform [-1,1) (seeded.js).
'use strict';

const path = require('path');
const ort = require('onnxruntime-node');
const { float32s } = require('./seeded');

const ROOT = path.resolve(__dirname, '..', '..');

function usage(msg) {
  console.error(`bench: ${msg}`);
  console.error('usage: bench.js [--threads N] [--iters N | --seconds S] [--warmup N] [--models DIR] [--model PATH --shape name=AxBxC ...]');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { threads: 2, iters: 0, seconds: 0, warmup: 3, models: path.join(ROOT, '.cache', 'models'), model: '', shapes: [], values: {}, stateful: [], rounds: false };
  const num = (i, name) => {
    const v = Number(argv[i]);
    if (argv[i] === undefined || !Number.isFinite(v) || v < 0) usage(`${name} needs a non-negative number, got ${argv[i]}`);
    return v;
  };
  for (let i = 0; i < argv.length; i++) {
    switch (argv[i]) {
      case '--threads': o.threads = num(++i, '--threads'); break;
      case '--iters': o.iters = num(++i, '--iters'); break;
      case '--seconds': o.seconds = num(++i, '--seconds'); break;
      case '--warmup': o.warmup = num(++i, '--warmup'); break;
      case '--models': o.models = argv[++i]; break;
      case '--model': o.model = argv[++i]; break;
      case '--rounds': o.rounds = true; break;
      case '--shape': {
        const s = argv[++i] || '';
        const eq = s.indexOf('=');
        if (eq <= 0) usage(`--shape wants name=1x3x320x320, got ${s}`);
        const spec = s.slice(eq + 1);
        const dims = spec === '' ? [] : spec.split(/[x,]/).map(Number); // name= is a scalar
        if (dims.some((d) => !Number.isInteger(d) || d < 0)) usage(`--shape ${s}: bad dimensions`);
        o.shapes.push({ name: s.slice(0, eq), dims });
        break;
      }
      case '--value': {
        const m = /^([^=]+)=([^:]+)(?::(int64|int32|float32))?$/.exec(argv[++i] || '');
        if (!m) usage(`--value wants name=V[:type], got ${argv[i]}`);
        o.values[m[1]] = { v: Number(m[2]), type: m[3] || 'float32' };
        break;
      }
      case '--stateful':
        for (const p of (argv[++i] || '').split(',')) {
          const [input, output] = p.split(':');
          if (!input || !output) usage(`--stateful wants input:output pairs, got ${p}`);
          o.stateful.push({ input, output });
        }
        break;
      default: usage(`unknown argument ${argv[i]}`);
    }
  }
  if (o.threads < 1) usage('--threads must be at least 1');
  if (o.shapes.length && !o.model) usage('--shape needs --model');
  if (o.model && !o.shapes.length) usage('--model needs --shape name=dims for each input');
  if (o.rounds && !o.model) usage('--rounds needs --model');
  return o;
}

function quantile(sorted, q) {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

async function bench(modelPath, shapes, defaultIters, o) {
  const session = await ort.InferenceSession.create(modelPath, {
    executionProviders: ['cpu'],
    intraOpNumThreads: o.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = {};
  shapes.forEach((s, k) => {
    if (!session.inputNames.includes(s.name)) {
      throw new Error(`bench: ${modelPath} has no input ${s.name} (inputs: ${session.inputNames})`);
    }
    const n = s.dims.reduce((a, b) => a * b, 1);
    const val = o.values[s.name];
    if (val && val.type === 'int64') feeds[s.name] = new ort.Tensor('int64', BigInt64Array.from({ length: n }, () => BigInt(val.v)), s.dims);
    else if (val && val.type === 'int32') feeds[s.name] = new ort.Tensor('int32', Int32Array.from({ length: n }, () => val.v), s.dims);
    else if (val) feeds[s.name] = new ort.Tensor('float32', Float32Array.from({ length: n }, () => val.v), s.dims);
    else feeds[s.name] = new ort.Tensor('float32', float32s(1 + k, n, -1, 1), s.dims);
  });
  const run = async () => {
    const r = await session.run(feeds);
    for (const st of o.stateful) feeds[st.input] = r[st.output];
  };
  for (const name of session.inputNames) {
    if (!feeds[name]) throw new Error(`bench: ${modelPath}: no --shape for input ${name}`);
  }
  for (let i = 0; i < o.warmup; i++) await run();
  if (o.rounds) {
    await serveRounds(run, o);
    await session.release();
    return null;
  }
  const times = [];
  const iters = o.iters || defaultIters;
  const start = process.hrtime.bigint();
  for (;;) {
    const t0 = process.hrtime.bigint();
    await run();
    const t1 = process.hrtime.bigint();
    times.push(Number(t1 - t0) / 1e6);
    if (o.seconds > 0) {
      if (Number(t1 - start) / 1e9 >= o.seconds) break;
    } else if (times.length >= iters) {
      break;
    }
  }
  await session.release();
  const sorted = [...times].sort((a, b) => a - b);
  const r3 = (v) => Math.round(v * 1000) / 1000;
  return {
    model: path.basename(modelPath),
    shape: shapes.map((s) => `${s.name}=${s.dims.join('x')}`).join(','),
    threads: o.threads,
    median_ms: r3(quantile(sorted, 0.5)),
    mean_ms: r3(times.reduce((a, b) => a + b, 0) / times.length),
    min_ms: r3(sorted[0]),
    p90_ms: r3(quantile(sorted, 0.9)),
    iters: times.length,
    ort_version: ort.env.versions?.node ?? require('onnxruntime-node/package.json').version,
  };
}

// serveRounds answers each stdin line "S" with the times of the runs of S
// seconds (at least one), one JSON line per round.
async function serveRounds(run, o) {
  const r3 = (v) => Math.round(v * 1000) / 1000;
  console.log(JSON.stringify({ ready: true, threads: o.threads, ort_version: require('onnxruntime-node/package.json').version }));
  const lines = require('readline').createInterface({ input: process.stdin, terminal: false });
  for await (const line of lines) {
    const secs = Number(line.trim());
    if (!Number.isFinite(secs) || secs < 0) throw new Error(`bench: --rounds: want seconds on stdin, got ${JSON.stringify(line)}`);
    const times = [];
    const start = process.hrtime.bigint();
    do {
      const t0 = process.hrtime.bigint();
      await run();
      times.push(r3(Number(process.hrtime.bigint() - t0) / 1e6));
    } while (Number(process.hrtime.bigint() - start) / 1e9 < secs);
    console.log(JSON.stringify({ times_ms: times }));
  }
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const runs = o.model
    ? [{ path: o.model, shapes: o.shapes, iters: 20 }]
    : [
        { path: path.join(o.models, 'ch_ppocr_mobile_v2.0_cls_infer.onnx'), shapes: [{ name: 'x', dims: [1, 3, 48, 192] }], iters: 50 },
        { path: path.join(o.models, 'ch_PP-OCRv4_det_infer.onnx'), shapes: [{ name: 'x', dims: [1, 3, 320, 320] }], iters: 20 },
        { path: path.join(o.models, 'ch_PP-OCRv4_det_infer.onnx'), shapes: [{ name: 'x', dims: [1, 3, 640, 640] }], iters: 10 },
      ];
  for (const r of runs) {
    const rec = await bench(r.path, r.shapes, r.iters, o);
    if (rec) console.log(JSON.stringify(rec));
  }
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});

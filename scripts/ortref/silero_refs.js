// silero_refs.js streams the Silero VAD models (v4, v5, v6) through ONNX
// Runtime (CPU, onnxruntime-node) over a seeded synthetic signal
// (signal.js), feeding each chunk's state back into the next, and writes
// the per-chunk speech probabilities and the final state the streaming
// tests compare clinfer against:
//
//   tests/testdata/silero/<case>.json
//
// With --bench it times the same streams instead (per-chunk latency,
// median and p90 over the chunks after --warmup) and prints one JSON line
// per case; cmd/benchmark's -ort flag runs it beside clinfer.
//
// Usage (after `make models`):
//   NODE_PATH=.cache/node_modules node scripts/ortref/silero_refs.js [--models DIR] [--out DIR] [case ...]
//   NODE_PATH=.cache/node_modules node scripts/ortref/silero_refs.js --bench [--threads N] [--chunks N] [case ...]
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const { vadSignal } = require('./signal');

const ROOT = path.resolve(__dirname, '..', '..');

// STATES are the state inputs and outputs of each version, with their
// shapes (batch 1).
const STATES = {
  4: [{ input: 'h', output: 'hn', shape: [2, 1, 64] }, { input: 'c', output: 'cn', shape: [2, 1, 64] }],
  5: [{ input: 'state', output: 'stateN', shape: [2, 1, 128] }],
  6: [{ input: 'state', output: 'stateN', shape: [2, 1, 128] }],
};

// CASES: every model at 16 kHz and 8 kHz, 200 chunks of the sizes the
// models are used with (512 and 256 samples for v5 and v6, 1536 and 768
// for v4).
const CASES = [];
for (const v of [4, 5, 6]) {
  for (const sr of [16000, 8000]) {
    const chunk = (v === 4 ? 1536 : 512) * sr / 16000;
    CASES.push({ name: `v${v}_${sr / 1000}k`, model: `silero_vad_v${v}.onnx`, version: v, sr, chunk, chunks: 200, seed: 100 * v + sr / 1000 });
  }
}

function parseArgs(argv) {
  const o = { models: path.join(ROOT, '.cache', 'models'), out: path.join(ROOT, 'tests', 'testdata', 'silero'), only: [],
    bench: false, threads: 1, chunks: 0, warmup: 10 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--models') o.models = argv[++i];
    else if (a === '--out') o.out = argv[++i];
    else if (a === '--bench') o.bench = true;
    else if (a === '--threads') o.threads = Number(argv[++i]);
    else if (a === '--chunks') o.chunks = Number(argv[++i]);
    else if (a === '--warmup') o.warmup = Number(argv[++i]);
    else if (a.startsWith('--')) throw new Error(`silero_refs: unknown flag ${a}`);
    else o.only.push(a);
  }
  return o;
}

// stream runs c's chunks through session and returns the probabilities,
// the final states and the time of each chunk's run (ms).
async function stream(session, c, chunks) {
  const audio = vadSignal(c.seed, c.sr, c.chunk * chunks);
  let states = {};
  for (const s of STATES[c.version]) {
    states[s.input] = new ort.Tensor('float32', new Float32Array(s.shape.reduce((a, b) => a * b, 1)), s.shape);
  }
  const sr = new ort.Tensor('int64', BigInt64Array.from([BigInt(c.sr)]), []);
  const probs = [];
  const ms = [];
  for (let k = 0; k < chunks; k++) {
    const feeds = { input: new ort.Tensor('float32', audio.subarray(k * c.chunk, (k + 1) * c.chunk), [1, c.chunk]), sr, ...states };
    const t0 = process.hrtime.bigint();
    const r = await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    probs.push(r.output.data[0]);
    states = {};
    for (const s of STATES[c.version]) states[s.input] = r[s.output];
  }
  return { probs, states, ms };
}

async function session(c, opts) {
  const p = path.join(opts.models, c.model);
  if (!fs.existsSync(p)) throw new Error(`silero_refs: ${p} is missing; run: make models`);
  return ort.InferenceSession.create(p, { executionProviders: ['cpu'], intraOpNumThreads: opts.threads, interOpNumThreads: 1,
    executionMode: 'sequential', graphOptimizationLevel: 'all' });
}

function quantile(sorted, q) {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const version = require('onnxruntime-node/package.json').version;
  const cases = opts.only.length ? CASES.filter((c) => opts.only.includes(c.name)) : CASES;
  if (opts.only.length && cases.length !== opts.only.length) {
    throw new Error(`silero_refs: unknown case in ${opts.only}; known: ${CASES.map((c) => c.name)}`);
  }
  for (const c of cases) {
    const s = await session(c, opts);
    if (opts.bench) {
      const chunks = opts.chunks || c.chunks;
      const { ms } = await stream(s, c, chunks + opts.warmup);
      const t = ms.slice(opts.warmup).sort((a, b) => a - b);
      console.log(JSON.stringify({ case: c.name, model: c.model, sr: c.sr, chunk: c.chunk, chunks, threads: opts.threads,
        median_ms: quantile(t, 0.5), p90_ms: quantile(t, 0.9), min_ms: t[0], ort_version: version }));
      continue;
    }
    const { probs, states } = await stream(s, c, c.chunks);
    const doc = {
      model: c.model, version: c.version, sr: c.sr, chunk: c.chunk, chunks: c.chunks, seed: c.seed,
      states: STATES[c.version].map((st) => ({ input: st.input, output: st.output, shape: st.shape })),
      probs: Array.from(probs),
      final_states: Object.fromEntries(STATES[c.version].map((st) => [st.output, Array.from(states[st.input].data)])),
      ort_version: version,
    };
    fs.mkdirSync(opts.out, { recursive: true });
    fs.writeFileSync(path.join(opts.out, `${c.name}.json`), JSON.stringify(doc) + '\n');
    const hi = probs.filter((p) => p > 0.5).length;
    console.log(`${c.name}: ${c.chunks} chunks of ${c.chunk} at ${c.sr} Hz, ${hi} above 0.5, max ${Math.max(...probs).toFixed(3)}`);
  }
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});

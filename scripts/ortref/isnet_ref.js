// isnet_ref.js runs ONNX Runtime (CPU, onnxruntime-node) on IS-Net small
// (isnet_small_u8.onnx: dynamically quantized, DynamicQuantizeLinear +
// ConvInteger) with a synthetic 1024x1024 scene and writes its mask (output
// 0, [1,1,1024,1024]) as compact reference data:
//
//   tests/testdata/isnet_small_u8/mask_u8.npy.gz
//
// The mask is stored as round(mask * 255) in uint8 (resolution 1/255:
// the test's tolerance accounts for the 1/510 rounding) and gzipped (160
// KB: the scene's mask is mostly flat); the Go
// test (tests/quant_isnet_test.go) rebuilds the same scene (scene below,
// isnetScene there: integer arithmetic, bit-identical) and compares.
//
// Usage: NODE_PATH=.cache/node_modules node scripts/ortref/isnet_ref.js
'use strict';

const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const ort = require('onnxruntime-node');

const ROOT = path.resolve(__dirname, '..', '..');
const SIZE = 1024;

// scene returns the pixel (0..255) of channel c at (y, x): a shaded
// background with a striped figure (an ellipse body and a round head),
// as integers.
function scene(c, y, x) {
  const body = (x - 512) * (x - 512) * 330 * 330 + (y - 600) * (y - 600) * 230 * 230 <= 230 * 230 * 330 * 330;
  const head = (x - 512) * (x - 512) + (y - 230) * (y - 230) <= 130 * 130;
  if (body || head) {
    return [190 + (Math.floor(y / 16) % 2) * 40, 120 + (Math.floor(x / 32) % 2) * 30, 80][c];
  }
  return [40 + Math.floor((x * 80) / 1024), 90 + Math.floor((y * 60) / 1024), 160 + Math.floor(((x + y) * 40) / 2048)][c];
}

// input is the scene normalised as @imgly/background-removal does:
// (pixel - 128) / 256, NCHW f32.
function input() {
  const v = new Float32Array(3 * SIZE * SIZE);
  for (let c = 0; c < 3; c++) {
    for (let y = 0; y < SIZE; y++) {
      for (let x = 0; x < SIZE; x++) {
        v[(c * SIZE + y) * SIZE + x] = (scene(c, y, x) - 128) / 256;
      }
    }
  }
  return v;
}

// npyU8 returns the .npy bytes of a Uint8Array of the given shape.
function npyU8(data, shape) {
  const dict = `{'descr': '|u1', 'fortran_order': False, 'shape': (${shape.join(', ')}), }`;
  let total = 10 + dict.length + 1;
  total += (64 - (total % 64)) % 64;
  const head = Buffer.alloc(total, 0x20);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(total - 10, 8);
  head.write(dict, 10, 'latin1');
  head[total - 1] = 0x0a;
  return Buffer.concat([head, Buffer.from(data.buffer, data.byteOffset, data.byteLength)]);
}

async function main() {
  const model = path.join(ROOT, '.cache', 'models', 'isnet_small_u8.onnx');
  const session = await ort.InferenceSession.create(model, { executionProviders: ['cpu'], intraOpNumThreads: 2 });
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', input(), [1, 3, SIZE, SIZE]) };
  const t0 = process.hrtime.bigint();
  const out = await session.run(feeds);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const name = session.outputNames[0];
  const mask = out[name].data;
  const q = new Uint8Array(mask.length);
  let fg = 0;
  for (let i = 0; i < mask.length; i++) {
    q[i] = Math.round(Math.min(Math.max(mask[i], 0), 1) * 255);
    if (mask[i] > 0.5) fg++;
  }
  const dir = path.join(ROOT, 'tests', 'testdata', 'isnet_small_u8');
  fs.mkdirSync(dir, { recursive: true });
  const gz = zlib.gzipSync(npyU8(q, out[name].dims.map(Number)), { level: 9 });
  fs.rmSync(path.join(dir, 'mask_u16.npy.gz'), { force: true });
  fs.writeFileSync(path.join(dir, 'mask_u8.npy.gz'), gz);
  const version = require('onnxruntime-node/package.json').version;
  fs.writeFileSync(path.join(dir, 'case.json'), JSON.stringify({
    model: 'isnet_small_u8.onnx', output: name, shape: out[name].dims.map(Number), ort_version: version,
    foreground_fraction: fg / mask.length,
  }, null, 2) + '\n');
  console.log(`isnet_small_u8: output ${name} [${out[name].dims}], ${gz.length} bytes gzipped, ${(100 * fg / mask.length).toFixed(2)}% above 0.5, ORT ${ms.toFixed(0)} ms`);
  return mask;
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});

// npy.js writes float32 arrays as NumPy .npy files (version 1.0,
// little-endian, C order), the format internal/npy reads, and reads them
// back (readF32: what internal/npy.WriteFile writes for f32).
'use strict';

const fs = require('fs');

// encodeF32 returns the .npy bytes of a Float32Array with the given shape.
function encodeF32(data, shape) {
  const n = shape.reduce((a, b) => a * b, 1);
  if (n !== data.length) {
    throw new Error(`npy: shape [${shape}] holds ${n} elements, got ${data.length}`);
  }
  let shapeStr;
  if (shape.length === 0) shapeStr = '()';
  else if (shape.length === 1) shapeStr = `(${shape[0]},)`;
  else shapeStr = `(${shape.join(', ')})`;
  const dict = `{'descr': '<f4', 'fortran_order': False, 'shape': ${shapeStr}, }`;
  // Pad so that magic(6)+version(2)+len(2)+header is a multiple of 64.
  let total = 10 + dict.length + 1;
  total += (64 - (total % 64)) % 64;
  const hlen = total - 10;
  if (hlen > 0xffff) throw new Error('npy: header too long for version 1.0');
  const head = Buffer.alloc(total, 0x20);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(hlen, 8);
  head.write(dict, 10, 'latin1');
  head[total - 1] = 0x0a;
  const body = Buffer.alloc(data.length * 4);
  for (let i = 0; i < data.length; i++) body.writeFloatLE(data[i], i * 4);
  return Buffer.concat([head, body]);
}

// writeF32 writes a Float32Array as a .npy file.
function writeF32(path, data, shape) {
  fs.writeFileSync(path, encodeF32(data, shape));
}

// readF32 reads a little-endian float32 .npy file (version 1 or 2, C
// order) as { data: Float32Array, shape: [...] }.
function readF32(path) {
  const b = fs.readFileSync(path);
  if (b.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`npy: ${path} is not a .npy file`);
  const v1 = b[6] === 1;
  const hlen = v1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = (v1 ? 10 : 12) + hlen;
  const head = b.toString('latin1', v1 ? 10 : 12, start);
  if (!/'descr':\s*'<f4'/.test(head) || /'fortran_order':\s*True/.test(head)) {
    throw new Error(`npy: ${path}: want little-endian float32 in C order, header ${head.trim()}`);
  }
  const m = /'shape':\s*\(([^)]*)\)/.exec(head);
  if (!m) throw new Error(`npy: ${path}: no shape in header ${head.trim()}`);
  const shape = m[1].split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  const n = shape.reduce((a, c) => a * c, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = b.readFloatLE(start + 4 * i);
  return { data, shape };
}

module.exports = { encodeF32, writeF32, readF32 };

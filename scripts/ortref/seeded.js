// seeded.js is the JavaScript twin of internal/seeded: mulberry32 producing
// float32 streams bit-identical to seeded.Float32s in Go. Keep the two in sync
// (internal/seeded/seeded_test.go holds golden values made by this file).
'use strict';

// mulberry32 returns a function giving numbers in [0, 1) with 32 random bits.
// The state is kept as an int32 (`| 0`) so it never leaves the exact integer
// range of a double, however many numbers are drawn.
function mulberry32(seed) {
  let s = seed | 0;
  return function () {
    s = (s + 0x6D2B79F5) | 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// float32s returns a Float32Array of n values Math.fround(lo + (hi-lo)*r),
// the same math as seeded.Float32s in Go.
function float32s(seed, n, lo, hi) {
  const next = mulberry32(seed);
  const out = new Float32Array(n);
  const l = Math.fround(lo);
  const h = Math.fround(hi);
  for (let i = 0; i < n; i++) {
    out[i] = Math.fround(l + (h - l) * next());
  }
  return out;
}

module.exports = { mulberry32, float32s };

// `node seeded.js SEED N LO HI` prints the values' float32 bit patterns in
// hex, which is how the Go test's golden values were made.
if (require.main === module) {
  const [seed, n, lo, hi] = process.argv.slice(2).map(Number);
  const v = float32s(seed >>> 0, n, lo, hi);
  const bits = new Uint32Array(v.buffer);
  console.log(JSON.stringify({ seed: seed >>> 0, n, lo, hi, float32_bits: Array.from(bits, (b) => '0x' + b.toString(16).padStart(8, '0')) }));
  const raw = mulberry32(seed >>> 0);
  console.log(JSON.stringify({ seed: seed >>> 0, float64: [raw(), raw(), raw()] }));
}

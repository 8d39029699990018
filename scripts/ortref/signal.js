// signal.js is the JavaScript twin of conformance.VADSignal (Go): a
// deterministic synthetic audio signal for the streaming voice-activity
// tests, bit-identical in both languages (seeded noise, then only IEEE
// additions and multiplications of doubles rounded once to float32).
//
// Every 20 ms block belongs to an 800 ms cycle; blocks 10..27 of it are
// "voiced": a 125 Hz pulse train through a two-pole resonator. Under it,
// everywhere, uniform noise of amplitude 0.02 keeps every frequency band
// away from zero (a pure tone leaves bands near 0, where the models' log
// spectra amplify rounding).
'use strict';

const { float32s } = require('./seeded');

function vadSignal(seed, sr, n) {
  const noise = float32s(seed, n, -1, 1);
  const period = Math.floor(sr / 125);
  const block = Math.floor(sr / 50);
  const out = new Float32Array(n);
  let y1 = 0;
  let y2 = 0;
  for (let i = 0; i < n; i++) {
    const c = Math.floor(i / block) % 40;
    const e = c >= 10 && c < 28 && i % period === 0 ? 1 : 0;
    const y = e + 1.7 * y1 - 0.81 * y2;
    y2 = y1;
    y1 = y;
    out[i] = Math.fround(0.1 * y + 0.02 * noise[i]);
  }
  return out;
}

module.exports = { vadSignal };

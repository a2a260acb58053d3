#!/usr/bin/env node
// One model's variants in onnxruntime-node, in one process so that they share its state (the
// library loaded, caches warm) and differ only by the model:
//
//   node bench/runtime/measure-node.mjs '{"variants":[{"name":"original","path":"..."},...],
//       "dims":{...},"loadRounds":7,"minRunSeconds":3,"minRuns":20,"maxRuns":300}'
//
// Session creation: one warm-up creation per variant (excluded: the first in a process pays for
// the library's own start), then `loadRounds` rounds that create, run once (the first run) and
// release each variant, the order rotated every round. Runs: one session per variant, three
// warm-up runs each, then rounds of one run per variant in rotated order, until every variant
// has minRuns runs and minRunSeconds have passed (at most maxRuns). Prints JSON: per variant
// its samples in ms. Peak memory is measured apart (rss-node.mjs): one process per variant.
import ort from 'onnxruntime-node';
import { makeInputs } from '../../web/src/verify-core.js';
import { SESSION_OPTIONS as SESSION } from './session-options.mjs';

const cfg = JSON.parse(process.argv[2]);
const { variants, dims = {}, loadRounds = 7, minRunSeconds = 3, minRuns = 20, maxRuns = 300 } = cfg;
const now = () => performance.now();
const rotated = (xs, k) => xs.map((_, i) => xs[(i + k) % xs.length]);

const out = Object.fromEntries(variants.map((v) => [v.name, { load: [], firstRun: [], run: [] }]));
let feeds;
for (const v of variants) {
  const s = await ort.InferenceSession.create(v.path, SESSION);
  feeds ??= makeInputs(ort.Tensor, s.inputMetadata, { seed: 1, dims }).feeds;
  await s.run(feeds);
  await s.release();
}
for (let r = 0; r < loadRounds; r++) {
  for (const v of rotated(variants, r)) {
    const t0 = now();
    const s = await ort.InferenceSession.create(v.path, SESSION);
    const t1 = now();
    await s.run(feeds);
    const t2 = now();
    out[v.name].load.push(t1 - t0);
    out[v.name].firstRun.push(t2 - t1);
    await s.release();
  }
}
// A sample is the mean of `repeat` runs in a row, so that one lasts at least MIN_SAMPLE_MS:
// the same rule as in the browser (whose timer ticks every 0.1 ms), so both time alike.
const MIN_SAMPLE_MS = 5;
let repeat = 1;
const sessions = [];
for (const v of variants) {
  const s = await ort.InferenceSession.create(v.path, SESSION);
  let warm = Infinity;
  for (let k = 0; k < 3; k++) {
    const t0 = now();
    await s.run(feeds);
    warm = Math.min(warm, now() - t0);
  }
  repeat = Math.max(repeat, Math.ceil(MIN_SAMPLE_MS / Math.max(warm, 0.01)));
  sessions.push([v.name, s]);
}
const start = now();
for (let r = 0; r < maxRuns && (r < minRuns || now() - start < minRunSeconds * 1e3); r++) {
  for (const [name, s] of rotated(sessions, r)) {
    const t0 = now();
    for (let k = 0; k < repeat; k++) await s.run(feeds);
    out[name].run.push((now() - t0) / repeat);
  }
}
for (const [, s] of sessions) await s.release();
process.stdout.write(JSON.stringify({ samples: out, repeat }));

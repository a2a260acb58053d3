// The runtime benchmark's timing procedure, one for onnxruntime-node (measure-node.mjs) and
// onnxruntime-web (page/bench.js), so the two runtimes are timed alike:
//
//   const { samples, repeat } = await timeModels(models, { create, dims, makeInputs, Tensor, ... });
//
// `models`: [{name, ...}], `create(model)` -> an InferenceSession. Session creation: one warm-up
// creation per model (excluded: the first in a process pays for the library's own start), then
// `loadRounds` rounds that create, run once (the first run) and release each model, the order
// rotated every round. Runs: one session per model, three warm-up runs each, then rounds of one
// sample per model in rotated order, until every model has minRuns samples and minRunSeconds
// have passed (at most maxRuns). A sample is the mean of `repeat` runs in a row, so that one
// lasts at least MIN_SAMPLE_MS (the browser's timer ticks every 0.1 ms, coarse for a model that
// runs in half a millisecond). Returns per model its samples in ms: {load, firstRun, run}.
export const MIN_SAMPLE_MS = 5;

const now = () => performance.now();
const rotated = (xs, k) => xs.map((_, i) => xs[(i + k) % xs.length]);

export async function timeModels(
  models,
  { create, makeInputs, Tensor, dims = {}, loadRounds = 7, minRunSeconds = 3, minRuns = 20, maxRuns = 300 },
) {
  const out = Object.fromEntries(models.map((m) => [m.name, { load: [], firstRun: [], run: [] }]));
  let feeds;
  for (const m of models) {
    const s = await create(m);
    feeds ??= makeInputs(Tensor, s.inputMetadata, { seed: 1, dims }).feeds;
    await s.run(feeds);
    await s.release();
  }
  for (let r = 0; r < loadRounds; r++) {
    for (const m of rotated(models, r)) {
      const t0 = now();
      const s = await create(m);
      const t1 = now();
      await s.run(feeds);
      const t2 = now();
      out[m.name].load.push(t1 - t0);
      out[m.name].firstRun.push(t2 - t1);
      await s.release();
    }
  }
  let repeat = 1;
  const sessions = [];
  for (const m of models) {
    const s = await create(m);
    let warm = Infinity;
    for (let k = 0; k < 3; k++) {
      const t0 = now();
      await s.run(feeds);
      warm = Math.min(warm, now() - t0);
    }
    repeat = Math.max(repeat, Math.ceil(MIN_SAMPLE_MS / Math.max(warm, 0.01)));
    sessions.push([m.name, s]);
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
  return { samples: out, repeat };
}

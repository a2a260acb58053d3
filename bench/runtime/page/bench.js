// The runtime benchmark's page: the same procedure as measure-node.mjs, with onnxruntime-web's
// wasm provider (one thread: no cross-origin isolation needed, and comparable with node's).
// Model bytes are fetched once, outside the timings: session creation is what is timed.
import * as ort from '/node_modules/onnxruntime-web/dist/ort.wasm.min.mjs';
import { makeInputs } from '/web/src/verify-core.js';

ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = '/node_modules/onnxruntime-web/dist/';
ort.env.logLevel = 'error';

const now = () => performance.now();
const MIN_SAMPLE_MS = 5;
const rotated = (xs, k) => xs.map((_, i) => xs[(i + k) % xs.length]);
const bytesOf = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());

async function webgpu() {
  if (!('gpu' in navigator)) return 'navigator.gpu is not available';
  const adapter = await navigator.gpu.requestAdapter().catch((e) => null);
  if (!adapter) return 'no WebGPU adapter';
  const info = adapter.info ?? {};
  return `adapter ${info.vendor ?? '?'} ${info.architecture ?? ''} ${info.description ?? ''}`.trim();
}

window.measure = async ({ variants, dims = {}, loadRounds = 7, minRunSeconds = 3, minRuns = 20, maxRuns = 300 }) => {
  const models = [];
  for (const v of variants) {
    const externalData = [];
    for (const f of v.data ?? []) externalData.push({ path: f, data: await bytesOf(`${v.dir}/${f}`) });
    models.push({ name: v.name, bytes: await bytesOf(`${v.dir}/${v.file}`), options: { executionProviders: ['wasm'], externalData, logSeverityLevel: 3 } });
  }
  const out = Object.fromEntries(variants.map((v) => [v.name, { load: [], firstRun: [], run: [] }]));
  const create = (m) => ort.InferenceSession.create(m.bytes, m.options);
  let feeds;
  for (const m of models) {
    const s = await create(m);
    feeds ??= makeInputs(ort.Tensor, s.inputMetadata, { seed: 1, dims }).feeds;
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
  // A sample is the mean of `repeat` runs in a row, so that one lasts at least MIN_SAMPLE_MS:
  // the browser's timer ticks every 0.1 ms, coarse for a model that runs in half a millisecond.
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
  return { samples: out, repeat, webgpu: await webgpu(), userAgent: navigator.userAgent };
};
document.body.dataset.ready = '1';

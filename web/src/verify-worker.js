// Verify worker: runs two models on the same seeded inputs with onnxruntime-web (wasm, CPU) and
// compares their outputs. A separate bundle from the optimizer's worker: the page creates it only
// when Verify is pressed, so the runtime (~3.5 MB gzipped) is not part of the first load.
//
// Protocol, page -> worker: { id, op: 'verify', args: { original, candidate, seed, dims, rtol, atol } }
//   original/candidate: { name, bytes: Blob | Uint8Array, externalData: { location: Blob | Uint8Array } }
// worker -> page: { id, type: 'progress', progress: { stage } }
//               | { id, type: 'result', value: { ok, inputs, outputs, nondeterministic, message } }
//               | { id, type: 'error', error: { name, message } }
import * as ort from 'onnxruntime-web/wasm';
import { compareTensors, makeInputs } from './verify-core.js';

// The runtime's .wasm sits next to this bundle (web/build.mjs copies it). Only the .wasm is
// named: a folder prefix would make the runtime fetch its JS glue too, which is already bundled
// here. One thread: no SharedArrayBuffer, so the page needs no cross-origin isolation headers;
// no proxy worker (this is already a worker).
ort.env.wasm.wasmPaths = { wasm: new URL('./ort-wasm-simd-threaded.wasm', import.meta.url).href };
ort.env.wasm.numThreads = 1;
ort.env.wasm.proxy = false;
ort.env.logLevel = 'error';

const post = (msg) => self.postMessage(msg);

const bytesOf = async (b) => (b instanceof Blob ? new Uint8Array(await b.arrayBuffer()) : b);

// Graph optimizations off, as in the tests' oracle: the comparison is about onnxfold's rewrite,
// not ORT's.
async function open({ bytes, externalData = {} }) {
  const external = [];
  for (const [path, data] of Object.entries(externalData)) external.push({ path, data: await bytesOf(data) });
  return ort.InferenceSession.create(await bytesOf(bytes), {
    executionProviders: ['wasm'],
    graphOptimizationLevel: 'disabled',
    logSeverityLevel: 3,
    ...(external.length ? { externalData: external } : {}),
  });
}

// Runs a model, keeping only plain copies of its outputs, and releases it: one model at a time
// in the runtime's heap.
async function runModel(model, feedsFor, stage) {
  stage(`${model.name}: loading`);
  const session = await open(model);
  try {
    const feeds = feedsFor(session);
    stage(`${model.name}: running`);
    const first = await session.run(feeds);
    // A second run finds stochastic outputs (e.g. training-mode Dropout), as the oracle does.
    const second = await session.run(feeds);
    return { session: { inputNames: session.inputNames, outputNames: session.outputNames }, first, second };
  } finally {
    await session.release();
  }
}

async function verify({ original, candidate, seed, dims, rtol, atol }, stage) {
  let inputs;
  let feeds;
  const orig = await runModel(original, (s) => {
    ({ feeds, shapes: inputs } = makeInputs(ort.Tensor, s.inputMetadata, { seed, dims }));
    return feeds;
  }, stage);
  const fail = (message, outputs = []) => ({ ok: false, inputs, outputs, nondeterministic: [], message });
  let cand;
  try {
    cand = await runModel(candidate, (s) => {
      const extra = s.inputNames.filter((n) => !Object.hasOwn(feeds, n));
      if (extra.length) throw new Error(`it has inputs the original does not: ${extra.join(', ')}`);
      return Object.fromEntries(s.inputNames.map((n) => [n, feeds[n]]));
    }, stage);
  } catch (e) {
    return fail(`${candidate.name} failed: ${e.message}`);
  }
  const names = orig.session.outputNames;
  const missing = names.filter((n) => !cand.session.outputNames.includes(n));
  if (missing.length) return fail(`${candidate.name} lacks the outputs ${missing.join(', ')}`);

  stage('comparing');
  const nondeterministic = names.filter((n) => {
    const c = compareTensors(n, orig.first[n], orig.second[n], { rtol: 0, atol: 0 });
    return c.error || c.mismatches;
  });
  const outputs = names.map((n) => {
    const o = compareTensors(n, orig.first[n], cand.first[n], { rtol, atol });
    if (nondeterministic.includes(n)) {
      // Random in the original: only type and shape can be compared, and it must stay random.
      o.nondeterministic = true;
      o.mismatches = 0;
      const c = compareTensors(n, cand.first[n], cand.second[n], { rtol: 0, atol: 0 });
      if (!o.error && !c.error && !c.mismatches) o.error = 'random in the original, deterministic here';
    }
    return o;
  });
  const bad = outputs.filter((o) => o.error || o.mismatches);
  return {
    ok: !bad.length,
    inputs,
    outputs,
    nondeterministic,
    message: bad.length ? `${bad.length} of ${outputs.length} output${outputs.length > 1 ? 's' : ''} ` +
      `differ${bad.length === 1 ? 's' : ''}`
      : outputs.length > 1 ? `all ${outputs.length} outputs match` : 'the output matches',
  };
}

self.onmessage = async ({ data: { id, op, args } }) => {
  try {
    if (op !== 'verify') throw new Error(`verify worker: unknown operation '${op}'`);
    const value = await verify(args, (stage) => post({ id, type: 'progress', progress: { stage } }));
    post({ id, type: 'result', value });
  } catch (e) {
    post({ id, type: 'error', error: { name: e?.name ?? 'Error', message: e?.message ?? String(e) } });
  }
};

// Verify worker: runs two models on the same seeded inputs with onnxruntime-web (wasm, CPU) and
// compares their outputs. A separate bundle from the optimizer's worker: the page creates it only
// when Verify is pressed, so the runtime (~3.5 MB gzipped) is not part of the first load.
//
// After the comparison it times both models (timeBoth): session creation and runs, with the
// runtime's default session options, as an app would load them.
//
// Protocol, page -> worker: { id, op, args }
//   op 'verify', args { original, candidate, seed, dims, rtol, atol, timing }
//   op 'reference', args { original, seed, dims }: runs the original once and keeps its outputs
//     (the variants' accuracy check); value { inputs }
//   op 'accuracy', args { candidate }: the candidate on the kept reference's inputs against its
//     outputs; value onnxfold/accuracy's accuracyOf ({ seed, inputs, outputs }) or { error }
//   original/candidate: { name, bytes: Blob | Uint8Array, externalData: { location: Blob | Uint8Array } }
//   timing: optional overrides of verify-timing.js TIMING (the tests use them; the page sends none)
// worker -> page: { id, type: 'progress', progress: { stage } }
//               | { id, type: 'result', value: { ok, inputs, outputs, nondeterministic, message, timings } }
//               | { id, type: 'error', error: { name, message } }
//   timings: { mode: 'together' | 'apart', load: { original, optimized }, firstRun: { original, optimized },
//              run: { original, optimized } } (summaries of times in ms, verify-timing.js summarize(); the
//              run ones with `reps`), or { error } when timing failed, or null when there was nothing to time.
import * as ort from 'onnxruntime-web/wasm';
import {
  accuracyOf,
  compareTensors,
  createSession,
  makeInputs,
  readModel,
  runReference,
} from 'onnxfold/accuracy';
import { TIMING, moreLoads, moreRuns, repsFor, summarize } from './verify-timing.js';

// The runtime's .wasm sits next to this bundle (web/build.mjs copies it). Only the .wasm is
// named: a folder prefix would make the runtime fetch its JS glue too, which is already bundled
// here. One thread: no SharedArrayBuffer, so the page needs no cross-origin isolation headers;
// no proxy worker (this is already a worker).
ort.env.wasm.wasmPaths = { wasm: new URL('./ort-wasm-simd-threaded.wasm', import.meta.url).href };
ort.env.wasm.numThreads = 1;
ort.env.wasm.proxy = false;
ort.env.logLevel = 'error';

const post = (msg) => self.postMessage(msg);

const sizeOf = (b) => (b instanceof Blob ? b.size : b.byteLength);
const modelBytes = (m) =>
  sizeOf(m.bytes) + Object.values(m.externalData ?? {}).reduce((a, b) => a + sizeOf(b), 0);
const now = () => performance.now();

const create = (model, options) => createSession(ort, model, { executionProviders: ['wasm'], ...options });

// Graph optimizations off, as in the tests' oracle: the comparison is about onnxfold's rewrite,
// not ORT's.
async function open(model) {
  return create(await readModel(model), { graphOptimizationLevel: 'disabled' });
}

// Timings use the runtime's defaults (graph optimizations 'all'): what an app loading the model
// gets, ORT's own folding and fusions at load included.
const TIMED_OPTIONS = { graphOptimizationLevel: 'all' };

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

async function verify({ original, candidate, seed, dims, rtol, atol, timing }, stage) {
  let inputs;
  let feeds;
  const orig = await runModel(
    original,
    (s) => {
      ({ feeds, shapes: inputs } = makeInputs(ort.Tensor, s.inputMetadata, { seed, dims }));
      return feeds;
    },
    stage,
  );
  const fail = (message, outputs = []) => ({
    ok: false,
    inputs,
    outputs,
    nondeterministic: [],
    message,
    timings: null,
  });
  let cand;
  let candFeeds;
  try {
    cand = await runModel(
      candidate,
      (s) => {
        const extra = s.inputNames.filter((n) => !Object.hasOwn(feeds, n));
        if (extra.length) throw new Error(`it has inputs the original does not: ${extra.join(', ')}`);
        candFeeds = Object.fromEntries(s.inputNames.map((n) => [n, feeds[n]]));
        return candFeeds;
      },
      stage,
    );
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
  let timings;
  try {
    timings = await timeBoth(original, candidate, [feeds, candFeeds], stage, { ...TIMING, ...timing });
  } catch (e) {
    timings = { error: e?.message ?? String(e) };
  }
  return {
    ok: !bad.length,
    timings,
    inputs,
    outputs,
    nondeterministic,
    message: bad.length
      ? `${bad.length} of ${outputs.length} output${outputs.length > 1 ? 's' : ''} ` +
        `differ${bad.length === 1 ? 's' : ''}`
      : outputs.length > 1
        ? `all ${outputs.length} outputs match`
        : 'the output matches',
  };
}

// Timed session creations of `models`, each followed by its first run (cold) on its `feeds`: each
// model once per round, which one goes first alternating between rounds (the first round also
// pays for the runtime's code the timing options use first), as many rounds as `budget` allows.
// The last round's sessions stay open (returned in the order of `models`); `live` holds every
// open session for the caller to release.
async function timeLoads(models, feeds, live, stage, budget) {
  const loads = models.map(() => []);
  const firsts = models.map(() => []);
  let spent = 0;
  for (let round = 1; ; round++) {
    stage(`timing: loading, round ${round}`);
    const order = models.map((_, i) => (round % 2 ? i : models.length - 1 - i));
    const sessions = [];
    const t0 = now();
    for (const i of order) {
      const t1 = now();
      const session = await create(models[i], TIMED_OPTIONS);
      const t2 = now();
      live.add(session);
      sessions[i] = session;
      await session.run(feeds[i]);
      loads[i].push(t2 - t1);
      firsts[i].push(now() - t2);
    }
    const roundMs = now() - t0;
    spent += roundMs;
    if (!moreLoads(round, spent, roundMs, budget)) return { sessions, loads, firsts };
    for (const session of sessions) {
      live.delete(session);
      await session.release();
    }
  }
}

// One run's time, warm: repeats the run, doubling, until the repeats take minSampleMs (the
// browser's timer is coarse without cross-origin isolation: 0.1 ms in Chromium).
async function warmRunMs(session, feeds, budget) {
  for (let k = 1; ; k *= 2) {
    const t0 = now();
    for (let r = 0; r < k; r++) await session.run(feeds);
    const ms = now() - t0;
    if (ms >= budget.minSampleMs || k >= budget.maxReps) return ms / k;
  }
}

// Warm runs of `sessions` (after their first run) on their `feeds`: warm-up runs that set how many
// runs one timed sample repeats (the same for all), then timed samples interleaved (the first
// session, the second, the first, ...) as long as moreRuns() says. A sample's time is per run.
async function timeRuns(sessions, feeds, stage, budget) {
  stage('timing: warming up');
  const warm = [];
  for (const [i, s] of sessions.entries()) warm[i] = await warmRunMs(s, feeds[i], budget);
  const reps = repsFor(Math.min(...warm), budget);
  const times = sessions.map(() => []);
  let spent = 0;
  for (let n = 0; moreRuns(n, spent, budget); n++) {
    if (n % 5 === 0) stage(`timing: runs, ${n} of each done`);
    for (const [i, s] of sessions.entries()) {
      const t0 = now();
      for (let r = 0; r < reps; r++) await s.run(feeds[i]);
      const ms = now() - t0;
      spent += ms;
      times[i].push(ms / reps);
    }
  }
  return { reps, times };
}

// Load and run times of the original and the optimized model. Both loaded together when they fit
// (budget.togetherLimit), so their runs alternate; otherwise one after the other, each with half
// the budgets. `feeds`: [original's, optimized's], the inputs the comparison used; `budget`: TIMING.
async function timeBoth(original, candidate, feeds, stage, budget) {
  const live = new Set();
  try {
    const parts = [];
    const together = modelBytes(original) + modelBytes(candidate) <= budget.togetherLimit;
    if (together) {
      const { sessions, loads, firsts } = await timeLoads(
        [await readModel(original), await readModel(candidate)],
        feeds,
        live,
        stage,
        budget,
      );
      const run = await timeRuns(sessions, feeds, stage, budget);
      for (const i of [0, 1])
        parts.push({ load: loads[i], first: firsts[i], runs: run.times[i], reps: run.reps });
    } else {
      const half = { ...budget, loadBudgetMs: budget.loadBudgetMs / 2, runBudgetMs: budget.runBudgetMs / 2 };
      for (const [i, m] of [original, candidate].entries()) {
        const { sessions, loads, firsts } = await timeLoads(
          [await readModel(m)],
          [feeds[i]],
          live,
          stage,
          half,
        );
        const run = await timeRuns(sessions, [feeds[i]], stage, half);
        parts.push({ load: loads[0], first: firsts[0], runs: run.times[0], reps: run.reps });
        live.delete(sessions[0]);
        await sessions[0].release();
      }
    }
    const [o, c] = parts;
    return {
      mode: together ? 'together' : 'apart',
      load: { original: summarize(o.load), optimized: summarize(c.load) },
      firstRun: { original: summarize(o.first), optimized: summarize(c.first) },
      run: {
        original: { ...summarize(o.runs), reps: o.reps },
        optimized: { ...summarize(c.runs), reps: c.reps },
      },
    };
  } finally {
    for (const s of live) await s.release().catch(() => {});
  }
}

// The original's outputs for the 'accuracy' op: kept between calls, with no session open.
let reference = null;

async function keepReference({ original, seed, dims }, stage) {
  reference = null;
  stage(`${original.name}: loading and running`);
  try {
    reference = await runReference(ort, original, {
      seed,
      dims,
      sessionOptions: { executionProviders: ['wasm'] },
    });
  } catch (e) {
    throw new Error(`${original.name} ${e.message}`);
  }
  return { inputs: reference.inputs };
}

async function accuracy({ candidate }, stage) {
  if (!reference) throw new Error("verify worker: 'accuracy' before 'reference'");
  stage(`${candidate.name}: loading and running`);
  try {
    return await accuracyOf(ort, reference, candidate, { sessionOptions: { executionProviders: ['wasm'] } });
  } catch (e) {
    return { error: `${candidate.name} ${e.message}` };
  }
}

const OPS = { verify, reference: keepReference, accuracy };

self.onmessage = async ({ data: { id, op, args } }) => {
  try {
    if (!Object.hasOwn(OPS, op)) throw new Error(`verify worker: unknown operation '${op}'`);
    const value = await OPS[op](args, (stage) => post({ id, type: 'progress', progress: { stage } }));
    post({ id, type: 'result', value });
  } catch (e) {
    post({ id, type: 'error', error: { name: e?.name ?? 'Error', message: e?.message ?? String(e) } });
  }
};

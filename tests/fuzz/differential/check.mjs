// One differential check: a model goes through onnxfold in each mode, and the original and each
// result run in ONNX Runtime (CPU, its own optimizations off) on the same seeded inputs.
//
//   const r = await checkModel(bytes, { dims, discontinuous });
//   r.status: 'ok' | 'skipped' (ORT cannot load or run the original: no reference)
//   r.refused: modes onnxfold refused with an OnnxfoldError (allowed: a clear refusal)
//   r.findings: [{ mode, kind, message }], kind one of
//     crash      onnxfold failed with something other than an OnnxfoldError
//     load       ORT loads the original but not onnxfold's result
//     io         the result's inputs or outputs are not the original's
//     run        ORT runs the original but not the result
//     mismatch   an output differs beyond the mode's tolerance
//     stochastic a nondeterministic output became deterministic (a random op was folded)
//     folded-error ORT fails running the original (a runtime error), the result runs: a failing
//                node was folded into a constant
//
// Modes: 'default' (optimize with default options), 'float16' (float16: true; compared by the
// range rule below, only when the model has no step function on floats), 'split'
// (splitConstants: ORT runs prep, and main on prep's outputs), 'outline' (outline-functions at
// depth 2: each module the node names give, "/blocks/block.2", becomes a local function), 'inline' (inline-functions: every
// call of a local function expanded, attribute references resolved).
import ort from 'onnxruntime-node';
import { OnnxfoldError, optimize, splitConstants } from '../../../js/index.js';
import { compareTensors, makeInputs } from '../../node/oracle.mjs';
import { halfToNumber } from '../../../web/src/verify-core.js';

// The oracle's defaults: float32 folding and fusions reorder arithmetic, nothing more.
export const TOLERANCE = { rtol: 1e-3, atol: 1e-4 };
// float16 keeps 11 significant bits, and how much a random model loses depends on its
// conditioning (a difference of two large sums, a product of ten values): an element passes
// within 2e-2 of its output's range (max - min of the original, as tests/node/float16.test.mjs
// uses 1e-2 on real models) plus 5e-2 of its own size plus 1e-3. That catches what a broken
// conversion does (a wrong weight, saturation, a float32-only op fed float16: off by orders of
// magnitude), not precision loss.
export const FLOAT16_TOLERANCE = { range: 2e-2, rtol: 5e-2, atol: 1e-3 };
export const MODES = ['default', 'float16', 'split', 'outline', 'inline'];

ort.env.logLevel = 'fatal';   // ORT's own shape-inference log lines are noise here
const SESSION = { executionProviders: ['cpu'], graphOptimizationLevel: 'disabled', logSeverityLevel: 4 };
const FLOATS = new Set(['float32', 'float64', 'float16']);
const SEED = 1;

// ORT may run on the initializers inside the bytes it was given, and training-mode
// BatchNormalization writes its running mean and var into its inputs (outputs alias inputs):
// each session gets its own copy, so no run changes the model another session or onnxfold reads.
export const createSession = (bytes) => ort.InferenceSession.create(bytes.slice(), SESSION);

// A runtime refusal that is ONNX Runtime's own gap (an op or type it has no kernel for) or its
// own internal error (its memory planner reusing a buffer of another shape; an outer value freed
// before a body reads it), not an error of the model: folding such a node is fine.
const ORT_GAP = /NOT_IMPLEMENTED|Could not find an implementation|Shape mismatch attempting to re-use buffer|Missing Input:/;

function float16Compare(name, e, a) {
  if (!FLOATS.has(e.type) || e.type !== a.type) return compareTensors(name, e, a, { rtol: 0, atol: 0 });
  // float16 tensors come back as raw bits (no Float16Array in node 20).
  const num = e.type === 'float16' && e.data instanceof Uint16Array ? halfToNumber : Number;
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of e.data) {
    const x = num(v);
    if (Number.isFinite(x)) { lo = Math.min(lo, x); hi = Math.max(hi, x); }
  }
  // An element past float16's largest (65504) cannot be computed in float16: the format's
  // limit, not a broken conversion (weights past it stay float32; activations cannot), so the
  // result is taken as the original there.
  const exp = Float64Array.from(e.data, num);
  const act = Float64Array.from(a.data, num);
  exp.forEach((x, i) => { if (Math.abs(x) > 65504) act[i] = x; });
  const { range, rtol, atol } = FLOAT16_TOLERANCE;
  const as = (t, data) => ({ type: e.type, dims: t.dims, size: t.size, data });
  return compareTensors(name, as(e, exp), as(a, act), { rtol, atol: atol + range * (hi > lo ? hi - lo : 0) });
}

async function runModel(bytes, feeds) {
  const s = await createSession(bytes);
  try {
    const own = Object.fromEntries(s.inputNames.filter((n) => Object.hasOwn(feeds, n)).map((n) => [n, feeds[n]]));
    const missing = s.inputNames.filter((n) => !Object.hasOwn(feeds, n));
    return { session: s, inputNames: s.inputNames, outputNames: s.outputNames, missing, run: () => s.run(own) };
  } catch (e) {
    await s.release();
    throw e;
  }
}

const toBytes = async (m) => (m instanceof Uint8Array ? m : new Uint8Array(await m.arrayBuffer()));

// What onnxfold makes of the model in `mode`: {bytes} | {prep, main} | {refused} | {crash}.
async function transform(bytes, mode) {
  try {
    if (mode === 'split') {
      const r = await splitConstants(bytes, { output: 'bytes' });
      // Nothing to split is a result: prep is empty (ORT loads no empty graph), main the model.
      return { prep: r.report.nothing_to_split ? null : await toBytes(r.prep), main: await toBytes(r.main) };
    }
    const options = { float16: { float16: true }, outline: { passes: ['outline-functions'], extra: { 'outline-functions.depth': '2' } },
      inline: { passes: ['inline-functions'] } }[mode] ?? {};
    const r = await optimize(bytes, { output: 'bytes', ...options });
    return { bytes: await toBytes(r.model) };
  } catch (e) {
    if (e instanceof OnnxfoldError) return { refused: e.message };
    return { crash: `${e?.name ?? typeof e}: ${e?.message ?? String(e)}` };
  }
}

function compareOutputs(mode, names, expected, actual, actual2, nondet) {
  const bad = [];
  for (const n of names) {
    const e = expected[n];
    const a = actual[n];
    if (nondet.has(n)) {
      const c = compareTensors(n, e, a, { rtol: Infinity, atol: Infinity });
      if (c.error) bad.push({ kind: 'mismatch', message: `output '${n}': ${c.error}` });
      const fixed = actual2.every((r) => {
        const c = compareTensors(n, a, r[n], { rtol: 0, atol: 0 });
        return !c.error && !c.mismatches;
      });
      if (fixed) {
        bad.push({ kind: 'stochastic', message: `output '${n}' is random in the original, fixed in the result` });
      }
      continue;
    }
    const c = mode === 'float16' ? float16Compare(n, e, a) : compareTensors(n, e, a, TOLERANCE);
    if (c.error) bad.push({ kind: 'mismatch', message: `output '${n}': ${c.error}` });
    else if (c.mismatches) {
      const w = c.worst;
      bad.push({ kind: 'mismatch', message: `output '${n}' ${c.dtype}[${c.dims}]: ${c.mismatches}/${c.size} elements differ, ` +
        `max |diff| ${c.maxAbsDiff.toPrecision(4)}; at [${w.coord}] original ${w.expected}, result ${w.actual}` });
    }
  }
  return bad;
}

/**
 * Check one model. Options: dims (symbolic dim sizes), discontinuous (skip the float16 compare),
 * random (run the original more often), modes (default MODES). Returns {status, refused: {mode: message}, findings, note}.
 */
export async function checkModel(bytes, { dims = {}, discontinuous = false, random = false, modes = MODES } = {}) {
  const out = { status: 'ok', refused: {}, findings: [], note: '' };
  let orig;
  let feeds;
  let expected;
  let origError = null;
  let ortGap = false;
  try {
    orig = await createSession(bytes);
  } catch (e) {
    out.status = 'skipped';
    out.note = `ORT cannot load the original: ${e.message.split('\n')[0].slice(0, 300)}`;
    return out;
  }
  const nondet = new Set();
  const names = orig.outputNames;
  try {
    feeds = makeInputs(orig, { seed: SEED, dims });
    try {
      expected = await orig.run(feeds);
      // Random ops (training-mode Dropout): outputs that change between runs are compared by
      // dtype and shape only. Three runs, six when the generator put a random op in: a few
      // elements picked from a random mask can repeat by chance.
      for (let k = 0; k < (random ? 5 : 2); k++) {
        const again = await orig.run(feeds);
        for (const n of names) {
          const c = compareTensors(n, expected[n], again[n], { rtol: 0, atol: 0 });
          if (c.error || c.mismatches) nondet.add(n);
        }
      }
    } catch (e) {
      origError = e.message.split('\n')[0].slice(0, 300);
      ortGap = ORT_GAP.test(e.message);   // the whole message: the reason comes last
    }
  } finally {
    await orig.release();
  }
  if (ortGap) {
    out.status = 'skipped';
    out.note = `ORT cannot run the original: ${origError}`;
    return out;
  }

  for (const mode of modes) {
    if (origError && mode !== 'default') continue;
    if (mode === 'float16' && discontinuous) continue;
    const t = await transform(bytes, mode);
    if (t.refused) { out.refused[mode] = t.refused; continue; }
    if (t.crash) { out.findings.push({ mode, kind: 'crash', message: t.crash }); continue; }
    let main;
    let runFeeds = feeds;
    try {
      if (mode === 'split') {
        // ORT computes the constant graph (prep), main gets its values by name.
        let values = {};
        if (t.prep) {
          const prep = await runModel(t.prep, {});
          try { values = await prep.run(); } finally { await prep.session.release(); }
        }
        runFeeds = { ...feeds, ...values };
        main = await runModel(t.main, runFeeds);
      } else {
        main = await runModel(t.bytes, feeds);
      }
    } catch (e) {
      if (!origError) out.findings.push({ mode, kind: 'load', message: `ORT cannot load the result: ${e.message.split('\n')[0].slice(0, 300)}` });
      continue;
    }
    try {
      if (origError) {
        try {
          await main.run();
          out.findings.push({ mode, kind: 'folded-error', message: `ORT fails running the original (${origError}) but runs the result` });
        } catch { /* both fail: consistent */ }
        continue;
      }
      const io = [];
      if (main.missing.length) io.push(`inputs the original does not have: ${main.missing.join(', ')}`);
      if (names.join() !== main.outputNames.join()) io.push(`outputs [${main.outputNames}], original [${names}]`);
      if (io.length) { out.findings.push({ mode, kind: 'io', message: io.join('; ') }); continue; }
      let actual;
      let actual2 = [];
      try {
        actual = await main.run();
        if (nondet.size) actual2 = [await main.run(), await main.run()];
      } catch (e) {
        out.findings.push({ mode, kind: 'run', message: `ORT cannot run the result: ${e.message.split('\n')[0].slice(0, 300)}` });
        continue;
      }
      for (const f of compareOutputs(mode, names, expected, actual, actual2, nondet)) out.findings.push({ mode, ...f });
    } finally {
      await main.session.release();
    }
  }
  if (origError && !out.findings.length) {
    out.status = 'skipped';
    out.note = `ORT cannot run the original: ${origError}`;
  }
  return out;
}

/** A finding's identity for the minimizer: the same mode and kind (and output count aside). */
export function signature(f) {
  return `${f.mode}/${f.kind}`;
}

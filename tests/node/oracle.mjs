// Equivalence oracle: runs an original and an optimized ONNX model with onnxruntime-node (CPU,
// ORT graph optimizations disabled) on identical seeded random inputs and compares all outputs.
//
//   import { compareModels, assertEquivalent } from './oracle.mjs';
//   const r = await compareModels('orig.onnx', 'opt.onnx', { seed: 1, rtol: 1e-3, atol: 1e-4 });
//
// Input metadata (names, element types, shapes with symbolic dims) comes from the ORIGINAL model via
// onnxruntime-node's `session.inputMetadata` (available in onnxruntime-node >= 1.22; checked on 1.30).
// Initializers that are also graph inputs are not listed by ORT and keep their stored values.

import ort from 'onnxruntime-node';
import assert from 'node:assert/strict';
// The input rules and the comparison are the package's (js/accuracy.js, onnxfold/accuracy): one of each.
import { compareTensors, makeTensor, mulberry32, resolveDim } from 'onnxfold/accuracy';

export { compareTensors, mulberry32 };

/**
 * Build seeded random inputs from an InferenceSession's input metadata.
 * `inputs` (optional) maps input name -> ort.Tensor or {type, data, dims} and overrides generation.
 */
export function makeInputs(session, { seed = 1, dimValue = 2, dims, inputs } = {}) {
  const rand = mulberry32(seed);
  const feeds = {};
  for (const meta of session.inputMetadata) {
    if (!meta.isTensor) throw new Error(`oracle: non-tensor input '${meta.name}' is not supported`);
    const shape = (meta.shape ?? []).map((d) => resolveDim(d, dims ?? {}, dimValue));
    const tensor = makeTensor(ort.Tensor, meta, shape, rand); // always generated, so later inputs stay stable
    if (inputs && Object.hasOwn(inputs, meta.name)) {
      const v = inputs[meta.name];
      feeds[meta.name] = v instanceof ort.Tensor ? v : new ort.Tensor(v.type ?? meta.type, v.data, v.dims);
    } else {
      feeds[meta.name] = tensor;
    }
  }
  return feeds;
}

function fmt(v) {
  if (typeof v === 'number' && Number.isFinite(v) && !Number.isInteger(v)) return v.toPrecision(6);
  return String(v);
}

function describe(o) {
  if (o.error) return `output '${o.name}': ${o.error}`;
  let s =
    `output '${o.name}' [${o.dims}] ${o.type}: ${o.mismatches}/${o.size} elements differ` +
    ` (maxAbsDiff ${fmt(o.maxAbsDiff)}, maxRelDiff ${fmt(o.maxRelDiff)})`;
  if (o.worst) {
    s +=
      `; worst at [${o.worst.coord}] (flat ${o.worst.index}): original ${fmt(o.worst.expected)},` +
      ` optimized ${fmt(o.worst.actual)}`;
  }
  return s;
}

async function openSession(path, sessionOptions) {
  return ort.InferenceSession.create(path, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'disabled',
    logSeverityLevel: 3,
    ...sessionOptions,
  });
}

/**
 * Compare an original and an optimized model on identical seeded random inputs.
 * Options: seed, dimValue (size of symbolic dims), dims ({dimName: size}), rtol, atol,
 *          inputs ({name: ort.Tensor | {type, data, dims}}), sessionOptions (extra ORT options),
 *          checkDeterminism (default true: run the original twice to detect stochastic outputs).
 * Returns {ok, outputs: [{name, type, dims, maxAbsDiff, maxRelDiff, mismatches, size, worst, error,
 *          nondeterministic?}], message}.
 * Throws only if the ORIGINAL model cannot be loaded or run (the oracle then has no reference).
 */
export async function compareModels(
  origPath,
  optPath,
  {
    seed = 1,
    dimValue = 2,
    dims,
    rtol = 1e-3,
    atol = 1e-4,
    inputs,
    sessionOptions,
    checkDeterminism = true,
  } = {},
) {
  const fail = (message, outputs = []) => ({ ok: false, outputs, message });
  const orig = await openSession(origPath, sessionOptions);
  let opt;
  try {
    const feeds = makeInputs(orig, { seed, dimValue, dims, inputs });
    const expected = await orig.run(feeds);

    try {
      opt = await openSession(optPath, sessionOptions);
    } catch (e) {
      return fail(`optimized model failed to load: ${e.message}`);
    }
    const extraInputs = opt.inputNames.filter((n) => !Object.hasOwn(feeds, n));
    if (extraInputs.length) {
      return fail(`optimized model has inputs the original does not: ${extraInputs.join(', ')}`);
    }
    const missing = orig.outputNames.filter((n) => !opt.outputNames.includes(n));
    const extra = opt.outputNames.filter((n) => !orig.outputNames.includes(n));
    if (missing.length || extra.length) {
      return fail(`output names differ: missing [${missing.join(', ')}], unexpected [${extra.join(', ')}]`);
    }
    const optFeeds = Object.fromEntries(opt.inputNames.map((n) => [n, feeds[n]]));
    let actual;
    try {
      actual = await opt.run(optFeeds);
    } catch (e) {
      return fail(`optimized model failed to run: ${e.message}`);
    }

    // Stochastic models (e.g. training-mode Dropout without a seed) give different outputs on every
    // run and ORT's global seed cannot be set from node. Detect them by running the original twice;
    // such outputs are compared by dtype/shape only, and must stay stochastic in the optimized model.
    const nondet = new Set();
    if (checkDeterminism) {
      const again = await orig.run(feeds);
      for (const n of orig.outputNames) {
        const c = compareTensors(n, expected[n], again[n], { rtol: 0, atol: 0 });
        if (c.error || c.mismatches) nondet.add(n);
      }
    }
    const actual2 = nondet.size ? await opt.run(optFeeds) : null;

    const outputs = orig.outputNames.map((n) => {
      const o = compareTensors(n, expected[n], actual[n], { rtol, atol });
      if (!nondet.has(n)) return o;
      o.nondeterministic = true;
      o.mismatches = 0;
      o.worst = null;
      if (!o.error) {
        const c = compareTensors(n, actual[n], actual2[n], { rtol: 0, atol: 0 });
        if (!c.error && !c.mismatches) {
          o.error =
            'original output is nondeterministic (e.g. training-mode Dropout) but the optimized ' +
            'one is deterministic: a stochastic op was removed or folded';
        }
      }
      return o;
    });
    const bad = outputs.filter((o) => o.error || o.mismatches);
    if (bad.length) {
      return fail(
        `not equivalent (rtol ${rtol}, atol ${atol}, seed ${seed}): ` + bad.map(describe).join('; '),
        outputs,
      );
    }
    const det = outputs.filter((o) => !o.nondeterministic);
    const maxAbs = Math.max(0, ...det.map((o) => o.maxAbsDiff));
    const maxRel = Math.max(0, ...det.map((o) => o.maxRelDiff));
    let message = `equivalent: ${outputs.length} output(s), maxAbsDiff ${fmt(maxAbs)}, maxRelDiff ${fmt(maxRel)}`;
    if (nondet.size) {
      message += `; nondeterministic in both models, compared by dtype/shape only: ${[...nondet].join(', ')}`;
    }
    return { ok: true, outputs, message };
  } finally {
    await orig.release?.();
    await opt?.release?.();
  }
}

/** A session with ORT's graph optimizations off: what the model itself computes. */
export async function unoptimizedSession(path) {
  return ort.InferenceSession.create(path, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'disabled',
    logSeverityLevel: 3,
  });
}

/**
 * For a model that computes the original's function at lower precision (float16, quantized
 * weights): each output's largest |diff| relative to the range of the original's output
 * (max - min; compareTensors' relRange), ORT with its optimizations off, seeded inputs.
 * Non-float32 outputs must be equal (rel 0, else Infinity); nondeterministic ones are marked,
 * not compared. Returns [{name, maxAbs, rel} | {name, nondeterministic: true}].
 */
export async function compareByRange(origPath, lowPath, { seed = 1 } = {}) {
  const orig = await unoptimizedSession(origPath);
  const conv = await unoptimizedSession(lowPath); // loading is one of the checks
  try {
    const feeds = makeInputs(orig, { seed });
    const expected = await orig.run(feeds);
    const again = await orig.run(feeds);
    const actual = await conv.run(feeds);
    const outputs = [];
    for (const name of orig.outputNames) {
      const e = expected[name];
      const a = actual[name];
      assert.ok(a, `output '${name}' is missing`);
      assert.equal(a.type, e.type, `output '${name}' keeps its type`);
      assert.deepEqual(a.dims, e.dims, `output '${name}' keeps its shape`);
      if (compareTensors(name, e, again[name], { rtol: 0, atol: 0 }).mismatches) {
        outputs.push({ name, nondeterministic: true });
        continue;
      }
      if (e.type !== 'float32') {
        const c = compareTensors(name, e, a, { rtol: 0, atol: 0 });
        outputs.push({ name, rel: c.mismatches ? Infinity : 0 });
        continue;
      }
      // A NaN or infinity where the original has none makes maxAbsDiff, and so rel, Infinity.
      const c = compareTensors(name, e, a, { rtol: 0, atol: Infinity });
      outputs.push({ name, maxAbs: c.maxAbsDiff, rel: c.relRange });
    }
    return outputs;
  } finally {
    await orig.release?.();
    await conv.release?.();
  }
}

/** Like compareModels, but throws an Error naming the offending output and worst element. */
export async function assertEquivalent(origPath, optPath, opts) {
  const r = await compareModels(origPath, optPath, opts);
  if (!r.ok) {
    const err = new Error(`${optPath} is not equivalent to ${origPath}: ${r.message}`);
    err.result = r;
    throw err;
  }
  return r;
}

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
//   r.illConditioned: [{ mode, message }]: mismatches the original's own conditioning explains
//     (below): counted, not findings
//   r.quant (QDQ models): { all: null | the error of ORT 'all' on the original, crashed,
//     elements, clamped (output elements at the end of their integer range) }
//
// Modes: 'default' (optimize with default options), 'float16' (float16: true; compared by the
// range rule below, only when the model has no step function on floats), 'split'
// (splitConstants: ORT runs prep, and main on prep's outputs), 'outline' (outline-functions at
// depth 2: each module the node names give, "/blocks/block.2", becomes a local function),
// 'inline' (inline-functions: every call of a local function expanded, attribute references
// resolved). QDQ models (gen-qdq.mjs,
// option quant): 'default' and 'quant-qoperator', 'quant-integer', 'quant-qdq-clean'
// (optimize with quant: 'qoperator' | 'integer' | 'qdq-clean').
//
// QDQ tolerance: an output element passes within one quantization step of it, against the
// nearer of two references: ORT running the original with its graph optimizations off, and at
// 'all' (which fuses QDQ into integer ops itself). The step (quantSteps): the scale of the
// DequantizeLinear that produces the output (per channel when it is per axis); 1 for an integer
// output (a QuantizeLinear's); for a float output (an op after the last DQ) 1/255 of the
// original output's range (max - min), as tests/node/quant-finalize.test.mjs does, plus the
// float tolerance. Or more, when one tie rounded the other way upstream can move the output
// further (deviations(): an int8 step requantized to finer uint8 steps, a step added twice by an
// Add of two paths, a step through Reshape to the output). Why a step: integer ops requantize in
// another order than the float
// QDQ original (int32 accumulation, one rescale before rounding, an int32 bias), so a value on or
// next to a rounding tie may land one integer away, and then stays one step away; a broken
// rewrite (a wrong scale, zero point, axis, saturation) is off by many steps. Why two
// references: ORT's own integer kernels (what 'all' fuses to) round some ties otherwise than its
// float kernels, and both are right.
//
// Conditioning: a float mismatch is checked against the original's own sensitivity: ORT runs
// the original again with every float constant moved by one float32 ulp (seeded random signs,
// two sets and their mirrors: four runs, same inputs; only after a mismatch, so it costs nothing
// otherwise). When at every mismatching element the original itself moves at least as far as
// the result differs, the difference is within what rounding the constants can do (folding in
// double a product ORT accumulates in float32, then Cos of a value near 61972: one ulp there is
// 0.004), so it is counted as ill-conditioned, not a finding. In float16 mode the constants and
// the float32 inputs move by half a float16 ulp (2^-12 of their value), the rounding float16
// storage itself makes; what is still past the tolerance is compared with the ideal float16
// conversion (float16-reference.mjs: the original computed with every float32 value, constants,
// inputs and each node's output, stored in float16): an InstanceNormalization of three nearly
// equal values divides their float16 rounding by a tiny deviation, a Sin of -100 in float16 is
// off by two of its 0.06 steps, and any conversion does the same.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import ort from 'onnxruntime-node';
import { OnnxfoldError, optimize, splitConstants } from '../../../js/index.js';
import { compareTensors, makeInputs, mulberry32 } from '../../node/oracle.mjs';
import { halfToNumber } from 'onnxfold/accuracy';
import { float16Reference } from './float16-reference.mjs';
import { mainGraph, perturbConstants } from './onnx-walk.mjs';
import { ortMessage, runAll } from './ort-all.mjs';

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
export const QDQ_MODES = ['default', 'quant-qoperator', 'quant-integer', 'quant-qdq-clean'];
export const ALL_MODES = [...new Set([...MODES, ...QDQ_MODES])];
// Runs of the original with its constants perturbed, for the conditioning check: seeded signs,
// and each set mirrored (so a single constant is moved both ways).
const PERTURBATIONS = [[1, false], [1, true], [2, false], [2, true]];

ort.env.logLevel = 'fatal';   // ORT's own shape-inference log lines are noise here
const SESSION = { executionProviders: ['cpu'], graphOptimizationLevel: 'disabled', logSeverityLevel: 4 };
const FLOATS = new Set(['float32', 'float64', 'float16']);
// Op types whose outputs are random (any occurrence of the name in the bytes: a node name
// containing one only keeps the stricter check).
const RANDOM_OP = /Dropout|RandomNormal|RandomUniform|Bernoulli|Multinomial/;
const SEED = 1;

// ORT may run on the initializers inside the bytes it was given, and training-mode
// BatchNormalization writes its running mean and var into its inputs (outputs alias inputs):
// each session gets its own copy, so no run changes the model another session or onnxfold reads.
// A model with external data ({location: bytes}) is written to a folder of its own and loaded
// from there (ORT reads the data while it creates the session).
export async function createSession(bytes, files = null) {
  if (!files || !Object.keys(files).length) return ort.InferenceSession.create(bytes.slice(), SESSION);
  const dir = mkdtempSync(join(tmpdir(), 'onnxfold-differential-'));
  try {
    writeFileSync(join(dir, 'model.onnx'), bytes);
    for (const [location, data] of Object.entries(files)) {
      if (basename(location) !== location) throw new Error(`external data location '${location}' is not a file name`);
      writeFileSync(join(dir, location), data);
    }
    return await ort.InferenceSession.create(join(dir, 'model.onnx'), SESSION);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// A runtime refusal that is ONNX Runtime's own gap (an op or type it has no kernel for) or its
// own internal error (its memory planner reusing a buffer of another shape; an outer value freed
// before a body reads it), not an error of the model: folding such a node is fine.
const ORT_GAP = /NOT_IMPLEMENTED|Could not find an implementation|Shape mismatch attempting to re-use buffer|Missing Input:/;

// A tensor's elements as numbers: float16 tensors come back as raw bits (no Float16Array in
// node 20).
const numbers = (t) => (t.type === 'float16' && t.data instanceof Uint16Array ? Float64Array.from(t.data, halfToNumber) : t.data);

// The float16 rule: {error | mismatches, ..., tolerance, elements: the elements past it [{i, d}]}.
function float16Compare(name, e, a) {
  if (!FLOATS.has(e.type) || e.type !== a.type) return { ...compareTensors(name, e, a, { rtol: 0, atol: 0 }), elements: [] };
  let lo = Infinity;
  let hi = -Infinity;
  const exp = Float64Array.from(numbers(e));
  for (const x of exp) {
    if (Number.isFinite(x)) { lo = Math.min(lo, x); hi = Math.max(hi, x); }
  }
  // An element past float16's largest (65504) cannot be computed in float16: the format's
  // limit, not a broken conversion (weights past it stay float32; activations cannot), so the
  // result is taken as the original there.
  const act = Float64Array.from(numbers(a));
  exp.forEach((x, i) => { if (Math.abs(x) > 65504) act[i] = x; });
  const { range, rtol, atol } = FLOAT16_TOLERANCE;
  const as = (t, data) => ({ type: e.type, dims: t.dims, size: t.size, data });
  const tolerance = { rtol, atol: atol + range * (hi > lo ? hi - lo : 0) };
  const elements = badElements({ data: exp }, { data: act }, (i, y) => tolerance.atol + rtol * Math.abs(y));
  return { ...compareTensors(name, as(e, exp), as(a, act), tolerance), tolerance, elements };
}

async function runModel(bytes, feeds, files = null) {
  const s = await createSession(bytes, files);
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

// What onnxfold makes of the model in `mode`: {bytes, files} | {prep, main} | {refused} |
// {crash}. `files`: the model's external data ({location: bytes}) in and out; `outThreshold`:
// write the result's initializers of at least that many bytes as external data.
async function transform(bytes, mode, files = null, outThreshold = null) {
  const io = { output: 'bytes', ...(files ? { externalData: files } : {}) };
  try {
    if (mode === 'split') {
      const r = await splitConstants(bytes, io);
      // Nothing to split is a result: prep is empty (ORT loads no empty graph), main the model.
      return { prep: r.report.nothing_to_split ? null : await toBytes(r.prep), main: await toBytes(r.main) };
    }
    const options = { float16: { float16: true }, outline: { passes: ['outline-functions'], extra: { 'outline-functions.depth': '2' } },
      inline: { passes: ['inline-functions'] } }[mode] ?? (mode.startsWith('quant-') ? { quant: mode.slice(6) } : {});
    const out = outThreshold === null ? {} : { externalDataThreshold: outThreshold, externalDataLocation: 'result.data' };
    const r = await optimize(bytes, { ...io, ...out, ...options });
    return { bytes: await toBytes(r.model), files: Object.keys(r.externalData).length ? r.externalData : null };
  } catch (e) {
    if (e instanceof OnnxfoldError) return { refused: e.message };
    return { crash: `${e?.name ?? typeof e}: ${e?.message ?? String(e)}` };
  }
}

const num = (v) => (typeof v === 'bigint' ? Number(v) : v);

// The elements where `a` is farther from `e` than `allowed(i, e)` (float rule of compareTensors:
// NaN equals NaN, an infinity only itself): [{i, d}].
function badElements(e, a, allowed) {
  const bad = [];
  for (let i = 0; i < e.data.length; i++) {
    const x = num(a.data[i]);
    const y = num(e.data[i]);
    if (x === y || (Number.isNaN(x) && Number.isNaN(y))) continue;
    const d = Number.isFinite(x) && Number.isFinite(y) ? Math.abs(x - y) : Infinity;
    if (!(d <= allowed(i, y))) bad.push({ i, d });
  }
  return bad;
}

function coordOf(i, dims) {
  const c = new Array(dims.length).fill(0);
  for (let d = dims.length - 1; d >= 0; d--) { c[d] = i % dims[d]; i = Math.floor(i / dims[d]); }
  return c;
}

const INT_RANGES = { uint8: [0, 255], int8: [-128, 127], uint16: [0, 65535], int16: [-32768, 32767] };

// Ops whose every output element moves by at most as much as one input element moved (they
// select, reorder, copy, clamp or average elements, or have a slope of at most 1).
const LIPSCHITZ_1 = new Set(['Reshape', 'Transpose', 'Flatten', 'Squeeze', 'Unsqueeze', 'Identity', 'Slice',
  'Gather', 'Concat', 'MaxPool', 'GlobalMaxPool', 'AveragePool', 'GlobalAveragePool', 'Expand', 'Tile', 'Split',
  'Relu', 'Clip', 'LeakyRelu', 'Sigmoid', 'Tanh', 'Softmax', 'Neg', 'Abs', 'Dropout']);
const BOUNDED_1 = new Set(['Sigmoid', 'Tanh', 'Softmax']);   // |output| <= 1

// How far a value of the original may legitimately move in a finalized model: every
// QuantizeLinear whose input onnxfold may compute otherwise (after any op but Q/DQ and the
// graph's inputs: a Conv becomes an integer op, a bias int32, float ops are reordered) may round
// a tie the other way, one step; that step then travels through the graph (one tie at a time:
// through an op of slope 1 as it is, through a Conv/MatMul/Gemm/Mul times the largest factor it
// meets, through Add/Sub from both inputs) and every later QuantizeLinear rounds what reaches it
// to whole steps (an int8 step of 0.0049 is two uint8 steps of 0.0030). Per value: dev (in its
// own units: integers for a Q's output) and mag (a bound on |value|: from a DQ's integer range,
// a constant, 1 for the oracle's float inputs; Infinity when unknown, where a product then
// passes nothing on). An op not listed passes nothing on (its next Q still gets its own step).
function deviations(g) {
  const dev = new Map();
  const mag = new Map(g.inputs.filter((n) => !g.constants.has(n)).map((n) => [n, 1]));
  const D = (v) => (v ? dev.get(v) ?? 0 : 0);
  const absMax = (data) => { let m = 0; for (const x of data) m = Math.max(m, Math.abs(Number(x))); return m; };
  const M = (v) => {
    if (!v) return 0;
    if (mag.has(v)) return mag.get(v);
    const c = g.constants.get(v);
    return c?.data ? absMax(c.data) : Infinity;
  };
  const times = (a, b) => (a === 0 || b === 0 ? 0 : a * b);
  const EPS = Number.MIN_VALUE;   // computed otherwise, by less than anything measurable
  for (const n of g.nodes) {
    const [x, y, z] = n.inputs;
    let d = 0;
    let m = Infinity;
    const scale = n.op === 'QuantizeLinear' || n.op === 'DequantizeLinear' ? g.constants.get(y)?.data : null;
    if (n.op === 'QuantizeLinear') {
      const s = scale?.length ? Math.min(...scale) : 0;
      d = D(x) > 0 ? (s > 0 ? Math.max(1, Math.ceil(D(x) / s - 1e-6)) : Infinity) : 0;
    } else if (n.op === 'DequantizeLinear') {
      const zp = z ? g.constants.get(z)?.data : null;
      const type = zp ? g.constants.get(z).type : 'uint8';
      const [lo, hi] = INT_RANGES[type] ?? [-(2 ** 31), 2 ** 31];
      d = scale?.length ? times(D(x), Math.max(...scale)) : 0;
      const c = g.constants.get(x)?.data;
      m = scale?.length ? Math.max(...scale.map((sc, i) => {
        const zi = zp ? Number(zp[zp.length > 1 ? i : 0]) : 0;
        return (c ? absMax(Array.from(c, (q) => Number(q) - zi)) : Math.max(Math.abs(lo - zi), Math.abs(hi - zi))) * sc;
      })) : Infinity;
    } else if (LIPSCHITZ_1.has(n.op)) {
      const data = n.op === 'Concat' ? n.inputs : [x];
      d = Math.max(EPS, ...data.map(D));
      m = BOUNDED_1.has(n.op) ? 1 : Math.max(...data.map(M));
    } else if (n.op === 'Add' || n.op === 'Sub') {
      d = EPS + D(x) + D(y);
      m = M(x) + M(y);
    } else if (n.op === 'Mul') {
      d = EPS + times(M(x), D(y)) + times(M(y), D(x)) + times(D(x), D(y));
      m = M(x) * M(y);
    } else if (n.op === 'Conv') {
      d = EPS + times(D(x), M(y)) + D(z);
    } else if (n.op === 'MatMul') {
      d = EPS + times(M(x), D(y)) + times(M(y), D(x));
    } else if (n.op === 'Gemm') {
      d = EPS + Math.abs(n.attrs.alpha ?? 1) * (times(M(x), D(y)) + times(M(y), D(x))) + Math.abs(n.attrs.beta ?? 1) * D(z);
    } else if (n.op !== 'Constant') {
      d = EPS;
    }
    for (const o of n.outputs) {
      if (!o) continue;
      dev.set(o, Number.isNaN(d) ? Infinity : d);
      mag.set(o, m);
    }
  }
  return dev;
}

// Per graph output of a QDQ model: {kind, step(i) -> one quantization step at element i,
// allowed(i) -> how far element i may be off (at least one step, or the deviation a tie
// upstream may cause: deviations()), clamp(i) -> whether the element is at the end of its
// integer range (null when unknown)}, from the original's graph and its reference outputs.
// The step: the scale of the DQ that produces the output (per channel when per axis); 1 for an
// integer output; 1/255 of the output's range for any other.
function quantSteps(bytes, names, expected) {
  const g = mainGraph(bytes);
  const producer = new Map(g.nodes.flatMap((n) => n.outputs.map((o) => [o, n])));
  const dev = deviations(g);
  const steps = {};
  for (const name of names) {
    const e = expected[name];
    const n = producer.get(name);
    const d = dev.get(name) ?? 0;
    if (INT_RANGES[e.type]) {
      const [lo, hi] = INT_RANGES[e.type];
      steps[name] = { kind: 'integer', step: () => 1, allowed: () => Math.max(1, d),
        clamp: (i) => e.data[i] <= lo || e.data[i] >= hi };
      continue;
    }
    const scale = n?.op === 'DequantizeLinear' ? g.constants.get(n.inputs[1])?.data : null;
    if (scale?.length && e.type === 'float32') {
      const rank = e.dims.length;
      const a = n.attrs.axis ?? 1;
      const axis = a < 0 ? a + rank : a;
      const channel = scale.length === 1 ? () => 0 : (i) => coordOf(i, e.dims)[axis];
      // The quantized type: the zero point's, or the DQ input's producer (a Q's output_dtype or
      // uint8), or the integer initializer it reads.
      const zp = n.inputs[2] ? g.constants.get(n.inputs[2]) : null;
      const q = producer.get(n.inputs[0]);
      const qtype = zp?.type ?? g.constants.get(n.inputs[0])?.type ??
        (q?.op === 'QuantizeLinear' ? ({ 2: 'uint8', 3: 'int8', 4: 'uint16', 5: 'int16' }[q.attrs.output_dtype ?? 2]) : undefined);
      const range = INT_RANGES[qtype];
      steps[name] = {
        // Whole steps of its own (per channel) scale: as many as its input's integers may move.
        kind: 'dq', step: (i) => scale[channel(i)], allowed: (i) => Math.max(1, dev.get(n.inputs[0]) ?? 0) * scale[channel(i)],
        clamp: range ? (i) => {
          const c = channel(i);
          const v = Math.round(e.data[i] / scale[c]) + (zp ? Number(zp.data[c]) : 0);
          return v <= range[0] || v >= range[1];
        } : null,
      };
      continue;
    }
    let lo = Infinity;
    let hi = -Infinity;
    for (const v of e.data) {
      const x = num(v);
      if (Number.isFinite(x)) { lo = Math.min(lo, x); hi = Math.max(hi, x); }
    }
    const step = hi > lo ? (hi - lo) / 255 : 0;
    steps[name] = { kind: 'float', step: () => step, allowed: () => Math.max(step, d), clamp: null };
  }
  return steps;
}

// One finding's text for the mismatching elements `bad` of output `n`.
function describeMismatch(n, e, a, bad, more = () => '') {
  const w = bad.reduce((m, b) => (b.d > m.d ? b : m));
  return `output '${n}' ${e.type}[${e.dims}]: ${bad.length}/${e.data.length} elements differ, ` +
    `max |diff| ${w.d.toPrecision(4)}; at [${coordOf(w.i, e.dims)}] original ${num(e.data[w.i])}, result ${num(a.data[w.i])}${more(w)}`;
}

// Output checks common to every mode: dtype and shape. An error text, or null.
function layoutError(e, a) {
  if (a.type !== e.type) return `dtype differs: original ${e.type}, result ${a.type}`;
  if (a.dims.length !== e.dims.length || a.dims.some((d, i) => d !== e.dims[i])) return `shape differs: original [${e.dims}], result [${a.dims}]`;
  return null;
}

/**
 * Mismatches of `actual` against `expected` ([{kind, message, output, elements: [{i, d}]}]; a
 * `conditioned` one may be explained by the original's sensitivity). `ref` for QDQ models:
 * {all: outputs of ORT 'all' or null, steps: quantSteps(...)}.
 */
function compareOutputs(mode, names, expected, actual, actual2, nondet, ref = null, random = false) {
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
      // Only a random op can be folded into a fixed value: without one, an output that changes
      // between runs is ONNX Runtime updating a training-mode BatchNormalization's running
      // statistics in its input buffers, and a result that computes them afresh is right.
      if (fixed && random) {
        bad.push({ kind: 'stochastic', message: `output '${n}' is random in the original, fixed in the result` });
      }
      continue;
    }
    if (mode === 'float16') {
      const c = float16Compare(n, e, a);
      if (c.error) bad.push({ kind: 'mismatch', message: `output '${n}': ${c.error}` });
      else if (c.mismatches) {
        const w = c.worst;
        const message = `output '${n}' ${c.type}[${c.dims}]: ${c.mismatches}/${c.size} elements differ, ` +
          `max |diff| ${c.maxAbsDiff.toPrecision(4)}; at [${w.coord}] original ${w.expected}, result ${w.actual}`;
        // The elements past the tolerance, for the float16 conditioning check.
        const els = c.elements;
        bad.push(els.length ? { kind: 'mismatch', conditioned: 'float16', output: n, elements: els, message } : { kind: 'mismatch', message });
      }
      continue;
    }
    const err = layoutError(e, a);
    if (err) { bad.push({ kind: 'mismatch', message: `output '${n}': ${err}` }); continue; }
    const exact = !FLOATS.has(e.type);
    if (!ref) {
      if (exact) {
        const c = compareTensors(n, e, a, TOLERANCE);
        if (!c.mismatches) continue;
        // An integer computed from floats (a Cast, an ArgMax) is as conditioned as they are.
        const els = e.type === 'bool' || e.type === 'string' ? [] : badElements(e, a, () => 0);
        const message = `output '${n}' ${c.type}[${c.dims}]: ${c.mismatches}/${c.size} elements differ` +
          (els.length ? `, max |diff| ${Math.max(...els.map((x) => x.d))}` : '');
        bad.push(els.length ? { kind: 'mismatch', conditioned: true, output: n, elements: els, message } : { kind: 'mismatch', message });
        continue;
      }
      const { rtol, atol } = TOLERANCE;
      const els = badElements(e, a, (i, y) => atol + rtol * Math.abs(y));
      if (els.length) bad.push({ kind: 'mismatch', conditioned: true, output: n, elements: els, message: describeMismatch(n, e, a, els) });
      continue;
    }
    // QDQ: within one step of the nearer reference.
    const st = ref.steps[n];
    const { rtol, atol } = TOLERANCE;
    // Plus the float rounding of the two values (each a float32 product: half an ulp).
    const allowed = (i, y) => st.allowed(i) * (1 + 1e-6) + 2 ** -23 * Math.abs(y) + (st.kind === 'float' ? atol + rtol * Math.abs(y) : 0);
    let els = badElements(e, a, allowed);
    const all = ref.all?.[n];
    if (els.length && all && !layoutError(e, all)) {
      const near = new Map(badElements(all, a, allowed).map((b) => [b.i, b.d]));
      els = els.filter((b) => near.has(b.i)).map((b) => ({ i: b.i, d: Math.min(b.d, near.get(b.i)) }));
    }
    if (els.length) {
      bad.push({ kind: 'mismatch', conditioned: true, output: n, elements: els,
        message: describeMismatch(n, e, a, els, (w) => `${all ? ` (ORT 'all' ${num(all.data[w.i])})` : ''}, ` +
          `${(w.d / st.step(w.i)).toPrecision(3)} steps of ${st.step(w.i).toPrecision(4)}` +
          `${st.allowed(w.i) > st.step(w.i) * (1 + 1e-6) ? ` (${(st.allowed(w.i) / st.step(w.i)).toPrecision(3)} allowed: a tie upstream)` : ''}`) });
    }
  }
  return bad;
}

// How far the original's outputs move when its float constants move by one float32 ulp (float16:
// false), or its float constants and float32 inputs by half a float16 ulp, 2^-12 of their value,
// what storing them in float16 does (float16: true): per output, the largest move of each
// element over the PERTURBATIONS runs; null when it cannot be measured.
async function sensitivity(bytes, feeds, names, expected, float16 = false, files = null) {
  const moves = Object.fromEntries(names.map((n) => [n, new Float64Array(expected[n].data.length)]));
  for (const [seed, mirror] of PERTURBATIONS) {
    const { bytes: b, count } = perturbConstants(bytes, seed, mirror, float16 ? 2 ** 11 : 1);
    let moved = feeds;
    if (float16) {
      const rand = mulberry32(seed + 7919);
      moved = Object.fromEntries(Object.entries(feeds).map(([k, t]) => [k, t.type !== 'float32' ? t
        : new ort.Tensor('float32', Float32Array.from(t.data, (x) => x * (1 + ((rand() < 0.5) !== mirror ? 1 : -1) * 2 ** -12)), t.dims)]));
    } else if (!count) {
      return moves;   // no float constant: nothing moves
    }
    let s;
    try {
      s = await createSession(b, files);
      const out = await s.run(Object.fromEntries(s.inputNames.map((n) => [n, moved[n]])));
      for (const n of names) {
        const e = numbers(expected[n]);
        const p = numbers(out[n]);
        const m = moves[n];
        for (let i = 0; i < e.length; i++) {
          const x = num(p[i]);
          const y = num(e[i]);
          // A perturbed value that is not finite (Pow of a negative base whose integral exponent
          // moved) is a discontinuity of the perturbation, not a measure: it explains nothing.
          const d = Number.isFinite(x) && Number.isFinite(y) ? Math.abs(x - y) : 0;
          if (d > m[i]) m[i] = d;
        }
      }
    } catch {
      return null;
    } finally {
      await s?.release();
    }
  }
  return moves;
}

// The outputs of the original with every float32 value stored in float16 (float16-reference.mjs)
// on the same inputs rounded to float16; null when there is no such reference or ORT cannot run it.
async function roundedOutputs(bytes, feeds, files) {
  const r = await float16Reference(bytes, files);
  if (!r) return null;
  let s;
  try {
    s = await createSession(r.bytes, r.files);
    const moved = r.feeds(feeds);
    return await s.run(Object.fromEntries(s.inputNames.map((n) => [n, moved[n]])));
  } catch {
    return null;
  } finally {
    await s?.release();
  }
}

/**
 * Check one model. Options: dims (symbolic dim sizes), discontinuous (skip the float16 compare),
 * random (run the original more often), quant (a QDQ model: the QDQ tolerance and references),
 * modes (default MODES, QDQ_MODES for a QDQ model), transform (the checker's own tests: what
 * stands for onnxfold, async (bytes, mode) -> {bytes} | {refused} | {crash}), files (the model's
 * external data, {location: bytes}), outThreshold (results keep initializers of at least that
 * many bytes as external data; null: onnxfold's default).
 * Returns {status, refused: {mode: message}, findings, illConditioned, note, quant}.
 */
export async function checkModel(bytes, { dims = {}, discontinuous = false, random = false, quant = false,
  modes = quant ? QDQ_MODES : MODES, transform: transformOf = transform, files = null, outThreshold = null } = {}) {
  // The generator's flag says a random op was emitted; a minimized model may have lost it.
  random = random && RANDOM_OP.test(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1'));
  const out = { status: 'ok', refused: {}, findings: [], illConditioned: [], note: '', quant: null };
  let orig;
  let feeds;
  let expected;
  let origError = null;
  let ortGap = false;
  try {
    orig = await createSession(bytes, files);
  } catch (e) {
    out.status = 'skipped';
    out.note = `ORT cannot load the original: ${ortMessage(e)}`;
    return out;
  }
  const nondet = new Set();
  let resultRuns = 2;
  const names = orig.outputNames;
  try {
    feeds = makeInputs(orig, { seed: SEED, dims });
    try {
      expected = await orig.run(feeds);
      // Random ops (training-mode Dropout): outputs that change between runs are compared by
      // dtype and shape only. Three runs, six when the generator put a random op in: a few
      // elements picked from a random mask can repeat by chance.
      const runs = random ? 5 : 2;
      const changed = {};
      for (let k = 0; k < runs; k++) {
        const again = await orig.run(feeds);
        for (const n of names) {
          const c = compareTensors(n, expected[n], again[n], { rtol: 0, atol: 0 });
          if (c.error || c.mismatches) {
            nondet.add(n);
            changed[n] = (changed[n] ?? 0) + 1;
          }
        }
      }
      // A result output is taken as fixed when it repeats over so many runs that an output
      // changing as often as the original's (rate r) would repeat with probability under 1e-3:
      // ln(1e-3) / ln(1 - r) runs (a Dropout of ratio 0.25 over four nonzero elements repeats
      // three runs in a row 4% of the time).
      for (const n of nondet) {
        const r = changed[n] / runs;
        resultRuns = Math.max(resultRuns, r >= 1 ? 2 : Math.min(30, Math.ceil(Math.log(1e-3) / Math.log(1 - r))));
      }
    } catch (e) {
      origError = ortMessage(e);
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
  let ref = null;
  if (quant && !origError) {
    const all = await runAll(bytes, feeds);
    const steps = quantSteps(bytes, names, expected);
    let elements = 0;
    let clamped = 0;
    for (const n of names) {
      if (!steps[n].clamp) continue;
      for (let i = 0; i < expected[n].data.length; i++) { elements++; if (steps[n].clamp(i)) clamped++; }
    }
    ref = { all: all.outputs ?? null, steps };
    out.quant = { all: all.error ?? null, crashed: !!all.crashed, elements, clamped };
  }
  const sensitivities = {};   // the original's sensitivity (float32, float16), measured on the first mismatch that needs it
  let rounded;   // the float16 reference's outputs (null: none), run on the first float16 mismatch left

  for (const mode of modes) {
    if (origError && mode !== 'default') continue;
    if (mode === 'float16' && discontinuous) continue;
    const t = await transformOf(bytes, mode, files, outThreshold);
    if (t.refused) { out.refused[mode] = t.refused; continue; }
    if (t.crash) { out.findings.push({ mode, kind: 'crash', message: t.crash }); continue; }
    let main;
    let runFeeds = feeds;
    try {
      if (mode === 'split') {
        // ORT computes the constant graph (prep), main gets its values by name.
        let values = {};
        if (t.prep) {
          const prep = await runModel(t.prep, {}, files);
          try { values = await prep.run(); } finally { await prep.session.release(); }
        }
        runFeeds = { ...feeds, ...values };
        main = await runModel(t.main, runFeeds, files);
      } else {
        main = await runModel(t.bytes, feeds, t.files);
      }
    } catch (e) {
      if (!origError) out.findings.push({ mode, kind: 'load', message: `ORT cannot load the result: ${ortMessage(e)}` });
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
        for (let k = 0; nondet.size && k < resultRuns; k++) actual2.push(await main.run());
      } catch (e) {
        out.findings.push({ mode, kind: 'run', message: `ORT cannot run the result: ${ortMessage(e)}` });
        continue;
      }
      for (const { conditioned, elements, output, ...f } of compareOutputs(mode, names, expected, actual, actual2, nondet, ref, random)) {
        if (conditioned) {
          const f16 = conditioned === 'float16';
          const key = f16 ? 'float16' : 'float32';
          if (!Object.hasOwn(sensitivities, key)) sensitivities[key] = await sensitivity(bytes, feeds, names, expected, f16, files);
          const m = sensitivities[key]?.[output];
          let left = elements.filter(({ i, d }) => !(m && m[i] >= d));
          let stored = 0;
          if (left.length && f16) {
            // What float16 storage of the intermediate values loses (the rounded reference).
            if (rounded === undefined) rounded = await roundedOutputs(bytes, feeds, files);
            const r = rounded?.[output];
            if (r) {
              const far = new Set(float16Compare(output, r, actual[output]).elements.map(({ i }) => i));
              stored = left.filter(({ i }) => !far.has(i)).length;
              left = left.filter(({ i }) => far.has(i));
            }
          }
          if (!left.length) {
            // Said of the worst element: by the conditioning when it explains it, else by the
            // float16 reference.
            const w = elements.reduce((x, y) => (y.d > x.d ? y : x));
            out.illConditioned.push({ mode, ...f, message: `${f.message}; ` + (m && m[w.i] >= w.d
              ? `the original itself moves by ${m[w.i].toPrecision(4)} there ` +
                (f16 ? 'when its constants and inputs move by half a float16 ulp' : 'when its constants move by one float32 ulp')
              : `within the float16 tolerance of the original computed with every float32 value stored in float16 ` +
                `(${numbers(rounded[output])[w.i]} there${stored < elements.length ? '; the other elements: the original moves as far when its constants and inputs move by half a float16 ulp' : ''})`) });
            continue;
          }
        }
        out.findings.push({ mode, ...f });
      }
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

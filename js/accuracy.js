// onnxfold/accuracy: how a model's outputs are judged against another's, with no runtime of its
// own. Seeded inputs (mulberry32, symbolic dims sized by name, floats in [-1, 1), masks all ones,
// integer ids in [0, 10), token-type ids zero), the comparison of two outputs (the oracle's
// tolerance |a - e| <= atol + rtol * |e|, and for floats the cosine, max |diff| / range and top-1
// agreement per row), and runs of a reference and its candidates through an ONNX Runtime module
// the caller passes (onnxruntime-node or -web). The package's variants({ accuracy }), the page's
// Verify and accuracy check (its verify worker) and the tests' oracle all use this one copy.

export const DEFAULTS = { seed: 1, rtol: 1e-3, atol: 1e-4, dimValue: 2 };

// Sizes for symbolic dims, by dim name (first match wins); everything else gets DEFAULTS.dimValue.
const DIM_RULES = [
  [/sample/i, 16000], // raw audio must survive the strided convolutions of an audio front-end
  [/seq|sequence|time|len|token/i, 8],
];

// The size a dim name's rule gives; undefined when none applies.
function ruleFor(name) {
  for (const [re, v] of DIM_RULES) if (re.test(name)) return v;
  return undefined;
}

export function defaultDim(name) {
  return ruleFor(name) ?? DEFAULTS.dimValue;
}

/** mulberry32: small deterministic 32-bit PRNG; returns floats in [0, 1). */
export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// A dim ORT reports: a number, a symbol the user sized (or the rules size), or unnamed (-1/''),
// which gets `dimValue`.
export function resolveDim(d, dims = {}, dimValue = DEFAULTS.dimValue) {
  if (typeof d === 'number' && d >= 0) return d;
  if (typeof d === 'string' && d && Object.hasOwn(dims, d)) return dims[d];
  return (typeof d === 'string' && d ? ruleFor(d) : undefined) ?? dimValue;
}

// float32 -> float16 bits, truncating (test inputs and data only: tiny values flush to zero).
export function toHalfBits(f) {
  const view = new DataView(new ArrayBuffer(4));
  view.setFloat32(0, f);
  const x = view.getUint32(0);
  const sign = (x >>> 16) & 0x8000;
  const exp = ((x >>> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return sign; // inputs are in [-1, 1]: flushing tiny values to zero is enough
  if (exp >= 31) return sign | 0x7c00;
  return sign | (exp << 10) | ((x & 0x7fffff) >>> 13);
}

export function halfToNumber(h) {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

const INT_ARRAYS = {
  int32: Int32Array,
  uint32: Uint32Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int8: Int8Array,
  uint8: Uint8Array,
};

// One seeded input tensor of `meta`'s type and `shape` (`Tensor`: the runtime's tensor class).
export function makeTensor(Tensor, meta, shape, rand) {
  const n = shape.reduce((a, b) => a * b, 1);
  const name = meta.name.toLowerCase();
  const isMask = name.includes('mask');
  const float = () => (isMask ? 1 : rand() * 2 - 1);
  switch (meta.type) {
    case 'float32':
    case 'float64': {
      const data = meta.type === 'float32' ? new Float32Array(n) : new Float64Array(n);
      for (let i = 0; i < n; i++) data[i] = float();
      return new Tensor(meta.type, data, shape);
    }
    case 'float16': {
      const data = new Uint16Array(n);
      for (let i = 0; i < n; i++) data[i] = toHalfBits(float());
      return new Tensor('float16', data, shape);
    }
    case 'bool':
      return new Tensor('bool', new Uint8Array(n).fill(1), shape);
    case 'string':
      return new Tensor(
        'string',
        Array.from({ length: n }, (_, i) => `s${i % 10}`),
        shape,
      );
    default: {
      const zero = /token_type|segment/.test(name);
      const value = () => (isMask ? 1 : zero ? 0 : Math.floor(rand() * 10));
      if (meta.type === 'int64' || meta.type === 'uint64') {
        const data = meta.type === 'int64' ? new BigInt64Array(n) : new BigUint64Array(n);
        for (let i = 0; i < n; i++) data[i] = BigInt(value());
        return new Tensor(meta.type, data, shape);
      }
      const Ctor = INT_ARRAYS[meta.type];
      if (!Ctor) throw new Error(`input '${meta.name}': type ${meta.type} is not supported by verify`);
      const data = new Ctor(n);
      for (let i = 0; i < n; i++) data[i] = value();
      return new Tensor(meta.type, data, shape);
    }
  }
}

/**
 * Seeded inputs for a session's inputMetadata ([{ name, isTensor, type, shape }]); `dims` sizes
 * symbolic dims by name. Returns { feeds, shapes: [{ name, type, dims }] }.
 */
export function makeInputs(Tensor, inputMetadata, { seed = DEFAULTS.seed, dims = {} } = {}) {
  const rand = mulberry32(seed);
  const feeds = {};
  const shapes = [];
  for (const meta of inputMetadata) {
    if (!meta.isTensor) throw new Error(`input '${meta.name}' is not a tensor: verify cannot generate it`);
    const shape = (meta.shape ?? []).map((d) => resolveDim(d, dims));
    feeds[meta.name] = makeTensor(Tensor, meta, shape, rand);
    shapes.push({ name: meta.name, type: meta.type, dims: shape });
  }
  return { feeds, shapes };
}

const FLOAT_TYPES = new Set(['float32', 'float64', 'float16']);

// float16 data is raw bits (Uint16Array) unless the browser has Float16Array.
function elements(t) {
  if (t.type === 'float16' && t.data instanceof Uint16Array) return Array.from(t.data, halfToNumber);
  return t.data;
}

function indexToCoord(index, dims) {
  const coord = new Array(dims.length).fill(0);
  for (let i = dims.length - 1; i >= 0; i--) {
    coord[i] = index % dims[i];
    index = Math.floor(index / dims[i]);
  }
  return coord;
}

/**
 * One output, original (`expected`) against optimized (`actual`), each a tensor or { type, dims,
 * data }: { name, type, dims, size, maxAbsDiff, maxRelDiff, mismatches, worst: {index, coord,
 * expected, actual} (the element farthest past the tolerance) or null, error }. Integer, bool and
 * string outputs must match exactly. Float outputs also get how close they are, as a quantized
 * model is judged: `cosine` of the two as vectors (NaN when either holds a NaN or an infinity),
 * `relRange` (maxAbsDiff over the range of the original's finite values) and, when the last axis
 * is longer than 1, `argmax` (the share of rows along it whose largest element is at the same
 * index: a classifier's or a language model's top-1).
 */
export function compareTensors(name, expected, actual, { rtol = DEFAULTS.rtol, atol = DEFAULTS.atol } = {}) {
  const res = {
    name,
    type: expected.type,
    dims: [...expected.dims],
    size: expected.data.length,
    maxAbsDiff: 0,
    maxRelDiff: 0,
    mismatches: 0,
    worst: null,
    error: null,
  };
  if (actual.type !== expected.type) {
    res.error = `type differs: original ${expected.type}, optimized ${actual.type}`;
    return res;
  }
  if (actual.dims.length !== expected.dims.length || actual.dims.some((d, i) => d !== expected.dims[i])) {
    res.error = `shape differs: original [${expected.dims}], optimized [${actual.dims}]`;
    return res;
  }
  const exact = !FLOAT_TYPES.has(expected.type);
  const a = elements(actual);
  const b = elements(expected);
  let worstScore = -1;
  let dot = 0;
  let nx = 0;
  let ny = 0;
  let lo = Infinity;
  let hi = -Infinity;
  let finite = true;
  for (let i = 0; i < b.length; i++) {
    let abs;
    let rel;
    let bad;
    const x = typeof a[i] === 'bigint' ? Number(a[i]) : a[i];
    const y = typeof b[i] === 'bigint' ? Number(b[i]) : b[i];
    if (!exact) {
      if (Number.isFinite(x) && Number.isFinite(y)) {
        dot += x * y;
        nx += x * x;
        ny += y * y;
      } else {
        finite = false;
      }
      if (y < lo) lo = y;
      if (y > hi) hi = y;
    }
    if (exact) {
      bad = a[i] !== b[i]; // bigint/int/bool/string: the raw values (no precision loss)
      abs = !bad
        ? 0
        : typeof x === 'number' && typeof y === 'number' && Number.isFinite(x - y)
          ? Math.abs(x - y)
          : Infinity;
      rel = !bad ? 0 : y ? abs / Math.abs(y) : Infinity;
    } else if (x === y || (Number.isNaN(x) && Number.isNaN(y))) {
      abs = 0;
      rel = 0;
      bad = false;
    } else if (!Number.isFinite(x) || !Number.isFinite(y)) {
      abs = Infinity; // NaN against a number, an infinity against a finite value or the other one
      rel = Infinity;
      bad = true;
    } else {
      abs = Math.abs(x - y);
      rel = y !== 0 ? abs / Math.abs(y) : Infinity;
      bad = !(abs <= atol + rtol * Math.abs(y));
    }
    if (abs > res.maxAbsDiff) res.maxAbsDiff = abs;
    if (rel > res.maxRelDiff) res.maxRelDiff = rel;
    if (bad) {
      res.mismatches++;
      const score = exact ? abs : abs - (atol + rtol * Math.abs(y)); // the excess over the tolerance
      if (score > worstScore || Number.isNaN(score)) {
        worstScore = score;
        res.worst = { index: i, coord: indexToCoord(i, res.dims), expected: y, actual: x };
      }
    }
  }
  if (exact) return res;
  res.cosine = finite ? dot / Math.sqrt(nx * ny || 1) : NaN;
  // A constant output (range 0) is measured against its magnitude.
  const range = hi - lo || Math.max(Math.abs(hi), 1);
  res.relRange = res.maxAbsDiff / (Number.isFinite(range) ? range : 1);
  const last = res.dims.at(-1) ?? 1;
  if (last > 1 && b.length) {
    let agree = 0;
    for (let r = 0; r < b.length; r += last) {
      let bx = r;
      let by = r;
      for (let j = r + 1; j < r + last; j++) {
        if (b[j] > b[bx]) bx = j;
        if (a[j] > a[by]) by = j;
      }
      agree += bx === by;
    }
    res.argmax = agree / (b.length / last);
  }
  return res;
}

// --- runs -----------------------------------------------------------------------------------------
// `ort` is the caller's ONNX Runtime module (onnxruntime-node, or onnxruntime-web: its wasm32 heap
// holds at most 4 GiB, the model and the session's copy of its weights). One session at a time:
// each is released before the next is made, and the reference keeps only its outputs.

const isBlob = (b) => typeof Blob !== 'undefined' && b instanceof Blob;
const bytesOf = async (b) =>
  isBlob(b) ? new Uint8Array(await b.arrayBuffer()) : b instanceof ArrayBuffer ? new Uint8Array(b) : b;
const sizeOf = (b) => (isBlob(b) ? b.size : b.byteLength);

/** 'onnxruntime-web 1.30.0' */
export function runtimeName(ort) {
  const v = ort.env?.versions ?? {};
  return v.web ? `onnxruntime-web ${v.web}` : v.node ? `onnxruntime-node ${v.node}` : 'ONNX Runtime';
}

/**
 * A model ready for createSession: { path } as given (node: the runtime reads its external data
 * beside it), or { bytes, externalData: { location: Uint8Array | Blob } } read into memory as
 * the runtime takes them ({ bytes, external: [{ path, data }], size }).
 */
export async function readModel({ path, bytes, externalData = {} }) {
  if (path !== undefined) return { path: String(path), external: [] };
  const external = [];
  let size = sizeOf(bytes);
  for (const [location, data] of Object.entries(externalData)) {
    external.push({ path: location, data: await bytesOf(data) });
    size += sizeOf(data);
  }
  return { bytes: await bytesOf(bytes), external, size };
}

/** An InferenceSession of a readModel() result; `options` are the runtime's session options. */
export function createSession(ort, { path, bytes, external }, options = {}) {
  return ort.InferenceSession.create(path ?? bytes, {
    logSeverityLevel: 3,
    ...options,
    ...(external.length ? { externalData: external } : {}),
  });
}

// Opens `model` with graph optimizations off (what the file computes, not the runtime's rewrite
// of it), naming the runtime and, past 2 GiB in onnxruntime-web, its limit when that fails.
async function open(ort, model, sessionOptions) {
  const read = await readModel(model);
  try {
    return await createSession(ort, read, { graphOptimizationLevel: 'disabled', ...sessionOptions });
  } catch (e) {
    const gib = (read.size ?? 0) / 2 ** 30;
    const why =
      ort.env?.versions?.web && gib > 2
        ? ` (${gib.toFixed(2)} GiB with its weights: onnxruntime-web runs in 32-bit WebAssembly, whose heap holds at most 4 GiB)`
        : '';
    throw new Error(`cannot be loaded in ${runtimeName(ort)}: ${e?.message ?? e}${why}`, { cause: e });
  }
}

async function run(session, feeds) {
  try {
    return await session.run(feeds);
  } catch (e) {
    throw new Error(`failed to run: ${e?.message ?? e}`, { cause: e });
  }
}

/**
 * Runs `model` (readModel's argument) once on seeded inputs made from its inputMetadata and keeps
 * its outputs, for accuracyOf: { seed, inputs: [{ name, type, dims }], feeds, outputNames, outputs }.
 * Throws an Error saying why the model cannot be loaded or run.
 */
export async function runReference(ort, model, { seed = DEFAULTS.seed, dims = {}, sessionOptions } = {}) {
  const session = await open(ort, model, sessionOptions);
  try {
    const { feeds, shapes } = makeInputs(ort.Tensor, session.inputMetadata, { seed, dims });
    const outputs = await run(session, feeds);
    return { seed, inputs: shapes, feeds, outputNames: [...session.outputNames], outputs };
  } finally {
    await session.release();
  }
}

/**
 * `model` on the reference's inputs against the reference's outputs: { seed, inputs, outputs: [{
 * name, type, dims, maxAbsDiff, and for floats relRange, cosine, argmax; for the others
 * mismatches; error }] }. Throws an Error saying why the model cannot be loaded or run.
 */
export async function accuracyOf(ort, reference, model, { sessionOptions } = {}) {
  const session = await open(ort, model, sessionOptions);
  let got;
  try {
    const extra = session.inputNames.filter((n) => !Object.hasOwn(reference.feeds, n));
    if (extra.length) throw new Error(`it has inputs the original does not: ${extra.join(', ')}`);
    got = await run(session, Object.fromEntries(session.inputNames.map((n) => [n, reference.feeds[n]])));
  } finally {
    await session.release();
  }
  const outputs = reference.outputNames.map((name) => {
    if (!got[name]) return { name, error: "missing from this model's outputs" };
    const c = compareTensors(name, reference.outputs[name], got[name]);
    const o = { name, type: c.type, dims: c.dims, maxAbsDiff: c.maxAbsDiff };
    if ('cosine' in c)
      Object.assign(o, { relRange: c.relRange, cosine: c.cosine }, 'argmax' in c && { argmax: c.argmax });
    else o.mismatches = c.mismatches;
    if (c.error) o.error = c.error;
    return o;
  });
  return { seed: reference.seed, inputs: reference.inputs, outputs };
}

/**
 * A model's accuracy (accuracyOf's result, or { error }) in one line: { error } when the model or
 * an output could not be compared, else the worst over its float outputs of each figure:
 * { cosine (lowest), relRange (largest), argmax (lowest) }, each undefined when no output has it.
 */
export function worstOutput(acc) {
  if (acc.error) return { error: acc.error };
  const bad = acc.outputs.filter((o) => o.error).map((o) => `output '${o.name}': ${o.error}`);
  if (bad.length) return { error: bad.join('; ') };
  const worst = (key, pick) => {
    const values = acc.outputs.filter((o) => o[key] !== undefined).map((o) => o[key]);
    return values.length ? pick(...values) : undefined;
  };
  return {
    cosine: worst('cosine', Math.min),
    relRange: worst('relRange', Math.max),
    argmax: worst('argmax', Math.min),
  };
}

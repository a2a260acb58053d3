// Verify, the runtime-free part: seeded inputs and output comparison. The rules are those of the
// ONNX Runtime oracle the tests use (tests/node/oracle.mjs): mulberry32, symbolic dims sized by
// name, floats in [-1, 1), masks all ones, integer ids in [0, 10), token-type ids zero; outputs
// pass when |optimized - original| <= atol + rtol * |original| for every element. It takes the
// Tensor class as a parameter, so the page (no runtime) and the verify worker share it.

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

/** 'float32[batch,3,224,224]' -> { type: 'float32', dims: ['batch', 3, 224, 224] }. */
export function parseValueType(text) {
  const m = /^([^[\]]+)(?:\[(.*)\])?$/.exec(text ?? '');
  if (!m) return { type: text, dims: [] };
  const dims = m[2] ? m[2].split(',').map((d) => d.trim()).map((d) => (/^\d+$/.test(d) ? Number(d) : d)) : [];
  return { type: m[1], dims };
}

/** The symbolic dim names of a model's inputs, in order of first use. */
export function symbolicDims(inputs) {
  const names = [];
  for (const v of inputs) {
    for (const d of parseValueType(v.type).dims) if (typeof d === 'string' && d && !names.includes(d)) names.push(d);
  }
  return names;
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

const INT_ARRAYS = { int32: Int32Array, uint32: Uint32Array, int16: Int16Array, uint16: Uint16Array,
  int8: Int8Array, uint8: Uint8Array };

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
      return new Tensor('string', Array.from({ length: n }, (_, i) => `s${i % 10}`), shape);
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
 * One output, original (`expected`) against optimized (`actual`): { name, type, dims, size,
 * maxAbsDiff, maxRelDiff, mismatches, worst: {index, coord, expected, actual} (the element
 * farthest past the tolerance) or null, error }. Integer, bool and string outputs must match
 * exactly. The one comparison of the page, its worker and the tests' oracle.
 */
export function compareTensors(name, expected, actual, { rtol = DEFAULTS.rtol, atol = DEFAULTS.atol } = {}) {
  const res = { name, type: expected.type, dims: [...expected.dims], size: expected.size,
    maxAbsDiff: 0, maxRelDiff: 0, mismatches: 0, worst: null, error: null };
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
  for (let i = 0; i < b.length; i++) {
    let abs;
    let rel;
    let bad;
    const x = typeof a[i] === 'bigint' ? Number(a[i]) : a[i];
    const y = typeof b[i] === 'bigint' ? Number(b[i]) : b[i];
    if (exact) {
      bad = a[i] !== b[i];   // bigint/int/bool/string: the raw values (no precision loss)
      abs = !bad ? 0 : typeof x === 'number' && typeof y === 'number' && Number.isFinite(x - y) ? Math.abs(x - y) : Infinity;
      rel = !bad ? 0 : y ? abs / Math.abs(y) : Infinity;
    } else if (x === y || (Number.isNaN(x) && Number.isNaN(y))) {
      abs = 0;
      rel = 0;
      bad = false;
    } else if (!Number.isFinite(x) || !Number.isFinite(y)) {
      abs = Infinity;   // NaN against a number, an infinity against a finite value or the other one
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
      const score = exact ? abs : abs - (atol + rtol * Math.abs(y));   // the excess over the tolerance
      if (score > worstScore || Number.isNaN(score)) {
        worstScore = score;
        res.worst = { index: i, coord: indexToCoord(i, res.dims), expected: y, actual: x };
      }
    }
  }
  return res;
}

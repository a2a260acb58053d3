// Random VALID ONNX models from a seed, for the differential fuzzer (run.mjs).
//
//   import { generate } from './gen.mjs';
//   const spec = generate(seed);            // same seed, same model, on any machine
//   const bytes = buildModel(spec);         // tests/node/onnx-builder.mjs
//
// A spec is what buildModel takes plus what the runner and the minimizer need: `types` (every
// value's dtype and concrete shape), `dims` (sizes of symbolic input dims), `ops` (op types used)
// `discontinuous` (a float value feeds a step function: floor, a comparison, a cast to an
// integer; float16 results may then legitimately differ, so that mode is not compared) and
// `random` (a random op: the original is run more often to tell its random outputs).
//
// Every value's dtype and shape are tracked while generating, and each op is emitted only in a
// form its schema at the chosen opset accepts (attributes before inputs, axis ranges, optional
// inputs...), so ONNX Runtime loads and runs nearly every model: a model it refuses is a wasted
// sample, counted as skipped. Integer divisors are never zero (ORT would trap) and floats stay
// small (no Log, Sqrt of |x|), so NaN handling, which the spec leaves open, is not compared.
// No tensor is empty, and a few forms where ORT's load-time shape inference and its kernels
// disagree are avoided (each says why): the reference must be right for a difference to count.
// The opset goes up to 26, the newest ONNX Runtime 1.30 loads (onnxfold knows 28).
//
// 46 emitters (EMITTERS; about 105 op types in all) cover elementwise ops with broadcasting,
// integer Div/Mod, comparisons and Where, casts and their round trips, shape ops and their
// chains, Shape -> Gather -> Reshape, Conv with BatchNormalization/Mul/Add after it, MatMul + Add,
// Gemm, pooling, Resize, reductions, normalizations, QDQ, If/Loop/Scan bodies and a local
// function with an attribute reference; weights are initializers, Constant nodes, or
// initializers that are also graph inputs, and a fifth of the models keep their initializers in
// an external data file (spec.external, externalOf; campaign.mjs modelFiles writes it).

import { mulberry32 } from '../../node/oracle.mjs';
import { toHalfBits } from 'onnxfold/accuracy';

export const MIN_OPSET = 7;
export const MAX_OPSET = 26;

const TYPED = {
  float32: Float32Array, float64: Float64Array, float16: Uint16Array, int32: Int32Array,
  int64: BigInt64Array, int8: Int8Array, uint8: Uint8Array, bool: Uint8Array,
};
const FLOAT = new Set(['float32', 'float64', 'float16']);
const INT = new Set(['int32', 'int64', 'int8', 'uint8']);

const numel = (shape) => shape.reduce((a, b) => a * b, 1);

// Multidirectional (numpy) broadcasting; null when the shapes do not broadcast.
export function broadcast(a, b) {
  const r = Math.max(a.length, b.length);
  const out = [];
  for (let i = 0; i < r; i++) {
    const x = a[a.length - r + i] ?? 1;
    const y = b[b.length - r + i] ?? 1;
    if (x !== y && x !== 1 && y !== 1) return null;
    out.push(x === 1 ? y : x);
  }
  return out;
}

class Gen {
  constructor(seed, { maxOps, without = [] } = {}) {
    this.rand = mulberry32(seed);
    this.without = new Set(without);
    this.seed = seed;
    this.opset = this.int(MIN_OPSET, MAX_OPSET);
    this.maxOps = maxOps ?? this.int(2, 16);
    this.values = [];          // {name, type, shape, konst, data?}
    this.inputs = [];
    this.initializers = [];
    this.nodes = [];
    this.types = {};
    this.ops = new Set();
    this.discontinuous = false;
    this.random = false;       // a random op (training-mode Dropout) is in the model
    this.counter = 0;
    this.hidden = new Set();   // values only their one reader may see
  }

  // ---- randomness
  int(lo, hi) { return lo + Math.floor(this.rand() * (hi - lo + 1)); }   // inclusive
  chance(p) { return this.rand() < p; }
  pick(arr) { return arr[Math.floor(this.rand() * arr.length)]; }
  shuffle(arr) {
    const a = [...arr];
    for (let i = a.length - 1; i > 0; i--) { const j = this.int(0, i); [a[i], a[j]] = [a[j], a[i]]; }
    return a;
  }
  randShape(minRank = 0, maxRank = 4) {
    return Array.from({ length: this.int(minRank, maxRank) }, () => this.int(1, 4));
  }

  // ---- values
  name(prefix) { return `${prefix}${this.counter++}`; }
  add(name, type, shape, konst, data) {
    const v = { name, type, shape: [...shape], konst, data };
    // An empty tensor (the axes of a Squeeze of none, the shape of a scalar) is never an
    // operand: ORT's kernels disagree on empty tensors (see slice), which is noise.
    if (numel(shape) > 0) this.values.push(v);
    this.types[name] = { type, shape: [...shape] };
    return v;
  }
  // A pool value matching `pred`, biased to recent ones so chains grow deep.
  find(pred) {
    const c = this.values.filter(pred);
    if (!c.length) return null;
    return this.chance(0.6) ? c[c.length - 1 - Math.floor(this.rand() * Math.min(3, c.length))] : this.pick(c);
  }
  floatValue(pred = () => true) {
    return this.find((v) => v.type === 'float32' && pred(v)) ?? this.input('float32', this.randShape(1, 4));
  }

  randData(type, n, { lo = -1, hi = 1, nonzero = false } = {}) {
    const Ctor = TYPED[type];
    const out = new Ctor(n);
    for (let i = 0; i < n; i++) {
      if (type === 'bool') { out[i] = this.chance(0.5) ? 1 : 0; continue; }
      if (FLOAT.has(type)) {
        let x = lo + this.rand() * (hi - lo);
        if (nonzero && Math.abs(x) < 0.25) x = x < 0 ? -0.5 : 0.5;
        out[i] = type === 'float16' ? toHalfBits(x) : x;
        continue;
      }
      let x = this.int(Math.ceil(lo), Math.floor(hi));
      if (type === 'uint8' && x < 0) x = -x;
      if (nonzero && x === 0) x = 1;
      out[i] = type === 'int64' ? BigInt(x) : x;
    }
    return out;
  }

  // A graph input; the first dim is sometimes symbolic ('batch', which the oracle sizes 2).
  input(type, shape, { symbolic = this.chance(0.25) } = {}) {
    const name = this.name('in');
    const declared = [...shape];
    if (symbolic && shape.length && shape[0] === 2) declared[0] = 'batch';
    this.inputs.push({ name, type, shape: declared });
    return this.add(name, type, shape, false);
  }
  // A constant: an initializer or (opset >= 9 for non-floats) a Constant node.
  konst(type, shape, data, { forceInit = false } = {}) {
    // Integers in [-8, 8] (signs matter to Div, Mod, casts); floats in [-1, 1) or now and then
    // [-4, 4), so casts to integers, Floor and Round see more than 0 and -1.
    const wide = INT.has(type) ? { lo: type === 'uint8' ? 0 : -8, hi: 8 } : this.chance(0.2) ? { lo: -4, hi: 4 } : {};
    data ??= this.randData(type, numel(shape), wide);
    const name = this.name('c');
    const asNode = !forceInit && this.chance(0.3) && (this.opset >= 9 || type === 'float32');
    if (asNode) {
      this.nodes.push({ op: 'Constant', inputs: [], outputs: [name], attrs: { value: { dims: shape, type, data } } });
      this.ops.add('Constant');
    } else {
      this.initializers.push({ name, type, dims: shape, data });
    }
    return this.add(name, type, shape, true, data);
  }
  int64s(list, opts) { return this.konst('int64', [list.length], BigInt64Array.from(list.map(BigInt)), opts); }
  scalar(type, x) {
    const d = new TYPED[type](1);
    d[0] = type === 'int64' ? BigInt(x) : type === 'float16' ? toHalfBits(x) : type === 'bool' ? Number(x) : x;
    return this.konst(type, [], d);
  }

  node(op, inputs, outs, attrs = {}) {
    const outputs = outs.map(() => this.name('v'));
    const node = { op, inputs: inputs.map((v) => (v === '' ? '' : v.name ?? v)), outputs, attrs };
    this.nodes.push(node);
    this.ops.add(op);
    return outs.map(([type, shape], i) => this.add(outputs[i], type, shape, false));
  }
  un(op, x, attrs) { return this.node(op, [x], [[x.type, x.shape]], attrs)[0]; }

  // An axis in [-r, r-1]; negative only from opset 11 (most ops gained it there).
  axis(r, { allowNeg = this.opset >= 11 } = {}) {
    const a = this.int(0, r - 1);
    return allowNeg && this.chance(0.3) ? a - r : a;
  }
  // An operand broadcastable with x: a pool value or a new constant/input.
  operandFor(x, { sameShape = false } = {}) {
    if (!sameShape && this.chance(0.45)) {
      const v = this.find((v) => v.type === x.type && v !== x && broadcast(v.shape, x.shape));
      if (v) return v;
    }
    if (sameShape) {
      const v = this.find((v) => v.type === x.type && v !== x && v.shape.join() === x.shape.join());
      if (v && this.chance(0.5)) return v;
    }
    let shape = [...x.shape];
    if (!sameShape) {
      shape = shape.slice(this.int(0, shape.length)).map((d) => (this.chance(0.3) ? 1 : d));
      if (this.chance(0.1)) shape = [1, ...shape];
    }
    return this.chance(0.8) ? this.konst(x.type, shape) : this.input(x.type, shape, { symbolic: false });
  }
}


const FN_DOMAIN = 'fuzz.local';

// A chain of 1-3 float ops inside a subgraph, starting at `x` (a body input or an outer value);
// constants are Constant nodes of the body. Returns {nodes, out}: same shape as x.
function bodyChain(g, x) {
  const nodes = [];
  let cur = x;
  for (let k = g.int(1, 3); k > 0; k--) {
    const out = g.name('b');
    if (g.chance(0.5)) {
      nodes.push({ op: g.pick(['Relu', 'Neg', 'Tanh', 'Sigmoid', 'Abs']), inputs: [cur], outputs: [out] });
    } else {
      const c = g.name('bk');
      nodes.push({ op: 'Constant', inputs: [], outputs: [c], attrs: { value: { dims: [], type: 'float32', data: Float32Array.of(g.pick([0.5, 2, -1, 1.5])) } } },
        { op: g.pick(['Add', 'Mul', 'Sub']), inputs: [cur, c], outputs: [out] });
    }
    cur = out;
  }
  // Node names are per graph (the builder's Op_index), so a body's names repeat the main
  // graph's, as exporters' do; without 'shared-node-names' they are unique over the model.
  if (g.without.has('shared-node-names')) for (const n of nodes) n.name = `${n.outputs[0]}_node`;
  return { nodes, out: cur };
}

// ---------------------------------------------------------------------------------- emitters
// Each takes the generator and emits one op (plus the constants it needs); returns false when it
// does not apply. `min` is the first opset the form exists in.

const UNARY = [
  ['Relu', 7], ['Sigmoid', 7], ['Tanh', 7], ['Abs', 7], ['Neg', 7], ['Exp', 7], ['Floor', 7, true],
  ['Ceil', 7, true], ['Sqrt', 7], ['Reciprocal', 7], ['Sin', 7], ['Cos', 7], ['Erf', 9], ['Sign', 9, true],
  ['Round', 11, true], ['Softplus', 7], ['Softsign', 7], ['LeakyRelu', 7], ['Elu', 7], ['Selu', 7],
  ['HardSigmoid', 7], ['Gelu', 20], ['HardSwish', 14], ['Mish', 18], ['Celu', 12], ['ThresholdedRelu', 10],
];

const emitters = {
  unary(g) {
    const [op, , step] = g.pick(UNARY.filter(([, min]) => g.opset >= min));
    let x = g.floatValue();
    if (op === 'Sqrt') x = g.un('Abs', x);                 // no NaN
    if (op === 'Reciprocal') x = g.node('Add', [g.un('Abs', x), g.scalar('float32', 0.5)], [[x.type, x.shape]])[0];
    if (op === 'Exp') x = g.un('Tanh', x);                  // bounded: no overflow
    const attrs = {};
    if (['LeakyRelu', 'Elu', 'Celu'].includes(op) && g.chance(0.6)) attrs.alpha = { float: g.pick([0.1, 0.5, 2]) };
    if (op === 'HardSigmoid' && g.chance(0.5)) Object.assign(attrs, { alpha: 0.3, beta: 0.4 });
    if (op === 'ThresholdedRelu' && g.chance(0.5)) attrs.alpha = 0.2;
    if (op === 'Gelu' && g.chance(0.5)) attrs.approximate = 'tanh';
    if (step) g.discontinuous = true;
    g.un(op, x, attrs);
    return true;
  },

  binary(g) {
    const op = g.pick(['Add', 'Sub', 'Mul', 'Div', 'Max', 'Min', 'Pow', 'Add', 'Mul']);
    let x = g.floatValue();
    const sameShape = ['Max', 'Min'].includes(op) && g.opset < 8;   // Max-6/Min-6 do not broadcast
    let y = g.operandFor(x, { sameShape });
    if (op === 'Div') y = g.node('Add', [g.un('Abs', y), g.scalar('float32', 0.5)], [[y.type, y.shape]])[0];
    if (op === 'Pow') {
      x = g.node('Add', [g.un('Abs', x), g.scalar('float32', 0.5)], [[x.type, x.shape]])[0];
      y = g.konst('float32', [], Float32Array.of(g.pick([0.5, 2, 3, -1, 1.5])));
    }
    const [a, b] = g.chance(0.5) || op === 'Pow' || op === 'Div' ? [x, y] : [y, x];
    const shape = broadcast(a.shape, b.shape);
    g.node(op, [a, b], [[x.type, shape]]);
    return true;
  },

  // Variadic Sum/Mean/Max/Min (broadcasting from opset 8).
  variadic(g) {
    if (g.opset < 8) return false;
    const x = g.floatValue();
    let shape = x.shape;
    const ys = [];
    for (let k = g.int(1, 3); k > 0; k--) {
      let y = g.operandFor(x);
      if (!broadcast(shape, y.shape)) y = g.konst('float32', x.shape);
      ys.push(y);
      shape = broadcast(shape, y.shape);
    }
    g.node(g.pick(['Sum', 'Mean', 'Max', 'Min']), [x, ...ys], [['float32', shape]]);
    return true;
  },

  integer(g) {
    let x = g.find((v) => INT.has(v.type) && v.type !== 'int8' && v.type !== 'uint8');
    if (!x) x = g.chance(0.5) ? g.input('int64', g.randShape(1, 3)) : g.konst(g.pick(['int64', 'int32']), g.randShape(0, 3), null);
    const ops = ['Add', 'Sub', 'Mul', 'Div'];
    if (g.opset >= 10) ops.push('Mod');
    if (g.opset >= 12) ops.push('Max', 'Min');
    const op = g.pick(ops);
    let y;
    if (op === 'Div' || op === 'Mod') {
      // Never zero: a constant without zeros, or max(v, 1) of another value.
      if (g.opset >= 12 && g.chance(0.4)) {
        const v = g.operandFor(x);
        y = g.node('Max', [v, g.konst(x.type, [], g.randData(x.type, 1, { lo: 1, hi: 3 }))], [[x.type, v.shape]])[0];
      } else {
        const s = x.shape.slice(g.int(0, x.shape.length));
        y = g.konst(x.type, s, g.randData(x.type, numel(s), { lo: -5, hi: 5, nonzero: true }));
      }
    } else {
      y = g.operandFor(x);
    }
    const [a, b] = op === 'Div' || op === 'Mod' || g.chance(0.5) ? [x, y] : [y, x];
    g.node(op, [a, b], [[x.type, broadcast(a.shape, b.shape)]]);
    return true;
  },

  floatMod(g) {
    if (g.opset < 10) return false;
    const x = g.floatValue();
    const s = x.shape.slice(g.int(0, x.shape.length));
    const y = g.konst('float32', s, g.randData('float32', numel(s), { nonzero: true }));
    g.discontinuous = true;
    g.node('Mod', [x, y], [['float32', broadcast(x.shape, s)]], { fmod: 1 });
    return true;
  },

  compareWhere(g) {
    if (g.opset < 9) return false;
    const x = g.floatValue();
    const y = g.operandFor(x);
    const op = g.pick(g.opset >= 11 ? ['Less', 'Greater', 'Equal', 'LessOrEqual', 'GreaterOrEqual'].filter((o) => g.opset >= 12 || !o.includes('OrEqual')) : ['Less', 'Greater']);
    g.discontinuous = true;
    let cond = g.node(op, [x, y], [['bool', broadcast(x.shape, y.shape)]])[0];
    if (g.chance(0.3)) cond = g.un('Not', cond);
    if (g.chance(0.2)) {
      const other = g.node('Less', [y, x], [['bool', cond.shape]])[0];
      cond = g.node(g.pick(['And', 'Or', 'Xor']), [cond, other], [['bool', cond.shape]])[0];
    }
    // Each operand broadcasts with x, not necessarily with each other: fall back to x's shape.
    const fits = (v, shape) => broadcast(v.shape, shape);
    let a = g.operandFor(x);
    if (!fits(a, cond.shape)) a = g.konst('float32', x.shape);
    let b = g.operandFor(x);
    if (!fits(b, broadcast(cond.shape, a.shape))) b = g.konst('float32', x.shape);
    g.node('Where', [cond, a, b], [['float32', broadcast(broadcast(cond.shape, a.shape), b.shape)]]);
    return true;
  },

  cast(g) {
    const x = g.find((v) => v.type !== 'bool') ?? g.floatValue();
    const chain = {
      float32: ['float64', 'float16', 'int32', 'int64', 'bool'],
      int64: ['int32', 'float32', 'int64'],
      int32: ['int64', 'float32'],
      float64: ['float32'],
      float16: ['float32'],
      int8: ['int64', 'float32'],
      uint8: ['int64', 'float32'],
    }[x.type];
    const to = g.pick(chain);
    const DT = { float32: 1, uint8: 2, int8: 3, int32: 6, int64: 7, bool: 9, float16: 10, float64: 11 };
    if (FLOAT.has(x.type) && !FLOAT.has(to)) g.discontinuous = true;
    const [y] = g.node('Cast', [x], [[to, x.shape]], { to: DT[to] });
    if (g.chance(0.6)) {  // round trip: Cast patterns (int64 -> int32 -> int64, float -> double -> float)
      g.node('Cast', [y], [[x.type, x.shape]], { to: DT[x.type] });
    }
    return true;
  },

  identity(g) {
    const x = g.find(() => true) ?? g.floatValue();
    g.un('Identity', x);
    return true;
  },

  dropout(g) {
    const x = g.floatValue();
    // The mask of an inference-mode Dropout is all true in the ONNX reference; ORT gives all
    // false before opset 12 (its Dropout-7/10 kernel), so only from 12 is the mask compared.
    const mask = g.opset >= 12 && g.chance(0.3);
    const outs = [['float32', x.shape]];
    if (mask) outs.push(['bool', x.shape]);
    if (g.opset < 12) {
      g.node('Dropout', [x], outs, g.chance(0.5) ? { ratio: g.pick([0.1, 0.5]) } : {});
      return true;
    }
    const inputs = [x];
    const attrs = g.chance(0.3) ? { seed: g.int(0, 100) } : {};
    if (g.chance(0.6)) {
      // A random mask only on 16 elements or more, so that runs of the original surely differ.
      const big = numel(x.shape) >= 16;
      const ratio = big && g.chance(0.2) ? '' : g.pick(big ? [0, 0.25, 0.5] : [0]);
      inputs.push(ratio === '' ? '' : g.scalar('float32', ratio));
      if (g.chance(0.5)) {
        const training = g.chance(0.3);
        inputs.push(g.scalar('bool', training));
        if (training && ratio !== 0) g.random = true;
      }
    }
    g.node('Dropout', inputs, outs, attrs);
    return true;
  },

  clip(g) {
    const x = g.floatValue();
    const lo = g.pick([-0.5, -0.2, 0]);
    const hi = g.pick([0.3, 0.6, 6]);
    if (g.opset < 11) {
      const attrs = {};
      if (g.chance(0.7)) attrs.min = { float: lo };
      if (g.chance(0.7)) attrs.max = { float: hi };
      g.un('Clip', x, attrs);
      return true;
    }
    const inputs = [x];
    if (g.chance(0.8)) inputs.push(g.chance(0.2) ? '' : g.scalar('float32', lo));
    if (g.chance(0.7)) inputs.push(g.scalar('float32', hi));
    g.node('Clip', inputs, [['float32', x.shape]]);
    return true;
  },

  softmax(g) {
    const x = g.floatValue((v) => v.shape.length >= 1);
    const r = x.shape.length;
    const op = g.pick(['Softmax', 'LogSoftmax', 'Softmax', 'Hardmax']);
    if (op === 'Hardmax') g.discontinuous = true;
    const attrs = g.chance(0.7) ? { axis: g.axis(r) } : {};   // default: 1 before opset 13, -1 after
    if (!('axis' in attrs) && g.opset < 13 && r < 2) return false;
    g.un(op, x, attrs);
    return true;
  },

  transpose(g) {
    const x = g.find((v) => v.shape.length >= 2) ?? g.floatValue((v) => v.shape.length >= 2);
    if (x.shape.length < 2) return false;
    let cur = x;
    for (let k = g.chance(0.4) ? 2 : 1; k > 0; k--) {
      const r = cur.shape.length;
      const perm = g.chance(0.2) ? null : g.shuffle([...Array(r).keys()]);
      const p = perm ?? [...Array(r).keys()].reverse();
      cur = g.node('Transpose', [cur], [[cur.type, p.map((i) => cur.shape[i])]], perm ? { perm } : {})[0];
    }
    return true;
  },

  reshape(g) {
    const x = g.find((v) => v.shape.length >= 1) ?? g.floatValue();
    let cur = x;
    for (let k = g.chance(0.4) ? 2 : 1; k > 0; k--) {
      const n = numel(cur.shape);
      if (n === 0) return false;
      // A random factorization of n.
      const dims = [];
      let rest = n;
      const rank = g.int(1, 4);
      for (let i = 0; i < rank - 1; i++) {
        const divs = [...Array(rest).keys()].map((d) => d + 1).filter((d) => rest % d === 0 && d <= 6);
        const d = g.pick(divs);
        dims.push(d);
        rest /= d;
      }
      dims.push(rest);
      const spec = dims.map((d, i) => (i < cur.shape.length && cur.shape[i] === d && g.chance(0.3) ? 0 : d));
      if (g.chance(0.4)) spec[g.int(0, spec.length - 1)] = -1;
      const attrs = {};
      if (g.opset >= 14 && !spec.includes(0) && g.chance(0.3)) attrs.allowzero = 1;
      cur = g.node('Reshape', [cur, g.int64s(spec)], [[cur.type, dims]], attrs)[0];
    }
    return true;
  },

  flatten(g) {
    const x = g.floatValue((v) => v.shape.length >= 1);
    const r = x.shape.length;
    let axis = g.int(0, r);
    if (g.opset >= 11 && g.chance(0.3) && axis > 0) axis -= r;
    const a = axis < 0 ? axis + r : axis;
    g.node('Flatten', [x], [[x.type, [numel(x.shape.slice(0, a)), numel(x.shape.slice(a))]]], { axis });
    return true;
  },

  squeezeUnsqueeze(g) {
    let x = g.find(() => true) ?? g.floatValue();
    // Before opset 11 axes are sorted: ORT's shape inference of Squeeze-1/Unsqueeze-1 takes
    // them in the order given, its kernel sorted (noise, not findings).
    const axesArg = (axes) => {
      const list = g.opset < 11 ? [...axes].sort((a, b) => a - b) : axes;
      return g.opset >= 13 ? { inputs: [g.int64s(list)], attrs: {} } : { inputs: [], attrs: { axes: list } };
    };
    let ones = x.shape.map((d, i) => (d === 1 ? i : -1)).filter((i) => i >= 0);
    if (!ones.length || g.chance(0.5)) {
      // Unsqueeze at 1-2 positions of the output's rank.
      const outRank = x.shape.length + g.int(1, 2);
      const axes = g.shuffle([...Array(outRank).keys()]).slice(0, outRank - x.shape.length).sort((a, b) => a - b);
      const shape = [];
      for (let i = 0, j = 0; i < outRank; i++) shape.push(axes.includes(i) ? 1 : x.shape[j++]);
      const signed = axes.map((a) => (g.opset >= 11 && g.chance(0.3) ? a - outRank : a));
      const { inputs, attrs } = axesArg(g.shuffle(signed));
      x = g.node('Unsqueeze', [x, ...inputs], [[x.type, shape]], attrs)[0];
      ones = axes;
      if (g.chance(0.4)) return true;
    }
    const drop = g.chance(0.2) ? ones : g.shuffle(ones).slice(0, g.int(1, ones.length));
    const shape = x.shape.filter((_, i) => !drop.includes(i));
    if (drop === ones && ones.length === x.shape.filter((d) => d === 1).length && g.chance(0.5)) {
      g.node('Squeeze', [x], [[x.type, shape]]);     // no axes: every 1
      return true;
    }
    const signed = drop.map((a) => (g.opset >= 11 && g.chance(0.3) ? a - x.shape.length : a));
    const { inputs, attrs } = axesArg(signed);
    g.node('Squeeze', [x, ...inputs], [[x.type, shape]], attrs);
    return true;
  },

  expand(g) {
    if (g.opset < 8) return false;
    const x = g.find(() => true) ?? g.floatValue();
    let target = x.shape.map((d) => (d === 1 && g.chance(0.5) ? g.int(1, 3) : g.chance(0.2) ? 1 : d));
    if (g.chance(0.3)) target = [g.int(1, 3), ...target];
    if (numel(broadcast(x.shape, target)) > 512) return false;
    g.node('Expand', [x, g.int64s(target)], [[x.type, broadcast(x.shape, target)]]);
    return true;
  },

  tile(g) {
    const x = g.find((v) => v.shape.length >= 1) ?? g.floatValue();
    const reps = x.shape.map(() => g.int(1, 2));
    if (numel(x.shape) * numel(reps) > 512) return false;
    g.node('Tile', [x, g.int64s(reps)], [[x.type, x.shape.map((d, i) => d * reps[i])]]);
    return true;
  },

  concat(g) {
    const x = g.find((v) => v.shape.length >= 1) ?? g.floatValue();
    const r = x.shape.length;
    const axis = g.axis(r);
    const a = axis < 0 ? axis + r : axis;
    const parts = [x];
    for (let k = g.int(1, 3); k > 0; k--) {
      const same = g.find((v) => v.type === x.type && v.shape.length === r && v.shape.every((d, i) => i === a || d === x.shape[i]));
      if (same && g.chance(0.5)) { parts.push(same); continue; }
      const s = [...x.shape];
      s[a] = g.int(1, 3);
      parts.push(g.konst(x.type, s));
    }
    const shape = [...x.shape];
    shape[a] = parts.reduce((t, p) => t + p.shape[a], 0);
    g.node('Concat', g.shuffle(parts), [[x.type, shape]], { axis });
    return true;
  },

  split(g) {
    const x = g.find((v) => v.shape.some((d) => d >= 2)) ?? g.floatValue((v) => v.shape.some((d) => d >= 2));
    const cand = x.shape.map((d, i) => (d >= 2 ? i : -1)).filter((i) => i >= 0);
    if (!cand.length) return false;
    const a = g.pick(cand);
    const d = x.shape[a];
    const r = x.shape.length;
    const axis = g.opset >= 11 && g.chance(0.3) ? a - r : a;
    const attrs = { axis };
    let sizes;
    const inputs = [x];
    if (g.opset >= 18 && g.chance(0.3)) {
      const n = g.int(2, Math.min(3, d));
      const chunk = Math.ceil(d / n);
      sizes = [];
      for (let left = d; left > 0; left -= chunk) sizes.push(Math.min(chunk, left));
      if (sizes.length !== n) return false;
      attrs.num_outputs = n;
    } else {
      const first = g.int(1, d - 1);
      sizes = [first, d - first];
      const equal = first * 2 === d;
      if (!(equal && g.chance(0.5) && g.opset < 18)) {   // from 18, no sizes needs num_outputs
        if (g.opset >= 13) inputs.push(g.int64s(sizes));
        else attrs.split = sizes;
      }
    }
    g.node('Split', inputs, sizes.map((s) => [x.type, x.shape.map((e, i) => (i === a ? s : e))]), attrs);
    return true;
  },

  slice(g) {
    const x = g.find((v) => v.shape.length >= 1) ?? g.floatValue();
    const r = x.shape.length;
    const axes = g.shuffle([...Array(r).keys()]).slice(0, g.int(1, r));
    const starts = [];
    const ends = [];
    const steps = [];
    const shape = [...x.shape];
    for (const a of axes) {
      const d = x.shape[a];
      const step = g.opset >= 10 && g.chance(0.3) ? g.pick([-1, 2, -2]) : 1;
      let s = g.int(-d, d);
      let e = g.chance(0.2) ? (step > 0 ? 2 ** 31 - 1 : -(2 ** 31)) : g.int(-d - 1, d + 1);
      starts.push(s); ends.push(e); steps.push(step);
      if (s < 0) s += d;
      if (e < 0) e += d;
      let len;
      if (step > 0) {
        s = Math.min(Math.max(s, 0), d); e = Math.min(Math.max(e, 0), d);
        len = Math.max(0, Math.ceil((e - s) / step));
      } else {
        s = Math.min(Math.max(s, 0), d - 1); e = Math.min(Math.max(e, -1), d - 1);
        len = Math.max(0, Math.ceil((s - e) / -step));
      }
      shape[a] = len;
    }
    // No empty tensors: ORT's own kernels disagree on them (MatMul of [2,0,4] by [4] fails,
    // ReduceMax over a 0-sized axis keeps it), so they would make noise, not findings.
    if (numel(shape) === 0) return false;
    const signedAxes = axes.map((a) => (g.opset >= 11 && g.chance(0.3) ? a - r : a));
    if (g.opset < 10) {
      const attrs = { starts, ends };
      if (g.chance(0.7) || axes.some((a, i) => a !== i)) attrs.axes = signedAxes;
      g.node('Slice', [x], [[x.type, shape]], attrs);
      return true;
    }
    const inputs = [x, g.int64s(starts), g.int64s(ends)];
    const natural = axes.every((a, i) => a === i) && axes.length === r;
    const withSteps = steps.some((s) => s !== 1) || g.chance(0.3);
    if (!natural || withSteps || g.chance(0.6)) inputs.push(g.int64s(signedAxes));   // steps come after axes
    if (withSteps) inputs.push(g.int64s(steps));
    g.node('Slice', inputs, [[x.type, shape]]);
    return true;
  },

  gather(g) {
    const x = g.find((v) => v.shape.length >= 1 && numel(v.shape) > 0) ?? g.floatValue();
    const r = x.shape.length;
    const a = g.int(0, r - 1);
    const d = x.shape[a];
    if (d === 0) return false;
    const ishape = g.randShape(0, 2);
    const lo = g.opset >= 11 ? -d : 0;
    const itype = g.chance(0.7) ? 'int64' : 'int32';
    const idx = g.konst(itype, ishape, g.randData(itype, numel(ishape), { lo, hi: d - 1 }));
    const axis = g.opset >= 11 && g.chance(0.3) ? a - r : a;
    g.node('Gather', [x, idx], [[x.type, [...x.shape.slice(0, a), ...ishape, ...x.shape.slice(a + 1)]]], { axis });
    return true;
  },

  pad(g) {
    const x = g.floatValue((v) => v.shape.length >= 1);
    const r = x.shape.length;
    const mode = g.pick(['constant', 'constant', 'reflect', 'edge']);
    const pads = Array.from({ length: 2 * r }, (_, i) => {
      const d = x.shape[i % r];
      if (mode === 'reflect') return g.int(0, Math.min(2, d - 1));
      return g.int(0, 2);
    });
    const shape = x.shape.map((d, i) => d + pads[i] + pads[i + r]);
    const attrs = mode === 'constant' && g.chance(0.5) ? {} : { mode };
    const value = g.pick([0, 0.5, -1]);
    if (g.opset < 11) {
      if (mode === 'constant' && g.chance(0.5)) attrs.value = { float: value };
      g.node('Pad', [x], [[x.type, shape]], { ...attrs, pads });
      return true;
    }
    const inputs = [x, g.int64s(pads)];
    if (mode === 'constant' && g.chance(0.5)) inputs.push(g.scalar('float32', value));
    g.node('Pad', inputs, [[x.type, shape]], attrs);
    return true;
  },

  // Shape -> Gather -> Unsqueeze -> Concat -> Reshape: the flatten before a classifier.
  shapeChain(g) {
    const x = g.find((v) => v.shape.length >= 2 && v.type === 'float32') ?? g.floatValue((v) => v.shape.length >= 2);
    const r = x.shape.length;
    if (r < 2 || numel(x.shape) === 0) return false;
    const keep = g.int(0, r - 1);
    let sh;
    if (g.opset >= 15 && g.chance(0.3)) {
      sh = g.node('Shape', [x], [['int64', [r - keep]]], { start: keep })[0];
      sh = g.node('Gather', [sh, g.scalar('int64', 0)], [['int64', []]], { axis: 0 })[0];
    } else {
      sh = g.node('Shape', [x], [['int64', [r]]])[0];
      sh = g.node('Gather', [sh, g.scalar('int64', keep)], [['int64', []]], { axis: 0 })[0];
    }
    const un = g.opset >= 13
      ? g.node('Unsqueeze', [sh, g.int64s([0])], [['int64', [1]]])[0]
      : g.node('Unsqueeze', [sh], [['int64', [1]]], { axes: [0] })[0];
    let shp = g.node('Concat', [un, g.int64s([-1])], [['int64', [2]]], { axis: 0 })[0];
    if (g.chance(0.3)) {   // int64 dims to int32 and straight back (a freezing pattern)
      shp = g.node('Cast', [shp], [['int32', [2]]], { to: 6 })[0];
      shp = g.node('Cast', [shp], [['int64', [2]]], { to: 7 })[0];
    }
    const d = x.shape[keep];
    g.node('Reshape', [x, shp], [[x.type, [d, numel(x.shape) / d]]]);
    if (g.chance(0.3)) g.node('Size', [x], [['int64', []]]);
    return true;
  },

  constantOfShape(g) {
    if (g.opset < 9) return false;
    const shape = g.randShape(0, 3);
    const type = g.pick(['float32', 'int64']);
    const attrs = g.chance(0.7) ? { value: { dims: [1], type, data: g.randData(type, 1, { lo: -3, hi: 3 }) } } : {};
    g.node('ConstantOfShape', [g.int64s(shape)], [[attrs.value ? type : 'float32', shape]], attrs);
    return true;
  },

  range(g) {
    if (g.opset < 11) return false;
    const start = g.int(-3, 3);
    const delta = g.pick([1, 2, -1, 3]);
    const limit = start + delta * g.int(1, 5);
    const type = g.pick(['int64', 'int32', 'float32']);
    const n = Math.max(Math.ceil((limit - start) / delta), 0);
    g.node('Range', [g.scalar(type, start), g.scalar(type, limit), g.scalar(type, delta)], [[type, [n]]]);
    return true;
  },

  matmul(g) {
    // 2-D mostly: MatMul + Add becomes Gemm only there.
    const a = g.floatValue((v) => (g.chance(0.6) ? v.shape.length === 2 : v.shape.length >= 1 && v.shape.length <= 3));
    const r = a.shape.length;
    const K = a.shape[r - 1];
    const N = g.int(1, 4);
    const bVec = g.chance(0.15);
    const b = bVec ? g.konst('float32', [K]) : g.chance(0.85) ? g.konst('float32', [K, N]) : g.input('float32', [K, N], { symbolic: false });
    const shape = bVec ? a.shape.slice(0, -1) : [...a.shape.slice(0, -1), N];
    let y = g.node('MatMul', [a, b], [['float32', shape]])[0];
    if (!bVec && g.chance(0.6)) {     // MatMul + Add -> Gemm
      const bias = g.konst('float32', g.chance(0.8) ? [N] : [1, N]);
      const [p, q] = g.chance(0.8) ? [y, bias] : [bias, y];
      y = g.node('Add', [p, q], [['float32', broadcast(shape, bias.shape)]])[0];
    }
    return true;
  },

  gemm(g) {
    let a = g.floatValue((v) => v.shape.length === 2);
    if (a.shape.length !== 2) return false;
    const transA = g.chance(0.3) ? 1 : 0;
    const [M, K] = transA ? [a.shape[1], a.shape[0]] : a.shape;
    const N = g.int(1, 4);
    const transB = g.chance(0.4) ? 1 : 0;
    const b = g.konst('float32', transB ? [N, K] : [K, N]);
    const attrs = {};
    if (transA) attrs.transA = 1;
    if (transB) attrs.transB = 1;
    if (g.chance(0.3)) attrs.alpha = { float: g.pick([0.5, 2]) };
    if (g.chance(0.3)) attrs.beta = { float: g.pick([0.5, 0, 2]) };
    const inputs = [a, b];
    if (g.opset < 11 || g.chance(0.7)) inputs.push(g.konst('float32', g.pick([[N], [1, N], [M, 1], [M, N], []])));
    g.node('Gemm', inputs, [['float32', [M, N]]], attrs);
    return true;
  },

  // Conv, then what the freezing patterns fuse into it: BatchNormalization, per-channel Mul/Add.
  conv(g) {
    const spatial = g.pick([1, 2, 2]);
    let x = g.find((v) => v.type === 'float32' && v.shape.length === 2 + spatial && v.shape.slice(2).every((d) => d >= 2));
    if (!x) x = g.input('float32', [g.pick([1, 2]), g.int(1, 4), ...Array.from({ length: spatial }, () => g.int(3, 6))]);
    const C = x.shape[1];
    const group = g.pick([1, 1, C].filter((v, i, s) => s.indexOf(v) === i));
    const M = group * g.int(1, 3);
    const k = Array.from({ length: spatial }, () => g.int(1, 3));
    const strides = Array.from({ length: spatial }, () => g.pick([1, 1, 2]));
    const dil = Array.from({ length: spatial }, () => g.pick([1, 1, 2]));
    const pads = Array.from({ length: 2 * spatial }, () => g.int(0, 1));
    const out = x.shape.slice(2).map((d, i) => Math.floor((d + pads[i] + pads[i + spatial] - ((k[i] - 1) * dil[i] + 1)) / strides[i]) + 1);
    if (out.some((d) => d < 1)) return false;
    const attrs = {};
    if (group > 1) attrs.group = group;
    if (g.chance(0.5)) attrs.kernel_shape = k;
    if (strides.some((s) => s > 1)) attrs.strides = strides;
    if (dil.some((s) => s > 1)) attrs.dilations = dil;
    if (pads.some((p) => p)) attrs.pads = pads;
    const inputs = [x, g.konst('float32', [M, C / group, ...k])];
    if (g.chance(0.5)) inputs.push(g.konst('float32', [M]));
    const yShape = [x.shape[0], M, ...out];
    let y = g.node('Conv', inputs, [['float32', yShape]], attrs)[0];
    const chan = [M, ...Array(spatial).fill(1)];
    if (g.chance(0.5)) y = batchNorm(g, y);
    if (g.chance(0.3)) y = g.node('Mul', [y, g.konst('float32', g.chance(0.5) ? chan : [1, ...chan])], [['float32', yShape]])[0];
    if (g.chance(0.3)) y = g.node('Add', [y, g.konst('float32', g.chance(0.5) ? chan : [1, ...chan])], [['float32', yShape]])[0];
    return true;
  },

  batchNorm(g) {
    const x = g.floatValue((v) => v.shape.length >= 2 && v.shape.length <= 4);
    if (x.shape.length < 2) return false;
    batchNorm(g, x);
    return true;
  },

  reduce(g) {
    const ops = ['ReduceSum', 'ReduceMean', 'ReduceMax', 'ReduceMin', 'ReduceProd', 'ReduceL1', 'ReduceL2',
      'ReduceSumSquare', 'ReduceLogSumExp'];
    const op = g.pick(ops);
    const intOk = ['ReduceSum', 'ReduceMax', 'ReduceMin', 'ReduceProd'].includes(op);
    const x = (intOk && g.chance(0.3) && g.find((v) => v.type === 'int64' || v.type === 'int32')) || g.floatValue();
    const r = x.shape.length;
    const axesAsInput = g.opset >= (op === 'ReduceSum' ? 13 : 18);
    let axes = r ? g.shuffle([...Array(r).keys()]).slice(0, g.int(0, r)) : [];
    const keepdims = g.chance(0.5) ? 0 : 1;
    const attrs = g.chance(0.5) || !keepdims ? { keepdims } : {};
    let noop = false;
    const inputs = [x];
    if (axesAsInput) {
      if (axes.length) inputs.push(g.int64s(axes.map((a) => (g.chance(0.3) ? a - r : a))));
      else if (g.chance(0.3)) { attrs.noop_with_empty_axes = 1; noop = true; }
    } else if (axes.length) {
      attrs.axes = axes.map((a) => (g.opset >= 11 && g.chance(0.3) ? a - r : a));
    }
    if (!axes.length) axes = [...Array(r).keys()];
    const shape = noop ? x.shape : x.shape.flatMap((d, i) => (axes.includes(i) ? (keepdims ? [1] : []) : [d]));
    g.node(op, inputs, [[x.type, shape]], attrs);
    return true;
  },

  argmax(g) {
    const x = g.floatValue((v) => v.shape.length >= 1);
    const r = x.shape.length;
    const a = g.int(0, r - 1);
    const keepdims = g.chance(0.5) ? 0 : 1;
    const attrs = { axis: g.opset >= 11 && g.chance(0.3) ? a - r : a, keepdims };
    if (g.opset >= 12 && g.chance(0.3)) attrs.select_last_index = 1;
    g.discontinuous = true;
    g.node(g.pick(['ArgMax', 'ArgMin']), [x], [['int64', x.shape.flatMap((d, i) => (i === a ? (keepdims ? [1] : []) : [d]))]], attrs);
    return true;
  },

  cumsum(g) {
    if (g.opset < 11) return false;
    const x = g.find((v) => (v.type === 'float32' || v.type === 'int64' || v.type === 'int32') && v.shape.length >= 1) ?? g.floatValue();
    const attrs = {};
    if (g.chance(0.3)) attrs.exclusive = 1;
    if (g.chance(0.3)) attrs.reverse = 1;
    g.node('CumSum', [x, g.scalar(g.pick(['int64', 'int32']), g.axis(x.shape.length))], [[x.type, x.shape]], attrs);
    return true;
  },

  layerNorm(g) {
    if (g.opset < 17) return false;
    const x = g.floatValue((v) => v.shape.length >= 1);
    const r = x.shape.length;
    const a = g.int(0, r - 1);
    const ns = x.shape.slice(a);
    // Two elements or more normalized: over one, x - mean is 0 up to rounding, which
    // 1/sqrt(epsilon) amplifies (noise, worst in float16).
    if (numel(ns) < 2) return false;
    const inputs = [x, g.konst('float32', ns)];
    if (g.chance(0.6)) inputs.push(g.konst('float32', ns));
    const attrs = { axis: g.chance(0.5) ? a : a - r };
    if (g.chance(0.3)) attrs.epsilon = 1e-3;
    g.node('LayerNormalization', inputs, [['float32', x.shape]], attrs);
    return true;
  },

  // If: a constant condition (onnxfold inlines the branch) or one computed from the input.
  ifElse(g) {
    const x = g.floatValue((v) => numel(v.shape) <= 256);
    let cond;
    if (g.chance(0.5)) {
      cond = g.scalar('bool', g.chance(0.5));
    } else {
      const sum = g.node('ReduceSum', [x], [['float32', []]], { keepdims: 0 })[0];
      cond = g.node('Greater', [sum, g.scalar('float32', 0)], [['bool', []]])[0];
      g.discontinuous = true;
    }
    const branch = (name) => {
      const { nodes, out } = bodyChain(g, x.name);
      return { graph: { name, nodes, outputs: [{ name: out, type: 'float32', shape: x.shape }] } };
    };
    const [y] = g.node('If', [cond], [['float32', x.shape]], { then_branch: branch('then'), else_branch: branch('else') });
    g.nodes.at(-1).implicit = [x.name];
    return !!y;
  },

  // Loop: a trip count, a loop-carried value, and the values of every iteration stacked.
  loop(g) {
    const x = g.floatValue((v) => numel(v.shape) <= 64);
    const M = g.int(1, 4);
    const iter = g.name('b_i');
    const condIn = g.name('b_c');
    const vIn = g.name('b_v');
    const { nodes, out } = bodyChain(g, vIn);
    let vOut = out;
    if (g.chance(0.5)) {   // use the iteration number: v + float(i)
      const f = g.name('b_f');
      vOut = g.name('b_o');
      nodes.push({ op: 'Cast', inputs: [iter], outputs: [f], attrs: { to: 1 } },
        { op: 'Add', inputs: [out, f], outputs: [vOut] });
    }
    const condOut = g.name('b_co');
    const scanOut = g.name('b_s');
    nodes.push({ op: 'Identity', inputs: [condIn], outputs: [condOut] },
      { op: 'Identity', inputs: [vOut], outputs: [scanOut] });
    const body = { name: 'loop_body', nodes,
      inputs: [{ name: iter, type: 'int64', shape: [] }, { name: condIn, type: 'bool', shape: [] }, { name: vIn, type: 'float32', shape: x.shape }],
      outputs: [{ name: condOut, type: 'bool', shape: [] }, { name: vOut, type: 'float32', shape: x.shape }, { name: scanOut, type: 'float32', shape: x.shape }] };
    const cond = g.chance(0.5) ? '' : g.scalar('bool', true);
    g.node('Loop', [g.scalar('int64', M), cond, x], [['float32', x.shape], ['float32', [M, ...x.shape]]], { body: { graph: body } });
    return true;
  },

  // Scan (opset 9 form): a running state over axis 0 of x, forwards or backwards.
  scan(g) {
    if (g.opset < 9) return false;
    const x = g.floatValue((v) => v.shape.length >= 1 && v.shape.length <= 3 && numel(v.shape) <= 64);
    if (!x.shape.length) return false;
    const elem = x.shape.slice(1);
    const state = g.find((v) => v.type === 'float32' && v.shape.join() === elem.join() && v !== x) ?? g.konst('float32', elem);
    const sIn = g.name('b_s');
    const xt = g.name('b_x');
    const { nodes, out } = bodyChain(g, xt);
    const sOut = g.name('b_so');
    const yt = g.name('b_y');
    nodes.push({ op: 'Add', inputs: [sIn, out], outputs: [sOut] }, { op: 'Mul', inputs: [sOut, xt], outputs: [yt] });
    const body = { name: 'scan_body', nodes,
      inputs: [{ name: sIn, type: 'float32', shape: elem }, { name: xt, type: 'float32', shape: elem }],
      outputs: [{ name: sOut, type: 'float32', shape: elem }, { name: yt, type: 'float32', shape: elem }] };
    const attrs = { body: { graph: body }, num_scan_inputs: 1 };
    if (g.chance(0.3)) attrs.scan_input_directions = [1];
    g.node('Scan', [state, x], [['float32', elem], ['float32', x.shape]], attrs);
    return true;
  },

  // A call of a local function whose body reads the call's attribute (attribute reference).
  localFunction(g) {
    if (g.opset < 13) return false;
    const x = g.floatValue();
    // With or without a Constant node in the body (functions have no initializers).
    const k = g.chance(0.5) && !g.without.has('function-constant')
      ? [{ op: 'Constant', inputs: [], outputs: ['K'], attrs: { value: { dims: [], type: 'float32', data: Float32Array.of(1.5) } } },
        { op: 'Mul', inputs: ['T', 'K'], outputs: ['U'] }]
      : [{ op: 'Mul', inputs: ['T', 'X'], outputs: ['U'] }];
    g.functions ??= [{ name: 'ScaledAct', domain: FN_DOMAIN, inputs: ['X'], outputs: ['Y'], attributes: ['alpha'],
      nodes: [{ op: 'LeakyRelu', inputs: ['X'], outputs: ['T'], attrs: { alpha: { ref: 'alpha', type: 1 } } }, ...k,
        { op: 'Add', inputs: ['U', 'X'], outputs: ['Y'] }] }];
    g.node('ScaledAct', [x], [['float32', x.shape]], { alpha: { float: g.pick([0.1, 0.5, 2]) } });
    g.nodes.at(-1).domain = FN_DOMAIN;
    return true;
  },

  pool(g) {
    const spatial = g.pick([1, 2]);
    let x = g.find((v) => v.type === 'float32' && v.shape.length === 2 + spatial && v.shape.slice(2).every((d) => d >= 2));
    if (!x) x = g.input('float32', [g.pick([1, 2]), g.int(1, 3), ...Array.from({ length: spatial }, () => g.int(3, 6))]);
    const op = g.pick(['MaxPool', 'AveragePool', 'GlobalAveragePool', 'GlobalMaxPool', 'MaxPool']);
    if (op.startsWith('Global')) {
      g.node(op, [x], [['float32', [...x.shape.slice(0, 2), ...Array(spatial).fill(1)]]]);
      return true;
    }
    const dims = x.shape.slice(2);
    const k = dims.map((d) => g.int(1, Math.min(3, d)));
    const strides = dims.map(() => g.pick([1, 2]));
    const pads = [...k, ...k].map((kk) => g.int(0, kk - 1));   // a pad is smaller than the kernel
    const span = dims.map((d, i) => d + pads[i] + pads[i + spatial] - k[i]);
    // Ceil mode only where no last window would start in the end padding: ONNX's newer rule
    // drops such a window, ORT's kernel does too, but the shape inference ORT runs at load
    // (opset 10 schema) does not, so the two disagree there (noise, not findings).
    const ceil = g.opset >= 10 && g.chance(0.3) &&
      dims.every((d, i) => Math.ceil(span[i] / strides[i]) * strides[i] < d + pads[i]);
    const out = span.map((sp, i) => (ceil ? Math.ceil(sp / strides[i]) : Math.floor(sp / strides[i])) + 1);
    const attrs = { kernel_shape: k };
    if (strides.some((v) => v > 1)) attrs.strides = strides;
    if (pads.some((v) => v)) attrs.pads = pads;
    if (ceil) attrs.ceil_mode = 1;
    if (op === 'AveragePool' && g.chance(0.4)) attrs.count_include_pad = 1;
    g.node(op, [x], [['float32', [...x.shape.slice(0, 2), ...out]]], attrs);
    return true;
  },

  depthToSpace(g) {
    const x = g.find((v) => v.type === 'float32' && v.shape.length === 4) ?? g.input('float32', [1, 4 * g.int(1, 2), g.int(1, 3), g.int(1, 3)]);
    const [N, C, H, W] = x.shape;
    if (g.chance(0.5) && H % 2 === 0 && W % 2 === 0) {
      g.node('SpaceToDepth', [x], [['float32', [N, C * 4, H / 2, W / 2]]], { blocksize: 2 });
      return true;
    }
    if (C % 4) return false;
    const attrs = { blocksize: 2 };
    if (g.opset >= 11 && g.chance(0.5)) attrs.mode = 'CRD';
    g.node('DepthToSpace', [x], [['float32', [N, C / 4, H * 2, W * 2]]], attrs);
    return true;
  },

  einsum(g) {
    if (g.opset < 12) return false;
    const a = g.floatValue((v) => v.shape.length === 2);
    if (a.shape.length !== 2) return false;
    const [I, J] = a.shape;
    const form = g.int(0, 3);
    if (form === 0) g.node('Einsum', [a], [['float32', [J, I]]], { equation: 'ij->ji' });
    else if (form === 1) g.node('Einsum', [a], [['float32', [I]]], { equation: 'ij->i' });
    else if (form === 2) {
      const K = g.int(1, 4);
      g.node('Einsum', [a, g.konst('float32', [J, K])], [['float32', [I, K]]], { equation: 'ij,jk->ik' });
    } else {
      g.node('Einsum', [a, g.operandFor(a, { sameShape: true })], [['float32', [I]]], { equation: 'ij,ij->i' });
    }
    return true;
  },

  trilu(g) {
    if (g.opset < 14) return false;
    // ORT's Trilu has kernels for float and int64 only.
    const x = g.find((v) => v.shape.length >= 2 && (v.type === 'float32' || v.type === 'int64')) ?? g.floatValue((v) => v.shape.length >= 2);
    if (x.shape.length < 2) return false;
    const inputs = [x];
    if (g.chance(0.5)) inputs.push(g.scalar('int64', g.int(-2, 2)));
    g.node('Trilu', inputs, [[x.type, x.shape]], g.chance(0.5) ? { upper: 0 } : {});
    return true;
  },

  instanceNorm(g) {
    const x = g.floatValue((v) => v.shape.length >= 3 && v.shape.length <= 4);
    if (x.shape.length < 3 || numel(x.shape.slice(2)) < 2) return false;   // as LayerNormalization
    const C = x.shape[1];
    g.node('InstanceNormalization', [x, g.konst('float32', [C]), g.konst('float32', [C])], [['float32', x.shape]],
      g.chance(0.3) ? { epsilon: 1e-3 } : {});
    return true;
  },

  // QuantizeLinear -> DequantizeLinear: per tensor, or per axis from opset 13.
  qdq(g) {
    if (g.opset < 10) return false;
    const x = g.floatValue((v) => v.shape.length >= 1);
    const type = g.pick(['uint8', 'int8']);
    const perAxis = g.opset >= 13 && x.shape.length >= 2 && g.chance(0.4);
    const axis = perAxis ? g.int(0, x.shape.length - 1) : undefined;
    const n = perAxis ? x.shape[axis] : 1;
    const sshape = perAxis ? [n] : [];
    const scale = g.konst('float32', sshape, g.randData('float32', n, { lo: 0.005, hi: 0.02 }));
    const zp = g.konst(type, sshape, g.randData(type, n, { lo: type === 'uint8' ? 100 : -10, hi: type === 'uint8' ? 150 : 10 }));
    const attrs = perAxis ? { axis } : {};
    g.discontinuous = true;
    const q = g.node('QuantizeLinear', [x, scale, zp], [[type, x.shape]], attrs)[0];
    if (g.chance(0.8)) g.node('DequantizeLinear', [q, scale, zp], [['float32', x.shape]], attrs);
    return true;
  },

  topk(g) {
    if (g.opset < 10) return false;
    const x = g.floatValue((v) => v.shape.length >= 1);
    const r = x.shape.length;
    const a = g.int(0, r - 1);
    const k = g.int(1, x.shape[a]);
    const shape = x.shape.map((d, i) => (i === a ? k : d));
    const attrs = { axis: g.opset >= 11 && g.chance(0.3) ? a - r : a };
    if (g.opset >= 11 && g.chance(0.3)) attrs.largest = 0;
    g.discontinuous = true;
    // Ties (zeros after Relu) may order indices differently; only the values are compared.
    const [values] = g.node('TopK', [x, g.int64s([k])], [['float32', shape], ['int64', shape]], attrs);
    g.hidden.add(g.nodes.at(-1).outputs[1]);
    g.values = g.values.filter((v) => v.name !== g.nodes.at(-1).outputs[1]);
    return !!values;
  },

  // Resize (opset 10+) and Upsample (7-9) by whole or half factors on the last two dims, with the
  // modes and coordinate conventions runtimes most often disagree on.
  resize(g) {
    let x = g.find((v) => v.type === 'float32' && v.shape.length === 4 && v.shape[2] >= 2 && v.shape[3] >= 2);
    if (!x) x = g.input('float32', [g.pick([1, 2]), g.int(1, 3), g.int(2, 4), g.int(2, 4)]);
    const sc = [1, 1, g.pick([0.5, 1, 2, 3]), g.pick([0.5, 1, 2, 3])];
    const shape = x.shape.map((d, i) => Math.floor(d * sc[i]));
    if (shape.some((d) => d < 1)) return false;
    const scales = g.konst('float32', [4], Float32Array.from(sc));
    if (g.opset < 10) {
      if (sc.some((v) => v < 1)) return false;   // Upsample only scales up
      const mode = g.pick(['nearest', 'linear']);
      if (g.opset < 9) g.node('Upsample', [x], [['float32', shape]], { mode, scales: { floats: sc } });
      else g.node('Upsample', [x, scales], [['float32', shape]], { mode });
      return true;
    }
    const attrs = { mode: g.pick(['nearest', 'linear', 'nearest', ...(g.opset >= 11 ? ['cubic'] : [])]) };
    if (g.opset >= 11) {
      const ctm = g.pick(['half_pixel', 'asymmetric', 'align_corners', 'pytorch_half_pixel']);
      if (ctm !== 'half_pixel' || g.chance(0.5)) attrs.coordinate_transformation_mode = ctm;
      if (attrs.mode === 'nearest' && g.chance(0.6)) attrs.nearest_mode = g.pick(['round_prefer_floor', 'round_prefer_ceil', 'floor', 'ceil']);
      if (attrs.mode === 'cubic' && g.chance(0.5)) attrs.cubic_coeff_a = -0.5;
    }
    let inputs;
    if (g.opset === 10) inputs = [x, scales];
    else if (g.opset < 13) inputs = [x, g.konst('float32', [0], new Float32Array(0), { forceInit: true }), scales];  // required roi
    else inputs = [x, '', scales];
    g.discontinuous ||= attrs.mode === 'nearest';
    g.node('Resize', inputs, [['float32', shape]], attrs);
    return true;
  },

  gatherElements(g) {
    if (g.opset < 11) return false;
    const x = g.find((v) => v.shape.length >= 1 && numel(v.shape) > 0) ?? g.floatValue();
    const r = x.shape.length;
    const a = g.int(0, r - 1);
    const ishape = x.shape.map((d, i) => (i === a ? g.int(1, 3) : g.int(1, d)));
    const idx = g.konst('int64', ishape, g.randData('int64', numel(ishape), { lo: -x.shape[a], hi: x.shape[a] - 1 }));
    g.node('GatherElements', [x, idx], [[x.type, ishape]], { axis: g.chance(0.3) ? a - r : a });
    return true;
  },
};

// BatchNormalization in the form the opset has: inference (1 output), training with 5 outputs
// (opsets 9-13: Y, running mean and var, saved mean and var) or training_mode=1 with 3 (14+).
function batchNorm(g, x) {
  const C = x.shape[1];
  const inputs = [x, g.konst('float32', [C]), g.konst('float32', [C]),
    g.konst('float32', [C]), g.konst('float32', [C], g.randData('float32', C, { lo: 0.5, hi: 1.5 }))];
  const attrs = {};
  if (g.chance(0.3)) attrs.epsilon = g.pick([1e-3, 1e-2]);
  if (g.chance(0.2)) attrs.momentum = 0.8;
  let nout = 1;
  // Training mode normalizes over N and the spatial dims: with one element there, Y is B up to
  // rounding, and a comparison with B downstream flips on that rounding (noise).
  const batchStats = numel(x.shape) / C >= 2;
  const training = batchStats && g.chance(0.3) && !g.without.has('bn-training-9-13');
  if (g.opset >= 9 && g.opset <= 13 && training) nout = 5;
  if (g.opset >= 14 && batchStats && g.chance(0.3)) { attrs.training_mode = 1; nout = 3; }
  const outs = [['float32', x.shape]];
  for (let i = 1; i < nout; i++) outs.push(['float32', [C]]);
  if (nout > 1) {
    // In training mode ORT's kernel updates the running mean and var in place (outputs alias
    // inputs), so initializers there change from run to run and every reader sees it. Computed
    // values (x * 1) are fresh on every run; onnxfold may fold them back, which is fine.
    const one = g.scalar('float32', 1);
    for (const i of [3, 4]) {
      const w = inputs[i];
      g.values = g.values.filter((v) => v !== w);
      inputs[i] = g.node('Mul', [w, one], [['float32', [C]]])[0];
      g.values.pop();
      g.hidden.add(inputs[i].name);   // nor a graph output, which would show the update
    }
  }
  return g.node('BatchNormalization', inputs, outs, attrs)[0];
}

const WEIGHTS = {
  unary: 8, binary: 10, variadic: 2, integer: 4, floatMod: 1, compareWhere: 3, cast: 4, identity: 2,
  dropout: 3, clip: 3, softmax: 3, transpose: 4, reshape: 4, flatten: 2, squeezeUnsqueeze: 4, expand: 2,
  tile: 1, concat: 3, split: 2, slice: 3, gather: 3, pad: 2, shapeChain: 2, constantOfShape: 1, range: 1,
  matmul: 4, gemm: 2, conv: 4, batchNorm: 2, reduce: 4, argmax: 1, cumsum: 1, layerNorm: 1,
  ifElse: 2, loop: 1, scan: 1, localFunction: 1, pool: 3, depthToSpace: 1, einsum: 1, trilu: 1,
  instanceNorm: 1, qdq: 2, topk: 1, resize: 2, gatherElements: 1,
};
const TOTAL = Object.values(WEIGHTS).reduce((a, b) => a + b, 0);

function pickEmitter(g) {
  let x = g.rand() * TOTAL;
  for (const [k, w] of Object.entries(WEIGHTS)) if ((x -= w) < 0) return k;
  return 'unary';
}

/** What `without` can leave out besides emitter names: forms with an open finding. */
export const FEATURES = ['bn-training-9-13', 'function-constant', 'shared-node-names', 'external-data'];
export const EMITTERS = Object.keys(emitters);

/**
 * The model of `seed`: a spec for buildModel plus `types`, `dims`, `ops`, `discontinuous`.
 * Options: maxOps (emitters run; default random 2-16); without (emitter names and FEATURES not
 * to generate, to look past an open finding in a campaign; the same seed then gives another
 * model).
 */
export function generate(seed, opts = {}) {
  const g = new Gen(seed, opts);
  // Sources: graph inputs, weights, a weight that is also a graph input (overridable).
  for (let k = g.int(1, 2); k > 0; k--) g.input(g.chance(0.85) ? 'float32' : 'int64', g.randShape(1, 4));
  for (let k = g.int(0, 2); k > 0; k--) g.konst('float32', g.randShape(0, 3));
  if (g.chance(0.25)) {
    const w = g.konst('float32', g.randShape(1, 3), null, { forceInit: true });
    g.inputs.push({ name: w.name, type: w.type, shape: w.shape });
    w.konst = false;
  }
  let guard = 0;
  for (let done = 0; done < g.maxOps && guard < 200; guard++) {
    const e = pickEmitter(g);
    if (!g.without.has(e) && emitters[e](g)) done++;
  }
  // Half the models name their nodes by module, as exporters do ("/blocks/block.2/Add_7"), so
  // outline-functions has modules to outline.
  if (g.chance(0.5)) {
    let block = 0;
    g.nodes.forEach((n, i) => {
      if (i > 0 && g.chance(0.3)) block++;
      n.name = `/blocks/block.${block}/${n.op}_${i}`;
    });
  }
  // Outputs: every node result nothing reads (the leaves: no dead node, whose handling differs
  // between runtimes; ORT frees an outer value a dead If body still reads), plus now and then
  // an inner value.
  const produced = new Set(g.nodes.filter((n) => n.op !== 'Constant').flatMap((n) => n.outputs));
  const read = new Set(g.nodes.flatMap((n) => [...n.inputs, ...(n.implicit ?? [])]));
  const outs = [...produced].filter((n) => !read.has(n) && !g.hidden.has(n));
  const inner = [...produced].filter((n) => !outs.includes(n) && !g.hidden.has(n));
  if (inner.length && (g.chance(0.3) || !outs.length)) outs.push(g.pick(inner));
  if (!outs.length) return generate(seed + 0x9e3779b9, opts);   // only Constants: draw again
  return {
    seed,
    opset: g.opset,
    irVersion: g.opset >= 21 ? 10 : 8,
    inputs: g.inputs,
    outputs: outs.map((name) => ({ name, type: g.types[name].type })),
    initializers: g.initializers,
    nodes: g.nodes,
    functions: g.functions ?? [],
    imports: g.functions ? [{ domain: FN_DOMAIN, version: 1 }] : [],
    types: g.types,
    dims: { batch: 2 },
    ops: [...g.ops].sort(),
    discontinuous: g.discontinuous,
    random: g.random,
    external: g.without.has('external-data') ? null : externalOf(seed),
  };
}

/**
 * How a fifth of the models keep their weights: in an external data file (initializers of at
 * least `threshold` bytes, ONNX external data), and for half of those onnxfold writes its output
 * with external data too (`outThreshold`); null: inline. Drawn from its own stream of the seed,
 * so the model itself is the same either way.
 */
export function externalOf(seed) {
  const rand = mulberry32((seed ^ 0x5ca1ab1e) >>> 0);
  if (rand() >= 0.2) return null;
  return { threshold: [4, 16, 64][Math.floor(rand() * 3)], outThreshold: rand() < 0.5 ? [4, 64][Math.floor(rand() * 2)] : null };
}

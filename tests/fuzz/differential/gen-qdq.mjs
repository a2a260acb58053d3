// Random QDQ-shaped models from a seed, for the quantization-finalize modes of the differential
// fuzzer (check.mjs QDQ_MODES: `optimize(bytes, { quant: 'qoperator' | 'integer' | 'qdq-clean' })`).
//
//   import { generateQdq } from './gen-qdq.mjs';
//   const spec = generateQdq(seed);         // same seed, same model, on any machine
//   const bytes = buildModel(spec);         // tests/node/onnx-builder.mjs
//
// The spec has the shape gen.mjs gives (types, dims, ops, ...) plus `quant: true`.
//
// A model is what a static quantizer writes: float graph inputs -> QuantizeLinear ->
// DequantizeLinear -> an op -> QuantizeLinear -> DequantizeLinear -> the next op ..., over the ops
// the finalize rewrites (Conv, MatMul, Gemm, Relu/Clip before a Q, Reshape/Transpose/Flatten/
// Squeeze/Unsqueeze/Slice/Gather/Concat/MaxPool between equal Q/DQ) and ops it leaves in float
// (Add, Mul, Sub, AveragePool, GlobalAveragePool, LeakyRelu, Sigmoid, Tanh, Softmax), Identity, and
// DQ -> Q pairs (the same params: the integers back; others: a requantization). Now and then
// an op's result is not quantized (a float island, a float graph output), is read by another op
// besides its Q (no fusion may take it), or its Q is a graph output (an integer output).
// Weights: float initializers behind Q -> DQ, or int8/uint8 initializers behind a DQ only; per
// tensor or per channel (the axis the op's output channels are on, sometimes another one), zero
// points mostly 0, sometimes uniform or not. Biases: float, or int32 behind a DQ whose scale is
// x_scale * w_scale (what quantizers write), sometimes a scale that is not. Activations: uint8
// (asymmetric) or int8 (symmetric or not), int16/uint16 from opset 21, per axis now and then.
// Per-axis Q/DQ only from opset 13, an integer output_dtype only from 21; opsets 10-26.
//
// Scales are calibrated as a quantizer does, on the very inputs the checker feeds (the oracle's
// seeded inputs, tests/node/oracle.mjs makeInputs: generated here in the same order): a small
// float evaluator below computes every value, each Q's scale and zero point cover the value's
// range (including 0) times a factor in [0.8, 1.25] (one Q in ten: [0.3, 0.6], which saturates),
// so outputs use the integer range rather than sit at its ends (check.mjs counts how many
// output elements are at the clamp). The evaluator only sizes scales: the reference is ONNX
// Runtime, so an approximation there can only make a model less useful, never a check wrong.
import { makeTensor } from 'onnxfold/accuracy';
import { mulberry32 } from '../../node/oracle.mjs';
import { broadcast } from './gen.mjs';

export const QDQ_MIN_OPSET = 10;
export const QDQ_MAX_OPSET = 26;

const QRANGE = {
  uint8: [0, 255], int8: [-128, 127], uint16: [0, 65535], int16: [-32768, 32767], int32: [-(2 ** 31), 2 ** 31 - 1],
};
const TYPED = {
  float32: Float32Array, uint8: Uint8Array, int8: Int8Array, uint16: Uint16Array, int16: Int16Array,
  int32: Int32Array, int64: BigInt64Array,
};
const DTYPE_ID = { float32: 1, uint8: 2, int8: 3, uint16: 4, int16: 5, int32: 6 };
const fr = Math.fround;

// ---------------------------------------------------------------- evaluator (float64, row-major)

const numel = (shape) => shape.reduce((a, b) => a * b, 1);
function stridesOf(shape) {
  const st = new Array(shape.length);
  for (let i = shape.length - 1, k = 1; i >= 0; i--) { st[i] = k; k *= shape[i]; }
  return st;
}
function coordOf(i, shape) {
  const c = new Array(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) { c[d] = i % shape[d]; i = Math.floor(i / shape[d]); }
  return c;
}
const tensor = (shape, data) => ({ shape: [...shape], data: data ?? new Float64Array(numel(shape)) });
const mapT = (t, f) => tensor(t.shape, Float64Array.from(t.data, f));

// The element of `t` that broadcasting reads at `coord` of a rank-r result.
function bcastAt(t, coord) {
  const off = coord.length - t.shape.length;
  let idx = 0;
  for (let d = 0; d < t.shape.length; d++) idx = idx * t.shape[d] + (t.shape[d] === 1 ? 0 : coord[off + d]);
  return t.data[idx];
}
function binaryT(a, b, f) {
  const shape = broadcast(a.shape, b.shape);
  const out = tensor(shape);
  for (let i = 0; i < out.data.length; i++) {
    const c = coordOf(i, shape);
    out.data[i] = f(bcastAt(a, c), bcastAt(b, c));
  }
  return out;
}

// Round half to even, as QuantizeLinear does.
function rne(x) {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
function quantizeT(t, p) {
  const [lo, hi] = QRANGE[p.type];
  const out = tensor(t.shape);
  for (let i = 0; i < t.data.length; i++) {
    const c = p.axis < 0 ? 0 : coordOf(i, t.shape)[p.axis];
    const v = fr(fr(t.data[i]) / p.scale[c]);
    out.data[i] = Math.min(hi, Math.max(lo, rne(v) + p.zp[c]));
  }
  return out;
}
function dequantizeT(q, p) {
  const out = tensor(q.shape);
  for (let i = 0; i < q.data.length; i++) {
    const c = p.axis < 0 ? 0 : coordOf(i, q.shape)[p.axis];
    out.data[i] = fr(fr(q.data[i] - p.zp[c]) * p.scale[c]);
  }
  return out;
}

// Conv / pooling geometry on 1 or 2 spatial dims, as 2-D (a 1-D one has height 1).
function geometry(x, kernel, { strides, pads, dilations }) {
  const sr = x.shape.length - 2;
  const two = sr === 2;
  const g = {
    N: x.shape[0], C: x.shape[1], H: two ? x.shape[2] : 1, W: x.shape[sr + 1],
    kh: two ? kernel[0] : 1, kw: kernel[sr - 1], sh: two ? strides[0] : 1, sw: strides[sr - 1],
    dh: two ? dilations[0] : 1, dw: dilations[sr - 1], pt: two ? pads[0] : 0, pl: pads[sr - 1],
    pb: two ? pads[2] : 0, pr: pads[2 * sr - 1],
  };
  g.OH = Math.floor((g.H + g.pt + g.pb - (g.dh * (g.kh - 1) + 1)) / g.sh) + 1;
  g.OW = Math.floor((g.W + g.pl + g.pr - (g.dw * (g.kw - 1) + 1)) / g.sw) + 1;
  g.outSpatial = two ? [g.OH, g.OW] : [g.OW];
  return g;
}
function convT(x, w, b, attrs) {
  const g = geometry(x, w.shape.slice(2), attrs);
  const M = w.shape[0];
  const cg = w.shape[1];
  const mg = M / attrs.group;
  const out = tensor([g.N, M, ...g.outSpatial]);
  let o = 0;
  for (let n = 0; n < g.N; n++) {
    for (let m = 0; m < M; m++) {
      const c0 = Math.floor(m / mg) * cg;
      for (let oh = 0; oh < g.OH; oh++) {
        for (let ow = 0; ow < g.OW; ow++) {
          let s = b ? b.data[m] : 0;
          for (let c = 0; c < cg; c++) {
            for (let i = 0; i < g.kh; i++) {
              const h = oh * g.sh - g.pt + i * g.dh;
              if (h < 0 || h >= g.H) continue;
              for (let j = 0; j < g.kw; j++) {
                const ww = ow * g.sw - g.pl + j * g.dw;
                if (ww < 0 || ww >= g.W) continue;
                s += x.data[((n * g.C + c0 + c) * g.H + h) * g.W + ww] * w.data[((m * cg + c) * g.kh + i) * g.kw + j];
              }
            }
          }
          out.data[o++] = s;
        }
      }
    }
  }
  return out;
}
function poolT(x, kind, kernel, attrs) {
  const g = geometry(x, kernel, { ...attrs, dilations: [1, 1] });
  const out = tensor([g.N, g.C, ...g.outSpatial]);
  let o = 0;
  for (let nc = 0; nc < g.N * g.C; nc++) {
    for (let oh = 0; oh < g.OH; oh++) {
      for (let ow = 0; ow < g.OW; ow++) {
        let s = kind === 'max' ? -Infinity : 0;
        let count = 0;
        for (let i = 0; i < g.kh; i++) {
          const h = oh * g.sh - g.pt + i;
          for (let j = 0; j < g.kw; j++) {
            const ww = ow * g.sw - g.pl + j;
            if (h < 0 || h >= g.H || ww < 0 || ww >= g.W) { if (attrs.countIncludePad) count++; continue; }
            const v = x.data[(nc * g.H + h) * g.W + ww];
            s = kind === 'max' ? Math.max(s, v) : s + v;
            count++;
          }
        }
        out.data[o++] = kind === 'max' ? s : s / count;
      }
    }
  }
  return out;
}
// a [..., M, K] x b [..., K, N], batch dims broadcast.
function matmulT(a, b) {
  const M = a.shape.at(-2);
  const K = a.shape.at(-1);
  const N = b.shape.at(-1);
  const batch = broadcast(a.shape.slice(0, -2), b.shape.slice(0, -2));
  const out = tensor([...batch, M, N]);
  for (let bi = 0; bi < numel(batch); bi++) {
    const c = coordOf(bi, batch);
    const offOf = (t) => {
      const bs = t.shape.slice(0, -2);
      let idx = 0;
      for (let d = 0; d < bs.length; d++) idx = idx * bs[d] + (bs[d] === 1 ? 0 : c[c.length - bs.length + d]);
      return idx * t.shape.at(-2) * t.shape.at(-1);
    };
    const ao = offOf(a);
    const bo = offOf(b);
    for (let i = 0; i < M; i++) {
      for (let j = 0; j < N; j++) {
        let s = 0;
        for (let k = 0; k < K; k++) s += a.data[ao + i * K + k] * b.data[bo + k * N + j];
        out.data[(bi * M + i) * N + j] = s;
      }
    }
  }
  return out;
}
function transposeT(t, perm) {
  const shape = perm.map((p) => t.shape[p]);
  const st = stridesOf(t.shape);
  const out = tensor(shape);
  for (let i = 0; i < out.data.length; i++) {
    const c = coordOf(i, shape);
    let idx = 0;
    for (let d = 0; d < perm.length; d++) idx += c[d] * st[perm[d]];
    out.data[i] = t.data[idx];
  }
  return out;
}
// Per axis: the input indices it keeps (Slice, Gather) -> a tensor of those.
function selectT(t, lists) {
  const shape = lists.map((l) => l.length);
  const st = stridesOf(t.shape);
  const out = tensor(shape);
  for (let i = 0; i < out.data.length; i++) {
    const c = coordOf(i, shape);
    let idx = 0;
    for (let d = 0; d < c.length; d++) idx += lists[d][c[d]] * st[d];
    out.data[i] = t.data[idx];
  }
  return out;
}
function concatT(ts, axis) {
  const shape = [...ts[0].shape];
  shape[axis] = ts.reduce((s, t) => s + t.shape[axis], 0);
  const out = tensor(shape);
  for (let i = 0; i < out.data.length; i++) {
    const c = coordOf(i, shape);
    let k = 0;
    let x = c[axis];
    while (x >= ts[k].shape[axis]) x -= ts[k++].shape[axis];
    const cc = [...c];
    cc[axis] = x;
    let idx = 0;
    for (let d = 0; d < cc.length; d++) idx = idx * ts[k].shape[d] + cc[d];
    out.data[i] = ts[k].data[idx];
  }
  return out;
}
// Softmax over the axes from `axis` on (opsets < 13, the input seen as 2-D) or along `axis`.
function softmaxT(t, axis, flatten) {
  const out = tensor(t.shape);
  const inner = flatten ? numel(t.shape.slice(axis)) : t.shape[axis];
  const after = flatten ? 1 : numel(t.shape.slice(axis + 1));
  const outer = t.data.length / (inner * after);
  for (let o = 0; o < outer; o++) {
    for (let a = 0; a < after; a++) {
      let m = -Infinity;
      for (let i = 0; i < inner; i++) m = Math.max(m, t.data[(o * inner + i) * after + a]);
      let s = 0;
      for (let i = 0; i < inner; i++) s += Math.exp(t.data[(o * inner + i) * after + a] - m);
      for (let i = 0; i < inner; i++) out.data[(o * inner + i) * after + a] = Math.exp(t.data[(o * inner + i) * after + a] - m) / s;
    }
  }
  return out;
}
// What makeTensor builds the seeded inputs with (no runtime here).
class PlainTensor {
  constructor(type, data, dims) { Object.assign(this, { type, data, dims }); }
}

const range = (n) => Array.from({ length: n }, (_, i) => i);

// ---------------------------------------------------------------- the generator

class QGen {
  constructor(seed, { without = [] } = {}) {
    this.rand = mulberry32(seed);
    this.seed = seed;
    this.without = new Set(without);
    // Per-axis Q/DQ needs 13: most models are there.
    this.opset = this.chance(0.15) ? this.int(10, 12) : this.int(13, QDQ_MAX_OPSET);
    this.feedRand = mulberry32(1);   // the oracle's input stream (check.mjs SEED), in input order
    this.counter = 0;
    this.inputs = [];
    this.initializers = [];
    this.nodes = [];
    this.types = {};
    this.ops = new Set();
    this.acts = [];             // float values ops may read: {name, t, p (the DQ's params) , q (its Q)}
    this.hidden = new Set();    // results that are not graph outputs
  }

  int(lo, hi) { return lo + Math.floor(this.rand() * (hi - lo + 1)); }
  chance(p) { return this.rand() < p; }
  pick(arr) { return arr[Math.floor(this.rand() * arr.length)]; }
  uniform(lo, hi) { return lo + this.rand() * (hi - lo); }
  shuffle(arr) {
    const a = [...arr];
    for (let i = a.length - 1; i > 0; i--) { const j = this.int(0, i); [a[i], a[j]] = [a[j], a[i]]; }
    return a;
  }
  name(prefix) { return `${prefix}${this.counter++}`; }

  // A constant: an initializer, or now and then a Constant node.
  konst(type, dims, data, { node = this.chance(0.12) } = {}) {
    const name = this.name('c');
    if (node) {
      this.nodes.push({ op: 'Constant', inputs: [], outputs: [name], attrs: { value: { dims, type, data } } });
      this.ops.add('Constant');
    } else {
      this.initializers.push({ name, type, dims, data });
    }
    this.types[name] = { type, shape: [...dims] };
    return name;
  }
  int64s(list) { return this.konst('int64', [list.length], BigInt64Array.from(list.map(BigInt))); }
  node(op, inputs, outs, attrs = {}) {
    const outputs = outs.map(([, , name]) => name ?? this.name('v'));
    this.nodes.push({ op, inputs, outputs, attrs });
    this.ops.add(op);
    outs.forEach(([type, shape], i) => { this.types[outputs[i]] = { type, shape: [...shape] }; });
    return outputs;
  }

  // A float graph input (the oracle's seeded values); the first dim is now and then 'batch'.
  input(shape) {
    const name = this.name('in');
    const declared = [...shape];
    if (shape[0] === 2 && this.chance(0.3)) declared[0] = 'batch';
    this.inputs.push({ name, type: 'float32', shape: declared });
    this.types[name] = { type: 'float32', shape: [...shape] };
    const t = makeTensor(PlainTensor, { name, type: 'float32' }, shape, this.feedRand);
    return { name, t: tensor(shape, Float64Array.from(t.data)) };
  }

  // ---- quantization parameters
  // {type, scale: [float32], zp: [int], axis: -1 or normalized, negAxis, vec1 (a 1-element 1-D
  // scale), noZp (no zero point input), outputDtype (Q gets output_dtype instead of a zero point)}
  actType() {
    if (this.opset >= 21 && this.chance(0.08)) return this.pick(['int16', 'uint16']);
    return this.chance(0.6) ? 'uint8' : 'int8';
  }
  // Min/max calibration of `t` (per tensor, or per slice of `axis`), scaled by a factor.
  calib(t, { type = this.actType(), axis = -1, symmetric = type === 'int8' || type === 'int16' ? this.chance(0.5) : false } = {}) {
    const [qlo, qhi] = QRANGE[type];
    const factor = this.chance(0.1) ? this.uniform(0.3, 0.6) : this.uniform(0.8, 1.25);
    const n = axis < 0 ? 1 : t.shape[axis];
    const lo = new Array(n).fill(0);
    const hi = new Array(n).fill(0);
    for (let i = 0; i < t.data.length; i++) {
      const c = axis < 0 ? 0 : coordOf(i, t.shape)[axis];
      lo[c] = Math.min(lo[c], t.data[i]);
      hi[c] = Math.max(hi[c], t.data[i]);
    }
    const scale = [];
    const zp = [];
    for (let c = 0; c < n; c++) {
      let s;
      let z;
      if (symmetric || (type === 'int8' || type === 'int16') && this.chance(0.2)) {
        s = Math.max(Math.abs(lo[c]), Math.abs(hi[c])) / qhi;
        z = 0;
      } else {
        s = (hi[c] - lo[c]) / (qhi - qlo);
      }
      s *= factor;
      if (!(s > 1e-6) || !Number.isFinite(s)) s = 0.01;
      s = fr(s);
      if (z === undefined) z = Math.min(qhi, Math.max(qlo, rne(qlo - lo[c] / s)));
      scale.push(s);
      zp.push(z);
    }
    return this.finishParams({ type, scale, zp, axis });
  }
  finishParams(p) {
    const q = { ...p };
    q.negAxis = p.axis >= 0 && this.opset >= 13 && this.chance(0.2);   // axis written as axis - rank
    q.omitAxis = p.axis === 1 && this.chance(0.4);                       // the default axis, not written
    q.vec1 = p.axis < 0 && this.chance(0.1);   // a [1] scale and zero point: still per tensor
    const zeros = p.zp.every((z) => z === 0);
    q.outputDtype = this.opset >= 21 && zeros && p.type !== 'uint8' && this.chance(0.3);
    q.noZp = zeros && (p.type === 'uint8' || q.outputDtype) && this.chance(0.3);
    return q;
  }
  // Scale and zero point inputs (reused when the same params object was written before) and attrs.
  paramInputs(p, withZp) {
    if (!p.names) {
      const dims = p.axis >= 0 || p.vec1 ? [p.scale.length] : [];
      const s = this.konst('float32', dims, Float32Array.from(p.scale));
      const z = p.noZp ? '' : this.konst(p.type, dims, TYPED[p.type].from(p.zp));
      p.names = [s, z];
    }
    const [s, z] = p.names;
    return withZp && z ? [s, z] : [s];
  }
  axisAttrs(p, rank) {
    return p.axis >= 0 && !p.omitAxis ? { axis: p.negAxis ? p.axis - rank : p.axis } : {};
  }
  quantize(x, p) {
    const attrs = this.axisAttrs(p, x.t.shape.length);
    if (p.outputDtype && p.noZp) attrs.output_dtype = DTYPE_ID[p.type];
    const [q] = this.node('QuantizeLinear', [x.name, ...this.paramInputs(p, true)], [[p.type, x.t.shape]], attrs);
    return { name: q, t: quantizeT(x.t, p), p };
  }
  dequantize(q, p) {
    const attrs = this.axisAttrs(p, q.t.shape.length);
    // A DQ without zero point reads its type from the input: it may leave it out whenever it is 0.
    const [y] = this.node('DequantizeLinear', [q.name, ...this.paramInputs(p, !p.noZp)], [['float32', q.t.shape]], attrs);
    return { name: y, t: dequantizeT(q.t, p), p, q };
  }
  // ---- activations
  addAct(a) { this.acts.push(a); return a; }
  findAct(pred) {
    const c = this.acts.filter(pred);
    if (!c.length) return null;
    return this.chance(0.65) ? c[c.length - 1 - Math.floor(this.rand() * Math.min(2, c.length))] : this.pick(c);
  }
  // A fresh graph input of `shape`, quantized as the model's first step (nearly always).
  freshInput(shape) {
    const x = this.input(shape);
    if (this.chance(0.08)) return this.addAct({ ...x, p: null });
    return this.quantizeAct(x, { reuse: null });
  }
  // Q (and nearly always DQ) after the float value x; the DQ result (or x) joins the pool.
  // Sometimes x itself stays readable too (another reader besides its Q: no fusion takes it),
  // or x is not quantized at all (a float island).
  quantizeAct(x, { reuse = null, params = null, floatShare = 0.18 } = {}) {
    if (!params && this.chance(floatShare)) return this.addAct({ ...x, p: null });
    const rank = x.t.shape.length;
    // Reused params are per tensor: a data movement op may change the axes.
    let p = params ?? (reuse?.axis < 0 && this.chance(0.75) ? reuse : null);
    if (!p) {
      const perAxis = this.opset >= 13 && rank >= 2 && this.chance(0.08);
      p = this.calib(x.t, { axis: perAxis ? this.int(0, rank - 1) : -1 });
    }
    const q = this.quantize(x, p);
    if (this.chance(0.06)) return null;   // the integer tensor is a graph output
    const dq = this.dequantize(q, p);
    if (this.chance(0.07)) this.addAct({ ...x, p: null });
    return this.addAct(dq);
  }
  // A second DQ of the same Q (quantizers give each reader its own).
  redequantize(a) {
    if (!a.q) return a;
    return this.dequantize(a.q, a.p);
  }

  // ---- weights
  // A constant weight of `dims` as its DQ output: float -> Q -> DQ, or an int8/uint8 initializer
  // -> DQ; per tensor or per slice of `axis` (opset 13).
  weight(dims, { axis = 0, fanIn = 1 } = {}) {
    const n = numel(dims);
    const perChannel = this.opset >= 13 && dims[axis] > 1 && this.chance(0.55);
    const ax = perChannel ? axis : -1;
    const channels = perChannel ? dims[axis] : 1;
    const form = this.pick(['float', 'float', 'int8', 'int8', 'int8', 'uint8']);
    const spread = 1 / Math.sqrt(fanIn);
    if (form === 'float') {
      const data = Float32Array.from({ length: n }, () => this.uniform(-1, 1) * spread * this.uniform(0.5, 1.5));
      const t = tensor(dims, Float64Array.from(data));
      const type = this.chance(0.85) ? 'int8' : 'uint8';
      const p = this.weightParams(t, type, ax, channels);
      const x = { name: this.konst('float32', dims, data, { node: false }), t };
      return this.dequantize(this.quantize(x, p), p);
    }
    const type = form;
    const [lo, hi] = type === 'int8' ? [-127, 127] : [0, 255];
    const scale = Array.from({ length: channels }, () => fr(spread * this.uniform(0.3, 1.5) / 127));
    const zp = this.weightZeroPoints(type, channels);
    const qdata = TYPED[type].from({ length: n }, () => this.int(lo, hi));
    const p = this.finishParams({ type, scale, zp, axis: ax });
    const q = { name: this.konst(type, dims, qdata, { node: false }), t: tensor(dims, Float64Array.from(qdata)), p };
    return this.dequantize(q, p);
  }
  weightZeroPoints(type, channels) {
    const base = type === 'uint8' ? 128 : 0;
    const r = this.rand();
    if (r < 0.75) return new Array(channels).fill(base);
    if (r < 0.9) return new Array(channels).fill(base + this.int(-5, 5));
    return Array.from({ length: channels }, () => base + this.int(-5, 5));
  }
  weightParams(t, type, axis, channels) {
    const zp = this.weightZeroPoints(type, channels);
    const amax = new Array(channels).fill(0);
    for (let i = 0; i < t.data.length; i++) {
      const c = axis < 0 ? 0 : coordOf(i, t.shape)[axis];
      amax[c] = Math.max(amax[c], Math.abs(t.data[i]));
    }
    const scale = amax.map((m) => fr((m || 1) / (type === 'int8' ? 127 : 127.5)));
    return this.finishParams({ type, scale, zp, axis });
  }
  // A bias of `n` for a Conv/Gemm reading x (its DQ params xp) and w (wp, per channel along
  // `axis` of the weight): float, or int32 behind a DQ with scale x_scale * w_scale, or one whose
  // scale is not that (no fusion takes it).
  bias(n, xp, wp, outScale, outAxis) {
    const f = Float32Array.from({ length: n }, () => this.uniform(-0.5, 0.5) * outScale);
    const r = this.rand();
    if (!xp || xp.axis >= 0 || (wp.axis >= 0 && wp.axis !== outAxis) || r < 0.55) {
      return { name: this.konst('float32', [n], f, { node: false }), t: tensor([n], Float64Array.from(f)) };
    }
    const perChannel = wp.axis >= 0;
    let scale = range(perChannel ? n : 1).map((c) => fr(xp.scale[0] * wp.scale[perChannel ? c : 0]));
    if (r > 0.9) scale = scale.map((s) => fr(s * 1.001));   // not x_scale * w_scale: kept as DQ
    const q = Int32Array.from(f, (v, c) => rne(v / scale[perChannel ? c : 0]));
    const p = { type: 'int32', scale, zp: new Array(scale.length).fill(0), axis: perChannel ? 0 : -1 };
    p.noZp = this.chance(0.3);
    p.vec1 = !perChannel && this.chance(0.1);
    const qv = { name: this.konst('int32', [n], q, { node: false }), t: tensor([n], Float64Array.from(q)), p };
    return this.dequantize(qv, p);
  }
  typicalScale(t) {
    let m = 0;
    for (const v of t.data) m = Math.max(m, Math.abs(v));
    return m || 1;
  }

  // ---- emitters: each reads activations, writes a float result and quantizes it (or not)

  conv() {
    const x = this.findAct((a) => (a.t.shape.length === 3 || a.t.shape.length === 4) && a.t.shape[1] <= 16);
    if (!x) return false;
    const xs = x.t.shape;
    const C = xs[1];
    const sp = xs.slice(2);
    let group = 1;
    let M = this.int(1, 8);
    if (C > 1 && this.chance(0.2)) { group = C; M = C * this.pick([1, 1, 2]); }
    else if (C % 2 === 0 && C > 2 && this.chance(0.15)) { group = 2; M = 2 * this.int(1, 4); }
    const k = sp.map((d) => this.int(1, Math.min(3, d + 1)));
    const dilations = sp.map((d, i) => (k[i] > 1 && this.chance(0.12) ? 2 : 1));
    const pads = [...k, ...k].map((kk) => (this.chance(0.45) ? this.int(0, kk - 1) : 0));
    const strides = sp.map(() => (this.chance(0.25) ? 2 : 1));
    const g = geometry(x.t, k, { strides, pads, dilations });
    if (g.outSpatial.some((o) => o < 1)) return false;
    const w = this.weight([M, C / group, ...k], { axis: this.chance(0.93) ? 0 : 1, fanIn: (C / group) * numel(k) });
    const attrs = {};
    if (strides.some((s) => s !== 1) || this.chance(0.2)) attrs.strides = strides;
    if (pads.some((p) => p !== 0) || this.chance(0.2)) attrs.pads = pads;
    if (dilations.some((d) => d !== 1) || this.chance(0.1)) attrs.dilations = dilations;
    if (group !== 1 || this.chance(0.1)) attrs.group = group;
    if (this.chance(0.4)) attrs.kernel_shape = k;
    const plain = convT(x.t, w.t, null, { strides, pads, dilations, group });
    const b = this.chance(0.7) ? this.bias(M, x.p, w.p, this.typicalScale(plain), 0) : null;
    const y = convT(x.t, w.t, b?.t, { strides, pads, dilations, group });
    const [out] = this.node('Conv', [x.name, w.name, ...(b ? [b.name] : [])], [['float32', y.shape]], attrs);
    return this.result(out, y);
  }

  matmul() {
    const x = this.findAct((a) => a.t.shape.length >= 2 && a.t.shape.length <= 4 && a.t.shape.at(-1) <= 48);
    if (!x) return false;
    const K = x.t.shape.at(-1);
    const N = this.int(1, 8);
    if (x.t.shape.length === 2 && this.chance(0.12)) {
      // The weight first: W [M', K'] x x [K', N'] with x as the right operand.
      const w = this.weight([this.int(1, 6), x.t.shape[0]], { axis: 0, fanIn: x.t.shape[0] });
      const y = matmulT(w.t, x.t);
      const [out] = this.node('MatMul', [w.name, x.name], [['float32', y.shape]]);
      return this.result(out, y);
    }
    let b;
    if (this.chance(0.15)) {
      // Two activations: the second from a fresh input.
      b = this.freshInput([K, N]);
      if (!b) return false;
    } else {
      b = this.weight([K, N], { axis: this.chance(0.85) ? 1 : 0, fanIn: K });
    }
    const y = matmulT(x.t, b.t);
    const [out] = this.node('MatMul', [x.name, b.name], [['float32', y.shape]]);
    return this.result(out, y);
  }

  gemm() {
    const x = this.findAct((a) => a.t.shape.length === 2 && a.t.shape[0] <= 48 && a.t.shape[1] <= 48);
    if (!x) return false;
    const transA = this.chance(0.1);
    const [M, K] = transA ? [x.t.shape[1], x.t.shape[0]] : x.t.shape;
    const N = this.int(1, 8);
    const transB = this.chance(0.5);
    const w = this.weight(transB ? [N, K] : [K, N], { axis: this.chance(0.85) === transB ? 0 : 1, fanIn: K });
    const attrs = {};
    if (transA) attrs.transA = 1;
    if (transB || this.chance(0.1)) attrs.transB = transB ? 1 : 0;
    const alpha = this.chance(0.08) ? this.pick([0.5, 2]) : 1;
    const beta = this.chance(0.08) ? this.pick([0.5, 2]) : 1;
    if (alpha !== 1) attrs.alpha = { float: alpha };
    if (beta !== 1) attrs.beta = { float: beta };
    const a = transA ? transposeT(x.t, [1, 0]) : x.t;
    const bm = transB ? transposeT(w.t, [1, 0]) : w.t;
    const plain = mapT(matmulT(a, bm), (v) => v * alpha);
    let c = null;
    const r = this.rand();
    if (r < 0.7 || this.opset < 11) {
      c = this.bias(N, x.p, w.p, this.typicalScale(plain), transB ? 0 : 1);
    } else if (r < 0.8) {
      const dims = this.pick([[1, N], [M, N], [1]]);
      const data = Float32Array.from({ length: numel(dims) }, () => this.uniform(-0.2, 0.2));
      c = { name: this.konst('float32', dims, data, { node: false }), t: tensor(dims, Float64Array.from(data)) };
    }
    const y = c ? binaryT(plain, c.t, (u, v) => u + beta * v) : plain;
    const [out] = this.node('Gemm', [x.name, w.name, ...(c ? [c.name] : [])], [['float32', y.shape]], attrs);
    return this.result(out, y);
  }

  binary() {
    const a = this.findAct(() => true);
    if (!a) return false;
    const op = this.pick(['Add', 'Add', 'Add', 'Mul', 'Sub']);
    let b;
    const r = this.rand();
    if (r < 0.45) {
      b = this.findAct((v) => v !== a && broadcast(v.t.shape, a.t.shape));
    } else if (r < 0.6) {
      b = this.redequantize(a);   // a residual: the same tensor through its own DQ
    }
    if (!b) {
      // A constant operand, quantized (a weight) or float.
      const shape = this.pick([a.t.shape, a.t.shape.slice(-1), a.t.shape.length >= 3 ? [a.t.shape[1], ...a.t.shape.slice(2).map(() => 1)] : []]);
      if (this.chance(0.6) && shape.length) {
        b = this.weight(shape, { axis: 0, fanIn: 1 });
      } else {
        const data = Float32Array.from({ length: numel(shape) }, () => this.uniform(-1, 1));
        b = { name: this.konst('float32', shape, data), t: tensor(shape, Float64Array.from(data)) };
      }
    }
    const [l, rr] = this.chance(0.5) ? [a, b] : [b, a];
    const f = { Add: (u, v) => u + v, Mul: (u, v) => u * v, Sub: (u, v) => u - v }[op];
    const y = binaryT(l.t, rr.t, f);
    const [out] = this.node(op, [l.name, rr.name], [['float32', y.shape]]);
    return this.result(out, y);
  }

  unary() {
    const x = this.findAct(() => true);
    if (!x) return false;
    const op = this.pick(['Relu', 'Relu', 'Relu', 'Clip', 'Clip', 'Clip', 'LeakyRelu', 'Sigmoid', 'Tanh']);
    let y;
    let inputs = [x.name];
    const attrs = {};
    if (op === 'Relu') y = mapT(x.t, (v) => Math.max(v, 0));
    else if (op === 'LeakyRelu') y = mapT(x.t, (v) => (v < 0 ? 0.01 * v : v));
    else if (op === 'Sigmoid') y = mapT(x.t, (v) => 1 / (1 + Math.exp(-v)));
    else if (op === 'Tanh') y = mapT(x.t, Math.tanh);
    else {
      const m = this.typicalScale(x.t);
      let lo = this.pick([0, 0, -Infinity, fr(-m * this.uniform(0.1, 0.8)), fr(m * this.uniform(0, 0.3))]);
      let hi = this.pick([6, Infinity, fr(m * this.uniform(0.3, 0.9)), fr(m * 2)]);
      if (lo > hi) [lo, hi] = [hi, lo];
      if (this.opset < 11) {
        if (lo !== -Infinity) attrs.min = { float: lo };
        if (hi !== Infinity) attrs.max = { float: hi };
      } else {
        const scalar = (v) => this.konst('float32', [], Float32Array.from([v]));
        if (hi !== Infinity) inputs = [x.name, lo === -Infinity ? '' : scalar(lo), scalar(hi)];
        else if (lo !== -Infinity) inputs = [x.name, scalar(lo)];
      }
      y = mapT(x.t, (v) => Math.min(hi, Math.max(lo, v)));
    }
    const [out] = this.node(op, inputs, [['float32', y.shape]], attrs);
    return this.result(out, y, { relu: op === 'Relu' || op === 'Clip' });
  }

  pool() {
    const x = this.findAct((a) => a.t.shape.length === 3 || a.t.shape.length === 4);
    if (!x) return false;
    const sp = x.t.shape.slice(2);
    const kind = this.pick(['MaxPool', 'MaxPool', 'MaxPool', 'AveragePool', 'AveragePool', 'GlobalAveragePool', 'GlobalAveragePool', 'GlobalMaxPool']);
    if (kind.startsWith('Global')) {
      const y = poolT(x.t, kind === 'GlobalMaxPool' ? 'max' : 'avg', sp, { strides: sp.map(() => 1), pads: [...sp, ...sp].map(() => 0) });
      const [out] = this.node(kind, [x.name], [['float32', y.shape]]);
      return this.result(out, y, { reuse: kind === 'GlobalMaxPool' ? x.p : null });
    }
    const k = sp.map((d) => this.int(1, Math.min(3, d)));
    const pads = [...k, ...k].map((kk) => (kk > 1 && this.chance(0.3) ? this.int(0, kk - 1) : 0));
    const strides = k.map((kk) => (this.chance(0.5) ? kk : this.int(1, 2)));
    const countIncludePad = kind === 'AveragePool' && pads.some((p) => p) && this.chance(0.4);
    if (geometry(x.t, k, { strides, pads, dilations: [1, 1] }).outSpatial.some((d) => d < 1)) return false;
    const attrs = { kernel_shape: k };
    if (strides.some((s) => s !== 1) || this.chance(0.2)) attrs.strides = strides;
    if (pads.some((p) => p)) attrs.pads = pads;
    if (countIncludePad) attrs.count_include_pad = 1;
    const y = poolT(x.t, kind === 'MaxPool' ? 'max' : 'avg', k, { strides, pads, countIncludePad });
    const outs = [['float32', y.shape]];
    let indices = null;
    if (kind === 'MaxPool' && this.chance(0.1)) {
      indices = this.name('v');
      outs.push(['int64', y.shape, indices]);
    }
    const [out] = this.node(kind, [x.name], outs, attrs);
    if (indices && this.chance(0.5)) this.hidden.add(indices);   // declared, read by nobody
    return this.result(out, y, { reuse: kind === 'MaxPool' ? x.p : null });
  }

  concat() {
    const a = this.findAct((v) => v.t.shape.length >= 1);
    if (!a) return false;
    const r = a.t.shape.length;
    const axis = this.int(0, r - 1);
    const fits = (v) => v.t.shape.length === r && v.t.shape.every((d, i) => i === axis || d === a.t.shape[i]);
    let parts = [a];
    for (let k = this.int(1, 2); k > 0; k--) parts.push(this.findAct((v) => fits(v)) ?? this.redequantize(a));
    parts = this.shuffle(parts);
    let common = null;
    if (this.chance(0.45)) {
      // One set of params for every input and the output (what makes the Concat integer):
      // each input requantized to it.
      common = this.calib(concatT(parts.map((p) => p.t), axis));
      parts = parts.map((p) => this.dequantize(this.quantize(p, common), common));
    }
    const y = concatT(parts.map((p) => p.t), axis);
    const attrs = { axis: this.opset >= 11 && this.chance(0.3) ? axis - r : axis };
    const [out] = this.node('Concat', parts.map((p) => p.name), [['float32', y.shape]], attrs);
    return this.result(out, y, { params: common && this.chance(0.9) ? common : null, reuse: parts[0].p });
  }

  movement() {
    const x = this.findAct((v) => v.t.shape.length >= 1);
    if (!x) return false;
    const s = x.t.shape;
    const r = s.length;
    const op = this.pick(['Reshape', 'Reshape', 'Transpose', 'Transpose', 'Flatten', 'Squeeze', 'Unsqueeze', 'Slice', 'Slice', 'Gather', 'Identity']);
    let y;
    let inputs = [x.name];
    const attrs = {};
    if (op === 'Reshape') {
      const n = numel(s);
      const divisors = range(n).map((i) => i + 1).filter((d) => n % d === 0);
      const a = this.pick(divisors);
      let shape = this.pick([[n], [a, n / a], [s[0], n / s[0]], [1, n], [...s].reverse()]);
      if (shape.length > 1 && this.chance(0.3)) shape = shape.map((d, i) => (i === shape.length - 1 ? -1 : d));
      const dims = shape.map((d) => (d === -1 ? n / numel(shape.filter((e) => e !== -1)) : d));
      const written = shape.map((d, i) => (i < r && d === s[i] && this.chance(0.3) ? 0 : d));
      inputs = [x.name, this.int64s(written)];
      y = tensor(dims, x.t.data);
    } else if (op === 'Identity') {
      y = x.t;
    } else if (op === 'Transpose') {
      if (r < 2) return false;
      const perm = this.chance(0.2) ? range(r).reverse() : this.shuffle(range(r));
      if (!(this.chance(0.2) && perm.every((p, i) => p === r - 1 - i))) attrs.perm = perm;
      y = transposeT(x.t, perm);
    } else if (op === 'Flatten') {
      const axis = this.int(0, r);
      attrs.axis = this.opset >= 11 && axis < r && this.chance(0.3) ? axis - r : axis;
      if (axis === 1 && this.chance(0.3)) delete attrs.axis;
      y = tensor([numel(s.slice(0, axis)), numel(s.slice(axis))], x.t.data);
    } else if (op === 'Squeeze') {
      const ones = range(r).filter((i) => s[i] === 1);
      if (!ones.length) return false;
      const axes = ones.filter(() => this.chance(0.7));
      if (!axes.length) axes.push(ones[0]);
      if (this.opset >= 13) inputs = [x.name, this.int64s(axes)];
      else attrs.axes = axes;
      y = tensor(s.filter((_, i) => !axes.includes(i)), x.t.data);
    } else if (op === 'Unsqueeze') {
      if (r >= 5) return false;
      const at = this.int(0, r);
      const shape = [...s.slice(0, at), 1, ...s.slice(at)];
      if (this.opset >= 13) inputs = [x.name, this.int64s([at])];
      else attrs.axes = [at];
      y = tensor(shape, x.t.data);
    } else if (op === 'Slice') {
      const axes = this.shuffle(range(r)).slice(0, this.int(1, r));
      const starts = [];
      const ends = [];
      const steps = [];
      const lists = s.map((d) => range(d));
      for (const a of axes) {
        const d = s[a];
        const step = this.opset >= 10 && this.chance(0.2) ? this.pick([2, -1]) : 1;
        let st;
        let en;
        if (step > 0) { st = this.int(0, d - 1); en = this.int(st + 1, d); if (this.chance(0.15)) en = 1e9; }
        else { st = this.int(0, d - 1); en = this.int(-1, st - 1); if (en === -1) en = -1e9; }
        starts.push(st);
        ends.push(en);
        steps.push(step);
        const keep = [];
        if (step > 0) for (let i = st; i < Math.min(en, d); i += step) keep.push(i);
        else for (let i = st; i > Math.max(en, -1); i += step) keep.push(i);
        lists[a] = keep;
      }
      if (lists.some((l) => !l.length)) return false;
      if (this.opset >= 10) {
        const withSteps = steps.some((t) => t !== 1) || this.chance(0.2);
        inputs = [x.name, this.int64s(starts), this.int64s(ends)];
        // Without axes, starts and ends are for axes 0, 1, ...
        const inOrder = axes.every((a, i) => a === i);
        if (withSteps || !inOrder || this.chance(0.7)) inputs.push(this.int64s(axes));
        if (withSteps) inputs.push(this.int64s(steps));
      } else {
        Object.assign(attrs, { starts, ends: ends.map((e) => Math.min(e, 1e9)), axes });
      }
      y = selectT(x.t, lists);
    } else {
      const axis = this.int(0, r - 1);
      const d = s[axis];
      const scalar = r > 1 && this.chance(0.3);
      const idx = Array.from({ length: scalar ? 1 : this.int(1, 3) }, () => this.int(this.opset >= 11 ? -d : 0, d - 1));
      const lists = s.map((dd) => range(dd));
      lists[axis] = idx.map((i) => (i < 0 ? i + d : i));
      const picked = selectT(x.t, lists);
      const shape = scalar ? s.filter((_, i) => i !== axis) : picked.shape;
      inputs = [x.name, scalar ? this.konst('int64', [], BigInt64Array.from([BigInt(idx[0])])) : this.int64s(idx)];
      if (axis !== 0 || this.chance(0.3)) attrs.axis = this.opset >= 11 && this.chance(0.2) ? axis - r : axis;
      y = tensor(shape, picked.data);
    }
    if (!y.shape.length || numel(y.shape) === 0) return false;
    const [out] = this.node(op, inputs, [['float32', y.shape]], attrs);
    return this.result(out, y, { reuse: x.p });
  }

  softmax() {
    const x = this.findAct((v) => v.t.shape.length >= 1);
    if (!x) return false;
    const r = x.t.shape.length;
    const axis = this.int(0, r - 1);
    const attrs = this.opset < 13 || axis !== r - 1 || this.chance(0.3) ? { axis } : {};
    const y = softmaxT(x.t, axis, this.opset < 13);
    const [out] = this.node('Softmax', [x.name], [['float32', y.shape]], attrs);
    return this.result(out, y);
  }

  // A dequantized value quantized again: with its own params (a DQ -> Q pair that gives back the
  // integers), or others (a requantization).
  requant() {
    const x = this.findAct((a) => a.p);
    if (!x) return false;
    const p = this.chance(0.6) ? x.p : this.calib(x.t);
    const q = this.quantize(x, p);
    if (this.chance(0.1)) return true;   // the integers are a graph output
    this.addAct(this.dequantize(q, p));
    return true;
  }

  // Another graph input joins in the middle.
  newInput() {
    return !!this.freshInput(this.startShape());
  }

  // The float result `t` of node output `name`: quantized (reusing the input's params for data
  // movement now and then, as quantizers do), or left float.
  result(name, t, { reuse = null, params = null, relu = false } = {}) {
    let p = params;
    if (!p && relu && this.chance(0.5)) {
      // After Relu/Clip quantizers often start the range at 0: uint8 with zero point 0 (or int8
      // with -128), so a Relu folds into the Q.
      const type = this.chance(0.7) ? 'uint8' : 'int8';
      let hi = 0;
      for (const v of t.data) hi = Math.max(hi, v);
      const s = fr(Math.max(hi, 1e-3) / 255 * (this.chance(0.1) ? 0.5 : this.uniform(0.9, 1.2)));
      p = this.finishParams({ type, scale: [s], zp: [type === 'uint8' ? 0 : -128], axis: -1 });
    }
    this.quantizeAct({ name, t }, { reuse, params: p });
    return true;
  }

  startShape() {
    const family = this.pick(['conv', 'conv', 'conv1d', 'dense', 'dense3']);
    if (family === 'conv') return [this.pick([1, 2]), this.int(1, 4), this.int(2, 8), this.int(2, 8)];
    if (family === 'conv1d') return [this.pick([1, 2]), this.int(1, 4), this.int(3, 10)];
    if (family === 'dense') return [this.int(1, 4), this.int(2, 16)];
    return [this.pick([1, 2]), this.int(1, 4), this.int(2, 12)];
  }
}

const WEIGHTS = { conv: 5, matmul: 3, gemm: 2, binary: 3, unary: 3, pool: 2, concat: 2, movement: 4, requant: 1, softmax: 0.5, newInput: 0.5 };
export const QDQ_EMITTERS = Object.keys(WEIGHTS);
const TOTAL = Object.values(WEIGHTS).reduce((a, b) => a + b, 0);

/**
 * The QDQ model of `seed`: a spec for buildModel plus `types`, `dims`, `ops` and `quant: true`.
 * Options: without (QDQ_EMITTERS not to generate: the same seed then gives another model).
 */
export function generateQdq(seed, opts = {}) {
  const g = new QGen(seed, opts);
  g.freshInput(g.startShape());
  const stages = g.int(1, 7);
  for (let done = 0, guard = 0; done < stages && guard < 100; guard++) {
    let x = g.rand() * TOTAL;
    let e = 'conv';
    for (const [k, w] of Object.entries(WEIGHTS)) if ((x -= w) < 0) { e = k; break; }
    if (!g.without.has(e) && g[e]()) done++;
  }
  // Outputs: every result nothing reads (DQ outputs, float results, now and then a Q output),
  // plus now and then an inner value.
  const produced = new Set(g.nodes.filter((n) => n.op !== 'Constant').flatMap((n) => n.outputs));
  const read = new Set(g.nodes.flatMap((n) => n.inputs));
  const outs = [...produced].filter((n) => !read.has(n) && !g.hidden.has(n));
  const inner = [...produced].filter((n) => !outs.includes(n) && !g.hidden.has(n) && g.types[n].type === 'float32');
  if (inner.length && g.chance(0.2)) outs.push(g.pick(inner));
  if (!outs.length) return generateQdq(seed + 0x9e3779b9, opts);
  return {
    seed,
    opset: g.opset,
    irVersion: g.opset >= 21 ? 10 : 8,
    inputs: g.inputs,
    outputs: outs.map((name) => ({ name, type: g.types[name].type })),
    initializers: g.initializers,
    nodes: g.nodes,
    functions: [],
    imports: [],
    types: g.types,
    dims: { batch: 2 },
    ops: [...g.ops].sort(),
    discontinuous: true,
    random: false,
    quant: true,
  };
}

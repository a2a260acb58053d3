// What the checker reads from a serialized model, without a protobuf library:
//
//   mainGraph(bytes)          the main graph's nodes (op, inputs, outputs, attributes) and its
//                             constants (initializers and Constant outputs) as typed arrays:
//                             enough to find what quantizes each graph output (check.mjs)
//   perturbConstants(bytes, seed, mirror)
//                             a copy of the model with every float32 constant (initializers,
//                             tensor attributes: Constant values, ..., in every graph and local
//                             function) moved by one float32 ulp, up or down by a seeded coin
//                             (mirror: each the other way), and float64 constants by the same
//                             relative amount (2^-23); the bytes change in place, so nothing
//                             else in the model does
//   floatSpans(bytes)         where every float constant's payload is (float16-reference.mjs
//                             rounds them)
//   cursor(b, start, end)     the fields of one message (float16-reference.mjs rewrites graphs)
//
// Field numbers are onnx.proto's.

import { mulberry32 } from '../../node/oracle.mjs';

// A cursor over a message's bytes: [field, wire, keyStart, start, end, value] per entry, start/end
// of the value (absolute offsets in the buffer; b.subarray(keyStart, end) is the whole field),
// value the number of a varint.
export function* cursor(b, start, end) {
  let p = start;
  const varint = () => {
    let x = 0;
    let mul = 1;
    for (;;) {
      const byte = b[p++];
      x += (byte & 0x7f) * mul;
      if (!(byte & 0x80)) return x;
      mul *= 128;
    }
  };
  while (p < end) {
    const k = p;
    const key = varint();
    const field = Math.floor(key / 8);
    const wire = key % 8;
    if (wire === 0) {
      const s = p;
      const v = varint();
      yield [field, wire, k, s, p, v];
    } else if (wire === 2) {
      const n = varint();
      yield [field, wire, k, p, p + n];
      p += n;
    } else if (wire === 5 || wire === 1) {
      const n = wire === 5 ? 4 : 8;
      yield [field, wire, k, p, p + n];
      p += n;
    } else {
      throw new Error(`onnx-walk: unsupported wire type ${wire}`);
    }
  }
}
// [field, wire, start, end, value]: the cursor without the key's offset.
function* entries(b, start, end) {
  for (const [f, w, , s, e, v] of cursor(b, start, end)) yield [f, w, s, e, v];
}
function packedVarints(b, s, e) {
  const out = [];
  let p = s;
  while (p < e) {
    let x = 0;
    let mul = 1;
    for (;;) {
      const byte = b[p++];
      x += (byte & 0x7f) * mul;
      if (!(byte & 0x80)) break;
      mul *= 128;
    }
    out.push(x);
  }
  return out;
}
const text = (b, s, e) => new TextDecoder().decode(b.subarray(s, e));
// Signed 64-bit from a varint read as a non-negative double (exact for small magnitudes).
const signed = (v) => (v >= 2 ** 63 ? v - 2 ** 64 : v);

const DTYPES = { 1: 'float32', 2: 'uint8', 3: 'int8', 4: 'uint16', 5: 'int16', 6: 'int32', 7: 'int64', 9: 'bool', 10: 'float16', 11: 'float64' };
const ARRAYS = { float32: Float32Array, uint8: Uint8Array, int8: Int8Array, uint16: Uint16Array, int16: Int16Array,
  int32: Int32Array, float64: Float64Array };

// A TensorProto: {name, type, dims, data (a typed array, or null when not read), spans}, spans
// being where its float payload is: [{kind: 'f32' | 'f64', start, end}].
function tensorAt(b, s, e) {
  const t = { name: '', type: '', dims: [], data: null, spans: [] };
  let raw = null;
  const floats = [];
  const doubles = [];
  const ints = [];
  for (const [f, w, vs, ve, v] of entries(b, s, e)) {
    if (f === 1) t.dims.push(...(w === 2 ? packedVarints(b, vs, ve) : [v]));
    else if (f === 2) t.type = DTYPES[v] ?? String(v);
    else if (f === 8) t.name = text(b, vs, ve);
    else if (f === 9) raw = [vs, ve];
    else if (f === 4) floats.push([vs, ve]);
    else if (f === 10) doubles.push([vs, ve]);
    else if (f === 5 || f === 7) ints.push(...(w === 2 ? packedVarints(b, vs, ve) : [v]).map(signed));
  }
  const Ctor = ARRAYS[t.type];
  if (raw && Ctor) {
    const bytes = b.slice(raw[0], raw[1]);
    t.data = new Ctor(bytes.buffer, 0, bytes.length / Ctor.BYTES_PER_ELEMENT);
    if (t.type === 'float32') t.spans.push({ kind: 'f32', start: raw[0], end: raw[1] });
    if (t.type === 'float64') t.spans.push({ kind: 'f64', start: raw[0], end: raw[1] });
  } else if (t.type === 'float32' && floats.length) {
    const parts = floats.map(([vs, ve]) => new Float32Array(b.slice(vs, ve).buffer));
    t.data = Float32Array.from(parts.flatMap((p) => [...p]));
    for (const [vs, ve] of floats) t.spans.push({ kind: 'f32', start: vs, end: ve });
  } else if (t.type === 'float64' && doubles.length) {
    for (const [vs, ve] of doubles) t.spans.push({ kind: 'f64', start: vs, end: ve });
  } else if (Ctor && ints.length) {
    t.data = Ctor.from(ints);
  }
  return t;
}

// AttributeProto -> [name, value, {tensors, graphs}] (value: number, number[], string, tensor).
function attributeAt(b, s, e) {
  let name = '';
  let value;
  const ints = [];
  const floats = [];
  const tensors = [];
  const graphs = [];
  for (const [f, w, vs, ve, v] of entries(b, s, e)) {
    if (f === 1) name = text(b, vs, ve);
    else if (f === 2) value = new DataView(b.buffer, b.byteOffset + vs, 4).getFloat32(0, true);
    else if (f === 3) value = signed(v);
    else if (f === 4) value = text(b, vs, ve);
    else if (f === 5 || f === 10) tensors.push([vs, ve]);
    else if (f === 6 || f === 11) graphs.push([vs, ve]);
    else if (f === 7) {
      if (w === 2) for (let p = vs; p < ve; p += 4) floats.push(new DataView(b.buffer, b.byteOffset + p, 4).getFloat32(0, true));
      else floats.push(new DataView(b.buffer, b.byteOffset + vs, 4).getFloat32(0, true));
    } else if (f === 8) ints.push(...(w === 2 ? packedVarints(b, vs, ve) : [v]).map(signed));
  }
  if (tensors.length) value = tensorAt(b, ...tensors[0]);
  else if (ints.length) value = ints;
  else if (floats.length) value = floats;
  return [name, value, { tensors, graphs }];
}

function nodeAt(b, s, e) {
  const n = { op: '', domain: '', inputs: [], outputs: [], attrs: {}, tensors: [], graphs: [] };
  for (const [f, , vs, ve] of entries(b, s, e)) {
    if (f === 1) n.inputs.push(text(b, vs, ve));
    else if (f === 2) n.outputs.push(text(b, vs, ve));
    else if (f === 4) n.op = text(b, vs, ve);
    else if (f === 7) n.domain = text(b, vs, ve);
    else if (f === 5) {
      const [name, value, { tensors, graphs }] = attributeAt(b, vs, ve);
      n.attrs[name] = value;
      n.tensors.push(...tensors);
      n.graphs.push(...graphs);
    }
  }
  return n;
}

function graphSpan(b) {
  for (const [f, , vs, ve] of entries(b, 0, b.length)) if (f === 7) return [vs, ve];
  throw new Error('onnx-walk: no graph');
}

/**
 * The main graph: {nodes, constants: Map name -> tensor (initializers, Constant 'value'
 * outputs), inputs: [names] (initializers that are also inputs among them), outputs: [names]}.
 */
export function mainGraph(bytes) {
  const b = bytes;
  const [gs, ge] = graphSpan(b);
  const g = { nodes: [], constants: new Map(), inputs: [], outputs: [] };
  for (const [f, , vs, ve] of entries(b, gs, ge)) {
    if (f === 1) g.nodes.push(nodeAt(b, vs, ve));
    else if (f === 5) { const t = tensorAt(b, vs, ve); g.constants.set(t.name, t); }
    else if (f === 11 || f === 12) {
      for (const [vf, , ns, ne] of entries(b, vs, ve)) if (vf === 1) g[f === 11 ? 'inputs' : 'outputs'].push(text(b, ns, ne));
    }
  }
  for (const n of g.nodes) {
    if (n.op === 'Constant' && n.attrs.value?.type) g.constants.set(n.outputs[0], n.attrs.value);
  }
  return g;
}

// Every float constant's payload spans, in every graph and function of the model.
export function floatSpans(b) {
  const spans = [];
  const graph = (s, e) => {
    for (const [f, , vs, ve] of entries(b, s, e)) {
      if (f === 1) node(vs, ve);
      else if (f === 5) spans.push(...tensorAt(b, vs, ve).spans);
    }
  };
  const node = (s, e) => {
    const n = nodeAt(b, s, e);
    for (const [ts, te] of n.tensors) spans.push(...tensorAt(b, ts, te).spans);
    for (const [as, ae] of n.graphs) graph(as, ae);
    // Constant's value_float / value_floats: float attributes in place.
    if (n.op !== 'Constant') return;
    for (const [f, , vs, ve] of entries(b, s, e)) {
      if (f !== 5) continue;
      let name = '';
      for (const [af, , xs, xe] of entries(b, vs, ve)) if (af === 1) name = text(b, xs, xe);
      if (name !== 'value_float' && name !== 'value_floats') continue;
      for (const [af, , xs, xe] of entries(b, vs, ve)) if (af === 2 || af === 7) spans.push({ kind: 'f32', start: xs, end: xe });
    }
  };
  for (const [f, , vs, ve] of entries(b, 0, b.length)) {
    if (f === 7) graph(vs, ve);
    else if (f === 25) for (const [ff, , ns, ne] of entries(b, vs, ve)) if (ff === 7) node(ns, ne);
  }
  return spans;
}

/**
 * A copy of `bytes` with every float constant moved by about `ulps` float32 ulps (seeded signs;
 * `mirror` flips them all). Returns {bytes, count} (count: the values moved).
 */
export function perturbConstants(bytes, seed, mirror = false, ulps = 1) {
  const out = bytes.slice();
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const rand = mulberry32(seed);
  let count = 0;
  for (const { kind, start, end } of floatSpans(out)) {
    const step = kind === 'f32' ? 4 : 8;
    for (let p = start; p + step <= end; p += step) {
      const up = (rand() < 0.5) !== mirror;
      if (kind === 'f32') {
        const bits = view.getUint32(p, true);
        // One ulp away from or towards zero: the integer next to the bits (0, inf, NaN and the
        // largest float stay).
        const next = up ? bits + ulps : bits - ulps;
        if ((bits & 0x7fffffff) < ulps || (bits & 0x7f800000) === 0x7f800000 || (next & 0x7f800000) === 0x7f800000) continue;
        view.setUint32(p, next, true);
      } else {
        const x = view.getFloat64(p, true);
        if (x === 0 || !Number.isFinite(x)) continue;
        view.setFloat64(p, x * (1 + (up ? 1 : -1) * ulps * 2 ** -23), true);
      }
      count++;
    }
  }
  return { bytes: out, count };
}

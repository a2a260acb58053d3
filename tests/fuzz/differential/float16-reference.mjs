// The ideal float16 conversion of a model, as a reference for the float16 mode: the original
// computed in float32, with every float32 value stored in float16 (each constant, each input and
// each node's output rounded to the nearest float16). What float16 storage loses there, any
// float16 conversion loses; a conversion that computes something else (a wrong weight,
// saturation, a float32-only op fed float16) stays as far from this reference as from the
// original.
//
//   const r = await float16Reference(bytes, files);   // null when the model's types cannot be inferred
//   r.bytes       the rounded model: a Cast to float16 and back after every float32 node output
//                 (every graph and subgraph; local functions inlined first), float32 constants
//                 rounded in place
//   r.files       its external data ({location: bytes}, as the model's own: constants kept
//                 there are not rounded), or null
//   r.feeds(f)    the feeds with their float32 tensors rounded
//
// The types come from onnxfold's own inference (inline-functions, infer-shapes): they only say
// where a rounding goes, so a type inferred wrong can cost a rounding, not change the function.
import ort from 'onnxruntime-node';
import { OnnxfoldError, optimize } from '../../../js/index.js';
import { cursor, floatSpans } from './onnx-walk.mjs';

/** x rounded to the nearest float16 value (ties to even), as a number. */
export function roundToHalf(x) {
  if (!Number.isFinite(x) || x === 0) return x;
  const a = Math.abs(x);
  // 65520 is halfway between the largest float16 (65504) and 2^16: it and all above overflow.
  if (a >= 65520) return Math.sign(x) * Infinity;
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  if (2 ** (e + 1) <= a) e++;
  const spacing = 2 ** (Math.max(e, -14) - 10);   // subnormals below 2^-14
  const m = a / spacing;
  const f = Math.floor(m);
  const n = m - f > 0.5 || (m - f === 0.5 && f % 2 === 1) ? f + 1 : f;
  return Math.sign(x) * n * spacing;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function varint(n) {
  const out = [];
  while (n >= 128) {
    out.push((n % 128) | 128);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}
const concat = (parts) => {
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
};
// A length-delimited field: key, length, payload.
const lengthField = (field, payload) => concat([Uint8Array.from([...varint(field * 8 + 2), ...varint(payload.length)]), payload]);
const stringField = (field, s) => lengthField(field, encoder.encode(s));
const varintField = (field, v) => Uint8Array.from([...varint(field * 8), ...varint(v)]);

const FLOAT = 1;
const FLOAT16 = 10;

// NodeProto Cast(input) -> output, to = `to` (fields: input 1, output 2, op_type 4, attribute 5;
// AttributeProto: name 1, i 3, type 20 = INT 2).
const castNode = (input, output, to) => concat([stringField(1, input), stringField(2, output), stringField(4, 'Cast'),
  lengthField(5, concat([stringField(1, 'to'), varintField(3, to), varintField(20, 2)]))]);

// The names a graph types float32: its inputs, outputs and value_info (ValueInfoProto name 1,
// type 2; TypeProto tensor_type 1; elem_type 1).
function float32Names(b, s, e) {
  const names = new Set();
  for (const [f, , , vs, ve] of cursor(b, s, e)) {
    if (f !== 11 && f !== 12 && f !== 13) continue;
    let name = '';
    let type = 0;
    for (const [vf, , , ns, ne] of cursor(b, vs, ve)) {
      if (vf === 1) name = decoder.decode(b.subarray(ns, ne));
      else if (vf === 2) {
        for (const [tf, , , ts, te] of cursor(b, ns, ne)) {
          if (tf !== 1) continue;
          for (const [ef, , , , , v] of cursor(b, ts, te)) if (ef === 1) type = v;
        }
      }
    }
    if (type === FLOAT) names.add(name);
  }
  return names;
}

// A GraphProto with a rounding after each float32 node output (subgraphs too).
function roundGraph(b, s, e, counter) {
  const floats = float32Names(b, s, e);
  const parts = [];
  for (const [f, , ks, vs, ve] of cursor(b, s, e)) {
    if (f !== 1) { parts.push(b.subarray(ks, ve)); continue; }
    const node = [];
    const rounded = [];
    for (const [nf, , nks, nvs, nve] of cursor(b, vs, ve)) {
      if (nf === 2) {
        const name = decoder.decode(b.subarray(nvs, nve));
        if (floats.has(name)) {
          const raw = `${name}__float32_${counter.n++}`;
          node.push(stringField(2, raw));
          rounded.push([raw, name]);
          continue;
        }
      } else if (nf === 5) {
        node.push(lengthField(5, roundAttribute(b, nvs, nve, counter)));
        continue;
      }
      node.push(b.subarray(nks, nve));
    }
    parts.push(lengthField(1, concat(node)));
    for (const [raw, name] of rounded) {
      const half = `${raw}_float16`;
      parts.push(lengthField(1, castNode(raw, half, FLOAT16)), lengthField(1, castNode(half, name, FLOAT)));
    }
  }
  return concat(parts);
}

// An AttributeProto with its graphs (g 6, graphs 11) rounded.
function roundAttribute(b, s, e, counter) {
  const parts = [];
  for (const [f, , ks, vs, ve] of cursor(b, s, e)) {
    parts.push(f === 6 || f === 11 ? lengthField(f, roundGraph(b, vs, ve, counter)) : b.subarray(ks, ve));
  }
  return concat(parts);
}

/**
 * The original with every float32 value stored in float16 (see the top of this file), or null
 * when onnxfold cannot type it (it refuses the model).
 */
export async function float16Reference(bytes, files = null) {
  let typed;
  let external;
  try {
    // output 'bytes': the model and its external data as Uint8Arrays.
    const r = await optimize(bytes, { output: 'bytes', passes: ['inline-functions', 'infer-shapes'], ...(files ? { externalData: files } : {}) });
    typed = r.model;
    external = Object.keys(r.externalData).length ? r.externalData : null;
  } catch (e) {
    if (e instanceof OnnxfoldError) return null;
    throw e;
  }
  // Constants: rounded in place (raw_data and float_data of initializers, Constant values; the
  // typed model is this function's own copy).
  const b = typed;
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  for (const { kind, start, end } of floatSpans(b)) {
    if (kind !== 'f32') continue;
    for (let p = start; p + 4 <= end; p += 4) view.setFloat32(p, roundToHalf(view.getFloat32(p, true)), true);
  }
  const counter = { n: 0 };
  const parts = [];
  for (const [f, , ks, vs, ve] of cursor(b, 0, b.length)) {
    parts.push(f === 7 ? lengthField(7, roundGraph(b, vs, ve, counter)) : b.subarray(ks, ve));
  }
  const feeds = (fs) => Object.fromEntries(Object.entries(fs).map(([k, t]) => [k, t.type !== 'float32' ? t
    : new ort.Tensor('float32', Float32Array.from(t.data, roundToHalf), t.dims)]));
  return { bytes: concat(parts), files: external, feeds };
}

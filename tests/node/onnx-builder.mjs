// Minimal hand-written ONNX (protobuf) encoder for building tiny test models in JS.
// Only the fields needed by tests are supported. Field numbers follow onnx.proto.

const DTYPES = {
  float32: 1,
  uint8: 2,
  int8: 3,
  uint16: 4,
  int16: 5,
  int32: 6,
  int64: 7,
  string: 8,
  bool: 9,
  float16: 10,
  float64: 11,
  uint32: 12,
  uint64: 13,
};

class Writer {
  constructor() {
    this.parts = [];
    this.size = 0;
  }
  bytes(b) {
    this.parts.push(b);
    this.size += b.length;
    return this;
  }
  varint(v) {
    let x = BigInt.asUintN(64, BigInt(v));
    const out = [];
    do {
      let byte = Number(x & 0x7fn);
      x >>= 7n;
      if (x) byte |= 0x80;
      out.push(byte);
    } while (x);
    return this.bytes(Uint8Array.from(out));
  }
  tag(field, wire) {
    return this.varint((field << 3) | wire);
  }
  int(field, v) {
    return this.tag(field, 0).varint(v);
  }
  lenField(field, b) {
    return this.tag(field, 2).varint(b.length).bytes(b);
  }
  str(field, s) {
    return this.lenField(field, new TextEncoder().encode(s));
  }
  msg(field, w) {
    return this.lenField(field, w.finish());
  }
  float(field, v) {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    return this.tag(field, 5).bytes(b);
  }
  finish() {
    const out = new Uint8Array(this.size);
    let off = 0;
    for (const p of this.parts) {
      out.set(p, off);
      off += p.length;
    }
    return out;
  }
}

function dtypeId(type) {
  const id = typeof type === 'number' ? type : DTYPES[type];
  if (!id) throw new Error(`onnx-builder: unknown dtype ${type}`);
  return id;
}

function valueInfo({ name, type = 'float32', shape }) {
  const tensor = new Writer().int(1, dtypeId(type));
  if (shape) {
    const s = new Writer();
    for (const d of shape) {
      const dim = new Writer();
      if (typeof d === 'string') dim.str(2, d);
      else dim.int(1, d);
      s.msg(1, dim);
    }
    tensor.msg(2, s);
  }
  return putName(new Writer(), 1, name).msg(2, new Writer().msg(1, tensor));
}

function tensorProto({ name, type = 'float32', dims, data, strings, external }) {
  const w = new Writer();
  for (const d of dims) w.int(1, d);
  w.int(2, dtypeId(type));
  if (name !== undefined) w.str(8, name);
  if (external) {
    // {location, offset?, length?}: external_data entries, data_location EXTERNAL
    for (const [k, v] of Object.entries(external)) w.msg(13, new Writer().str(1, k).str(2, String(v)));
    return w.int(14, 1);
  }
  if (type === 'string') {
    for (const s of strings ?? data) w.str(6, s); // string_data
    return w;
  }
  const view = ArrayBuffer.isView(data) ? data : Float32Array.from(data);
  w.lenField(9, new Uint8Array(view.buffer, view.byteOffset, view.byteLength)); // raw_data (little-endian host)
  return w;
}

function attribute(name, v) {
  const w = new Writer().str(1, name);
  if ((typeof v === 'number' && Number.isInteger(v)) || typeof v === 'bigint') return w.int(20, 2).int(3, v);
  if (typeof v === 'number') return w.int(20, 1).float(2, v);
  // {float: 2} / {floats: [0, 1]}: a float attribute whose values happen to be whole numbers.
  if (v && typeof v.float === 'number') return w.int(20, 1).float(2, v.float);
  if (v && Array.isArray(v.floats)) {
    w.int(20, 6);
    for (const x of v.floats) w.float(7, x);
    return w;
  }
  if (typeof v === 'string') return w.int(20, 3).str(4, v);
  if (Array.isArray(v) && v.every((x) => Number.isInteger(x) || typeof x === 'bigint')) {
    w.int(20, 7);
    for (const x of v) w.int(8, x);
    return w;
  }
  if (Array.isArray(v)) {
    w.int(20, 6);
    for (const x of v) w.float(7, x);
    return w;
  }
  if (v && v.dims) return w.int(20, 4).msg(5, tensorProto(v));
  if (v && v.graph) return w.int(20, 5).msg(6, graphProto(v.graph));
  if (v && v.ref) return w.int(20, v.type ?? 2).str(21, v.ref); // ref_attr_name (functions)
  throw new Error(`onnx-builder: unsupported attribute ${name}`);
}

// A name as text, or as raw bytes (a Uint8Array: names that are not UTF-8).
function putName(w, field, s) {
  return s instanceof Uint8Array ? w.lenField(field, s) : w.str(field, s);
}

function nodeProto(n, i) {
  const nw = new Writer();
  for (const x of n.inputs) putName(nw, 1, x);
  for (const x of n.outputs) putName(nw, 2, x);
  putName(nw, 3, n.name ?? `${n.op}_${i}`).str(4, n.op);
  for (const [k, v] of Object.entries(n.attrs ?? {})) nw.msg(5, attribute(k, v));
  if (n.domain) nw.str(7, n.domain);
  return nw;
}

function sparseProto({ values, indices, dims }) {
  const w = new Writer().msg(1, tensorProto(values)).msg(2, tensorProto(indices));
  for (const d of dims) w.int(3, d);
  return w;
}

/** A GraphProto: {name, inputs, outputs, initializers, sparseInitializers, nodes}. */
function graphProto({
  name: graphName = 'g',
  inputs = [],
  outputs = [],
  initializers = [],
  sparseInitializers = [],
  nodes = [],
}) {
  const g = new Writer();
  nodes.forEach((n, i) => g.msg(1, nodeProto(n, i)));
  g.str(2, graphName);
  for (const t of initializers) g.msg(5, tensorProto(t));
  for (const v of inputs) g.msg(11, valueInfo(v));
  for (const v of outputs) g.msg(12, valueInfo(v));
  for (const s of sparseInitializers) g.msg(15, sparseProto(s));
  return g;
}

/**
 * buildModel({opset, inputs, outputs, initializers, nodes}) -> Uint8Array (serialized ModelProto)
 *   inputs/outputs: [{name, type, shape}]   (shape entries: number or symbolic string)
 *   initializers:   [{name, type, dims, data}] (data: TypedArray or number[] for float32)
 *   nodes:          [{op, inputs, outputs, name?, domain?, attrs?: {name: value}}]
 *                   (attribute values: numbers, strings, arrays, tensors, {graph}, {ref};
 *                   {float: x} / {floats: [...]} for float attributes with whole values)
 *   sparseInitializers: [{values: tensor, indices: int64 tensor, dims}]
 *   irVersion: null leaves it out; imports: extra [{domain, version}];
 *   functions: [{name, domain, inputs: [names], outputs: [names], attributes: [names], nodes,
 *                imports: [{domain, version}]}]
 */
export function buildModel({
  opset = 13,
  irVersion = 8,
  graphName = 'g',
  inputs = [],
  outputs = [],
  initializers = [],
  sparseInitializers = [],
  nodes = [],
  imports = [],
  functions = [],
}) {
  const g = graphProto({ name: graphName, inputs, outputs, initializers, sparseInitializers, nodes });
  const m = new Writer();
  if (irVersion !== null) m.int(1, irVersion);
  m.str(2, 'onnxfold-tests').msg(7, g);
  m.msg(8, new Writer().str(1, '').int(2, opset));
  for (const o of imports) m.msg(8, new Writer().str(1, o.domain).int(2, o.version));
  for (const f of functions) {
    const fw = new Writer().str(1, f.name);
    for (const x of f.inputs) fw.str(4, x);
    for (const x of f.outputs) fw.str(5, x);
    for (const x of f.attributes ?? []) fw.str(6, x);
    f.nodes.forEach((n, i) => fw.msg(7, nodeProto(n, i)));
    for (const o of f.imports ?? [{ domain: '', version: opset }])
      fw.msg(9, new Writer().str(1, o.domain).int(2, o.version));
    fw.str(10, f.domain);
    m.msg(25, fw);
  }
  return m.finish();
}

// ---------------------------------------------------------------- reading

class Reader {
  constructor(bytes) {
    this.b = bytes;
    this.pos = 0;
  }
  done() {
    return this.pos >= this.b.length;
  }
  varint() {
    let x = 0n;
    let shift = 0n;
    for (;;) {
      const byte = this.b[this.pos++];
      x |= BigInt(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return x;
      shift += 7n;
    }
  }
  // [field, wire, value]: value is a BigInt (varint), a Uint8Array (length-delimited) or bytes (fixed).
  next() {
    const key = Number(this.varint());
    const field = key >>> 3;
    const wire = key & 7;
    if (wire === 0) return [field, wire, this.varint()];
    if (wire === 2) {
      const n = Number(this.varint());
      const v = this.b.subarray(this.pos, this.pos + n);
      this.pos += n;
      return [field, wire, v];
    }
    const n = wire === 5 ? 4 : wire === 1 ? 8 : -1;
    if (n < 0) throw new Error(`onnx-builder: unsupported wire type ${wire}`);
    const v = this.b.subarray(this.pos, this.pos + n);
    this.pos += n;
    return [field, wire, v];
  }
}

const text = (b) => new TextDecoder().decode(b);
const DTYPE_NAMES = Object.fromEntries(Object.entries(DTYPES).map(([k, v]) => [v, k]));

/**
 * readModel(bytes) -> {opsets: {domain: version}, nodes: [{op, domain, inputs, outputs}],
 *   initializers: [{name, type, dims, raw}]} for the main graph. Enough to check what an
 *   optimizer produced: tensors must use raw_data (what onnxfold writes); external data is
 *   not resolved (raw stays null).
 */
export function readModel(bytes) {
  const model = { opsets: {}, nodes: [], initializers: [] };
  const m = new Reader(bytes);
  while (!m.done()) {
    const [f, , v] = m.next();
    if (f === 8) {
      const o = new Reader(v);
      let domain = '';
      let version = 0;
      while (!o.done()) {
        const [g, , x] = o.next();
        if (g === 1) domain = text(x);
        if (g === 2) version = Number(x);
      }
      model.opsets[domain] = version;
    }
    if (f !== 7) continue;
    const g = new Reader(v);
    while (!g.done()) {
      const [gf, , gv] = g.next();
      if (gf === 1) {
        const node = { op: '', domain: '', inputs: [], outputs: [] };
        const n = new Reader(gv);
        while (!n.done()) {
          const [nf, , nv] = n.next();
          if (nf === 1) node.inputs.push(text(nv));
          else if (nf === 2) node.outputs.push(text(nv));
          else if (nf === 4) node.op = text(nv);
          else if (nf === 7) node.domain = text(nv);
        }
        model.nodes.push(node);
      } else if (gf === 5) {
        const t = { name: '', type: '', dims: [], raw: null };
        const r = new Reader(gv);
        while (!r.done()) {
          const [tf, tw, tv] = r.next();
          if (tf === 1 && tw === 0) t.dims.push(Number(tv));
          else if (tf === 1 && tw === 2) {
            const p = new Reader(tv);
            while (!p.done()) t.dims.push(Number(p.varint()));
          } else if (tf === 2) t.type = DTYPE_NAMES[Number(tv)] ?? String(tv);
          else if (tf === 8) t.name = text(tv);
          else if (tf === 9) t.raw = tv;
        }
        model.initializers.push(t);
      }
    }
  }
  return model;
}

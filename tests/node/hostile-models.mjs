// Invalid and hostile models, one per class of problem the validation issue lists, built here
// byte by byte (onnx-builder.mjs). Each entry says what onnxfold must do with it:
//   refuse: reject it with one clear error line (`error` must match) and write nothing;
//   any:    either refuse it the same way, or optimize it into a model that ONNX Runtime runs
//           with the same results (and that fails where the original fails at run time).
import { buildModel } from './onnx-builder.mjs';

const i64 = (name, dims, values) => ({ name, type: 'int64', dims, data: BigInt64Array.from(values.map(BigInt)) });
const f32 = (name, dims, values) => ({ name, type: 'float32', dims, data: Float32Array.from(values) });
const fill = (n, v = 1) => new Array(n).fill(v);
const I64_MAX = 9223372036854775807n;
const I64_MIN = -9223372036854775808n;

// One-node model: x (float [2, 3]) -> op -> y.
function unary(op, attrs = {}, { type = 'float32', shape = [2, 3], extra = [], initializers = [], opset = 13 } = {}) {
  return buildModel({
    opset,
    inputs: [{ name: 'x', type, shape }],
    outputs: [{ name: 'y' }],
    initializers,
    nodes: [{ op, name: 'n', inputs: ['x', ...extra], outputs: ['y'], attrs }],
  });
}

// A model whose every input is a constant: `nodes` compute y from initializers only.
function constant(nodes, initializers, { opset = 13, outputs = [{ name: 'y' }] } = {}) {
  return buildModel({ opset, inputs: [], outputs, initializers, nodes });
}

export const hostileModels = [
  // --- the model -----------------------------------------------------------------------------
  { name: 'no-ir-version', expect: 'refuse', error: /ir_version/,
    build: () => buildModel({ irVersion: null, inputs: [{ name: 'x', shape: [2] }], outputs: [{ name: 'y' }],
      nodes: [{ op: 'Neg', inputs: ['x'], outputs: ['y'] }] }) },
  { name: 'ir-version-from-the-future', expect: 'refuse', error: /ir_version 99 is newer/,
    build: () => buildModel({ irVersion: 99, inputs: [{ name: 'x', shape: [2] }], outputs: [{ name: 'y' }],
      nodes: [{ op: 'Neg', inputs: ['x'], outputs: ['y'] }] }) },
  { name: 'opset-from-the-future', expect: 'refuse', error: /opset 999 of ai\.onnx is newer than onnxfold knows/,
    build: () => unary('Neg', {}, { opset: 999 }) },
  { name: 'names-not-utf8', expect: 'refuse', error: /not valid UTF-8/,
    build: () => buildModel({ inputs: [{ name: Uint8Array.from([0x78, 0xff, 0xfe]), shape: [2] }], outputs: [{ name: 'y' }],
      nodes: [{ op: 'Neg', name: Uint8Array.from([0xc3, 0x28]), inputs: [Uint8Array.from([0x78, 0xff, 0xfe])], outputs: ['y'] }] }) },

  // --- nodes against their schema --------------------------------------------------------------
  { name: 'cast-to-unknown-type', expect: 'refuse', error: /'to' = 999 is not a known data type/,
    build: () => unary('Cast', { to: 999 }) },
  { name: 'required-attribute-missing', expect: 'refuse', error: /requires attribute 'to'/,
    build: () => unary('Cast') },
  { name: 'attribute-of-wrong-type', expect: 'refuse', error: /attribute 'to' is FLOAT/,
    build: () => unary('Cast', { to: 1.5 }) },
  { name: 'unknown-attribute', expect: 'refuse', error: /Relu-\d+ has no attribute 'alpha'/,
    build: () => unary('Relu', { alpha: 2 }) },
  { name: 'too-many-inputs', expect: 'refuse', error: /has 3 inputs; Relu-\d+ takes 1/,
    build: () => unary('Relu', {}, { extra: ['x', 'x'] }) },
  { name: 'not-an-onnx-op', expect: 'refuse', error: /'Frobnicate' is not an operator of ai\.onnx/,
    build: () => unary('Frobnicate') },
  { name: 'op-newer-than-the-opset', expect: 'refuse', error: /Gelu exists from opset 20/,
    build: () => unary('Gelu', {}, { opset: 17 }) },
  { name: 'type-outside-the-constraint', expect: 'refuse', error: /tensor\(string\)/,
    build: () => unary('Relu', {}, { type: 'string' }) },
  { name: 'constant-with-two-values', expect: 'refuse', error: /exactly one value attribute/,
    build: () => buildModel({ outputs: [{ name: 'y' }],
      nodes: [{ op: 'Constant', inputs: [], outputs: ['y'], attrs: { value_float: 1.5, value_int: 2 } }] }) },
  { name: 'conv-weight-rank-disagrees', expect: 'refuse', error: /Conv/,
    build: () => unary('Conv', {}, { shape: [1, 3, 8, 8], extra: ['w'], initializers: [f32('w', [4, 3, 3], fill(36))] }) },
  { name: 'conv-kernel-shape-disagrees', expect: 'refuse', error: /kernel_shape|kernel/,
    build: () => unary('Conv', { kernel_shape: [5, 5] }, { shape: [1, 3, 8, 8], extra: ['w'], initializers: [f32('w', [4, 3, 3, 3], fill(108))] }) },
  { name: 'conv-bias-shorter-than-channels', expect: 'refuse', error: /bias|B/,
    build: () => unary('Conv', {}, { shape: [1, 3, 8, 8], extra: ['w', 'b'],
      initializers: [f32('w', [4, 3, 3, 3], fill(108)), f32('b', [2], [1, 2])] }) },
  { name: 'batchnorm-short-scale', expect: 'refuse', error: /BatchNormalization/,
    build: () => unary('BatchNormalization', {}, { shape: [1, 4, 2, 2], extra: ['s', 'b', 'm', 'v'],
      initializers: [f32('s', [1], [1]), f32('b', [4], fill(4, 0)), f32('m', [4], fill(4, 0)), f32('v', [4], fill(4))] }) },
  { name: 'reshape-shape-cannot-hold-input', expect: 'refuse', error: /Reshape/,
    build: () => unary('Reshape', {}, { extra: ['s'], initializers: [i64('s', [1], [5])] }) },
  { name: 'split-sizes-do-not-sum', expect: 'refuse', error: /Split/,
    build: () => buildModel({ inputs: [{ name: 'x', shape: [2, 3] }], outputs: [{ name: 'a' }, { name: 'b' }],
      initializers: [i64('s', [2], [2, 2])],
      nodes: [{ op: 'Split', inputs: ['x', 's'], outputs: ['a', 'b'], attrs: { axis: 1 } }] }) },
  { name: 'if-branches-differ', expect: 'refuse', error: /else_branch gives 2 outputs/,
    build: () => buildModel({ inputs: [{ name: 'c', type: 'bool', shape: [] }, { name: 'x', shape: [2] }],
      outputs: [{ name: 'y' }],
      nodes: [{ op: 'If', inputs: ['c'], outputs: ['y'], attrs: {
        then_branch: { graph: { name: 't', outputs: [{ name: 't1' }], nodes: [{ op: 'Neg', inputs: ['x'], outputs: ['t1'] }] } },
        else_branch: { graph: { name: 'e', outputs: [{ name: 'e1' }, { name: 'e2' }],
          nodes: [{ op: 'Neg', inputs: ['x'], outputs: ['e1'] }, { op: 'Abs', inputs: ['x'], outputs: ['e2'] }] } },
      } }] }) },
  { name: 'constant-if-branch-with-formal-inputs', expect: 'refuse', error: /If branches take none/,
    build: () => buildModel({ inputs: [{ name: 'x', shape: [2] }], outputs: [{ name: 'y' }],
      initializers: [{ name: 'c', type: 'bool', dims: [], data: Uint8Array.from([1]) }],
      nodes: [{ op: 'If', inputs: ['c'], outputs: ['y'], attrs: {
        then_branch: { graph: { name: 't', inputs: [{ name: 'p', shape: [2] }], outputs: [{ name: 't1' }],
          nodes: [{ op: 'Neg', inputs: ['p'], outputs: ['t1'] }] } },
        else_branch: { graph: { name: 'e', outputs: [{ name: 'e1' }], nodes: [{ op: 'Neg', inputs: ['x'], outputs: ['e1'] }] } },
      } }] }) },
  { name: 'recursive-functions', expect: 'refuse', error: /call themselves/,
    build: () => buildModel({ inputs: [{ name: 'x', shape: [2] }], outputs: [{ name: 'y' }],
      imports: [{ domain: 'local', version: 1 }],
      nodes: [{ op: 'F', domain: 'local', inputs: ['x'], outputs: ['y'] }],
      functions: [
        { name: 'F', domain: 'local', inputs: ['a'], outputs: ['b'], imports: [{ domain: '', version: 13 }, { domain: 'local', version: 1 }],
          nodes: [{ op: 'G', domain: 'local', inputs: ['a'], outputs: ['b'] }] },
        { name: 'G', domain: 'local', inputs: ['a'], outputs: ['b'], imports: [{ domain: '', version: 13 }, { domain: 'local', version: 1 }],
          nodes: [{ op: 'F', domain: 'local', inputs: ['a'], outputs: ['b'] }] },
      ] }) },
  { name: 'sparse-indices-outside-dims', expect: 'refuse', error: /outside the dims/,
    build: () => buildModel({ outputs: [{ name: 'y' }],
      sparseInitializers: [{ values: f32('s', [2], [1, 2]), indices: i64('', [2], [1, 99]), dims: [2, 3] }],
      nodes: [{ op: 'Identity', inputs: ['s'], outputs: ['y'] }] }) },

  // --- external data (files: written beside the model; 'fifo' makes a named pipe) ------------
  { name: 'external-data-length-mismatch', expect: 'refuse', error: /length/,
    files: { 'w.bin': new Uint8Array(64) },
    build: () => buildModel({ inputs: [{ name: 'x', shape: [4] }], outputs: [{ name: 'y' }],
      initializers: [{ name: 'w', type: 'float32', dims: [4], external: { location: 'w.bin', offset: 0, length: 12 } }],
      nodes: [{ op: 'Add', inputs: ['x', 'w'], outputs: ['y'] }] }) },
  { name: 'external-data-past-the-end', expect: 'refuse', error: /external data/,
    files: { 'w.bin': new Uint8Array(8) },
    build: () => buildModel({ inputs: [{ name: 'x', shape: [4] }], outputs: [{ name: 'y' }],
      initializers: [{ name: 'w', type: 'float32', dims: [4], external: { location: 'w.bin', offset: 0, length: 16 } }],
      nodes: [{ op: 'Add', inputs: ['x', 'w'], outputs: ['y'] }] }) },
  { name: 'external-data-fifo', expect: 'refuse', error: /not a regular file|FIFO|fifo/,
    files: { 'w.bin': 'fifo' },
    build: () => buildModel({ inputs: [{ name: 'x', shape: [4] }], outputs: [{ name: 'y' }],
      initializers: [{ name: 'w', type: 'float32', dims: [4], external: { location: 'w.bin', offset: 0, length: 16 } }],
      nodes: [{ op: 'Add', inputs: ['x', 'w'], outputs: ['y'] }] }) },
  { name: 'external-data-outside-the-folder', expect: 'refuse', error: /outside|\.\./,
    build: () => buildModel({ inputs: [{ name: 'x', shape: [4] }], outputs: [{ name: 'y' }],
      initializers: [{ name: 'w', type: 'float32', dims: [4], external: { location: '../../etc/passwd', offset: 0, length: 16 } }],
      nodes: [{ op: 'Add', inputs: ['x', 'w'], outputs: ['y'] }] }) },

  // --- sizes that overflow ------------------------------------------------------------------------
  { name: 'reshape-minus-one-wraps', expect: 'refuse', error: /Reshape/,
    build: () => unary('Reshape', {}, { extra: ['s'], initializers: [i64('s', [3], [-1, 4611686018427387904n, 4])] }) },
  { name: 'depth-to-space-block-squared-wraps', expect: 'refuse', error: /DepthToSpace/,
    build: () => unary('DepthToSpace', { blocksize: 4294967296 }, { shape: [1, 4, 2, 2] }) },
  { name: 'space-to-depth-huge-block', expect: 'refuse', error: /SpaceToDepth/,
    build: () => unary('SpaceToDepth', { blocksize: 3037000500 }, { shape: [1, 1, 4, 4] }) },
  { name: 'slice-extreme-starts-and-steps', expect: 'any',
    build: () => constant([{ op: 'Slice', inputs: ['d', 's', 'e', 'a', 't'], outputs: ['y'] }],
      [f32('d', [8], [1, 2, 3, 4, 5, 6, 7, 8]), i64('s', [1], [I64_MAX]), i64('e', [1], [I64_MIN]),
        i64('a', [1], [0]), i64('t', [1], [I64_MIN])]) },
  { name: 'tile-repeats-wrap', expect: 'any',
    build: () => constant([{ op: 'Tile', inputs: ['d', 'r'], outputs: ['y'] }],
      [f32('d', [2, 2], [1, 2, 3, 4]), i64('r', [2], [4611686018427387904n, 4])]) },
  { name: 'range-count-huge', expect: 'any',
    build: () => constant([{ op: 'Range', inputs: ['a', 'b', 'c'], outputs: ['y'] }],
      [i64('a', [], [0]), i64('b', [], [I64_MAX]), i64('c', [], [1])]) },
  { name: 'range-infinite-limit', expect: 'any',
    build: () => constant([{ op: 'Range', inputs: ['a', 'b', 'c'], outputs: ['y'] }],
      [f32('a', [], [0]), f32('b', [], [Infinity]), f32('c', [], [1])]) },
  { name: 'pad-negative-beyond-dim', expect: 'any',
    build: () => constant([{ op: 'Pad', inputs: ['d', 'p'], outputs: ['y'] }],
      [f32('d', [2, 3], [1, 2, 3, 4, 5, 6]), i64('p', [4], [0, -5, 0, 0])]) },
  { name: 'constant-of-shape-huge', expect: 'any',
    build: () => constant([{ op: 'ConstantOfShape', inputs: ['s'], outputs: ['y'] }],
      [i64('s', [2], [4294967296n, 4294967296n])]) },
  { name: 'expand-string-grows-model', expect: 'any',
    build: () => constant([{ op: 'Expand', inputs: ['d', 's'], outputs: ['y'] }],
      [{ name: 'd', type: 'string', dims: [1], data: null, strings: ['x'.repeat(1000)] }, i64('s', [1], [1000000])]) },
  { name: 'dequantize-blocked-block-count-wraps', expect: 'any',
    build: () => buildModel({ opset: 21, inputs: [], outputs: [{ name: 'y' }],
      initializers: [{ name: 'q', type: 'int8', dims: [4], data: Int8Array.from([1, 2, 3, 4]) }, f32('s', [1], [0.5])],
      nodes: [{ op: 'DequantizeLinear', inputs: ['q', 's'], outputs: ['y'], attrs: { axis: 0, block_size: 4611686018427387904n } }] }) },

  // --- sizes of graph that must stay linear (oracle: false: ONNX Runtime itself takes too long) ---
  { name: 'fan-out-200k', expect: 'any', oracle: false,
    build: () => buildModel({ inputs: [{ name: 'x', shape: [2] }],
      outputs: Array.from({ length: 200000 }, (_, i) => ({ name: `y${i}` })),
      nodes: Array.from({ length: 200000 }, (_, i) => ({ op: 'Neg', name: '', inputs: ['x'], outputs: [`y${i}`] })) }) },
  // The CLI's limits only (npm: false): the wasm module's time is not what this checks.
  { name: 'identity-chain-1m', expect: 'any', oracle: false, npm: false,
    build: () => buildModel({ inputs: [{ name: 'x', shape: [2] }], outputs: [{ name: 'y' }],
      nodes: Array.from({ length: 1000000 }, (_, i) => ({ op: 'Identity', name: '',
        inputs: [i === 0 ? 'x' : `v${i - 1}`], outputs: [i === 999999 ? 'y' : `v${i}`] })) }) },
  { name: 'identical-nodes-50k', expect: 'any', oracle: false,
    build: () => buildModel({ inputs: [{ name: 'x', shape: [2] }],
      outputs: [{ name: 'y' }],
      nodes: [...Array.from({ length: 50000 }, (_, i) => ({ op: 'Relu', name: '', inputs: ['x'], outputs: [`r${i}`] })),
        { op: 'Sum', name: 's', inputs: Array.from({ length: 50000 }, (_, i) => `r${i}`), outputs: ['y'] }] }) },

  // --- run-time errors that must not become constants ---------------------------------------------
  { name: 'gather-index-out-of-range', expect: 'any',
    build: () => constant([{ op: 'Gather', inputs: ['d', 'i'], outputs: ['y'] }],
      [f32('d', [3], [1, 2, 3]), i64('i', [1], [7])]) },
  { name: 'integer-division-by-zero', expect: 'any',
    build: () => constant([{ op: 'Div', inputs: ['a', 'b'], outputs: ['y'] }],
      [i64('a', [2], [7, 8]), i64('b', [2], [0, 1])]) },
];

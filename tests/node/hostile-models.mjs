// Invalid and hostile models, one per class of problem the validation issue lists, built here
// byte by byte (onnx-builder.mjs). Each entry says what onnxfold must do with it:
//   refuse: reject it with one clear error line (`error` must match) and write nothing;
//   any:    either refuse it the same way, or optimize it into a model that ONNX Runtime runs
//           with the same results (and that fails where the original fails at run time);
//           `refuse: false` when the model is valid and must be optimized.
import { buildModel } from './onnx-builder.mjs';

const i64 = (name, dims, values) => ({
  name,
  type: 'int64',
  dims,
  data: BigInt64Array.from(values.map(BigInt)),
});
const f32 = (name, dims, values) => ({ name, type: 'float32', dims, data: Float32Array.from(values) });
const fill = (n, v = 1) => new Array(n).fill(v);
const I64_MAX = 9223372036854775807n;
const I64_MIN = -9223372036854775808n;

// One-node model: x (float [2, 3]) -> op -> y.
function unary(
  op,
  attrs = {},
  { type = 'float32', shape = [2, 3], extra = [], initializers = [], opset = 13 } = {},
) {
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
  {
    name: 'no-ir-version',
    expect: 'refuse',
    error: /ir_version/,
    build: () =>
      buildModel({
        irVersion: null,
        inputs: [{ name: 'x', shape: [2] }],
        outputs: [{ name: 'y' }],
        nodes: [{ op: 'Neg', inputs: ['x'], outputs: ['y'] }],
      }),
  },
  {
    name: 'ir-version-from-the-future',
    expect: 'refuse',
    error: /ir_version 99 is newer/,
    build: () =>
      buildModel({
        irVersion: 99,
        inputs: [{ name: 'x', shape: [2] }],
        outputs: [{ name: 'y' }],
        nodes: [{ op: 'Neg', inputs: ['x'], outputs: ['y'] }],
      }),
  },
  {
    name: 'opset-from-the-future',
    expect: 'refuse',
    error: /opset 999 of ai\.onnx is newer than onnxfold knows/,
    build: () => unary('Neg', {}, { opset: 999 }),
  },
  {
    name: 'names-not-utf8',
    expect: 'refuse',
    error: /not valid UTF-8/,
    build: () =>
      buildModel({
        inputs: [{ name: Uint8Array.from([0x78, 0xff, 0xfe]), shape: [2] }],
        outputs: [{ name: 'y' }],
        nodes: [
          {
            op: 'Neg',
            name: Uint8Array.from([0xc3, 0x28]),
            inputs: [Uint8Array.from([0x78, 0xff, 0xfe])],
            outputs: ['y'],
          },
        ],
      }),
  },

  // --- nodes against their schema --------------------------------------------------------------
  {
    name: 'cast-to-unknown-type',
    expect: 'refuse',
    error: /'to' = 999 is not a known data type/,
    build: () => unary('Cast', { to: 999 }),
  },
  {
    name: 'required-attribute-missing',
    expect: 'refuse',
    error: /requires attribute 'to'/,
    build: () => unary('Cast'),
  },
  {
    name: 'attribute-of-wrong-type',
    expect: 'refuse',
    error: /attribute 'to' is FLOAT/,
    build: () => unary('Cast', { to: 1.5 }),
  },
  {
    name: 'unknown-attribute',
    expect: 'refuse',
    error: /Relu-\d+ has no attribute 'alpha'/,
    build: () => unary('Relu', { alpha: 2 }),
  },
  {
    name: 'too-many-inputs',
    expect: 'refuse',
    error: /has 3 inputs; Relu-\d+ takes 1/,
    build: () => unary('Relu', {}, { extra: ['x', 'x'] }),
  },
  {
    name: 'not-an-onnx-op',
    expect: 'refuse',
    error: /'Frobnicate' is not an operator of ai\.onnx/,
    build: () => unary('Frobnicate'),
  },
  {
    name: 'op-newer-than-the-opset',
    expect: 'refuse',
    error: /Gelu exists from opset 20/,
    build: () => unary('Gelu', {}, { opset: 17 }),
  },
  {
    name: 'type-outside-the-constraint',
    expect: 'refuse',
    error: /tensor\(string\)/,
    build: () => unary('Relu', {}, { type: 'string' }),
  },
  {
    name: 'constant-with-two-values',
    expect: 'refuse',
    error: /exactly one value attribute/,
    build: () =>
      buildModel({
        outputs: [{ name: 'y' }],
        nodes: [{ op: 'Constant', inputs: [], outputs: ['y'], attrs: { value_float: 1.5, value_int: 2 } }],
      }),
  },
  {
    name: 'conv-weight-rank-disagrees',
    expect: 'refuse',
    error: /Conv/,
    build: () =>
      unary('Conv', {}, { shape: [1, 3, 8, 8], extra: ['w'], initializers: [f32('w', [4, 3, 3], fill(36))] }),
  },
  {
    name: 'conv-kernel-shape-disagrees',
    expect: 'refuse',
    error: /kernel_shape|kernel/,
    build: () =>
      unary(
        'Conv',
        { kernel_shape: [5, 5] },
        { shape: [1, 3, 8, 8], extra: ['w'], initializers: [f32('w', [4, 3, 3, 3], fill(108))] },
      ),
  },
  {
    name: 'conv-bias-shorter-than-channels',
    expect: 'refuse',
    error: /bias|B/,
    build: () =>
      unary(
        'Conv',
        {},
        {
          shape: [1, 3, 8, 8],
          extra: ['w', 'b'],
          initializers: [f32('w', [4, 3, 3, 3], fill(108)), f32('b', [2], [1, 2])],
        },
      ),
  },
  {
    name: 'batchnorm-short-scale',
    expect: 'refuse',
    error: /BatchNormalization/,
    build: () =>
      unary(
        'BatchNormalization',
        {},
        {
          shape: [1, 4, 2, 2],
          extra: ['s', 'b', 'm', 'v'],
          initializers: [
            f32('s', [1], [1]),
            f32('b', [4], fill(4, 0)),
            f32('m', [4], fill(4, 0)),
            f32('v', [4], fill(4)),
          ],
        },
      ),
  },
  {
    name: 'reshape-shape-cannot-hold-input',
    expect: 'refuse',
    error: /Reshape/,
    build: () => unary('Reshape', {}, { extra: ['s'], initializers: [i64('s', [1], [5])] }),
  },
  {
    name: 'split-sizes-do-not-sum',
    expect: 'refuse',
    error: /Split/,
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [2, 3] }],
        outputs: [{ name: 'a' }, { name: 'b' }],
        initializers: [i64('s', [2], [2, 2])],
        nodes: [{ op: 'Split', inputs: ['x', 's'], outputs: ['a', 'b'], attrs: { axis: 1 } }],
      }),
  },
  {
    name: 'if-branches-differ',
    expect: 'refuse',
    error: /else_branch gives 2 outputs/,
    build: () =>
      buildModel({
        inputs: [
          { name: 'c', type: 'bool', shape: [] },
          { name: 'x', shape: [2] },
        ],
        outputs: [{ name: 'y' }],
        nodes: [
          {
            op: 'If',
            inputs: ['c'],
            outputs: ['y'],
            attrs: {
              then_branch: {
                graph: {
                  name: 't',
                  outputs: [{ name: 't1' }],
                  nodes: [{ op: 'Neg', inputs: ['x'], outputs: ['t1'] }],
                },
              },
              else_branch: {
                graph: {
                  name: 'e',
                  outputs: [{ name: 'e1' }, { name: 'e2' }],
                  nodes: [
                    { op: 'Neg', inputs: ['x'], outputs: ['e1'] },
                    { op: 'Abs', inputs: ['x'], outputs: ['e2'] },
                  ],
                },
              },
            },
          },
        ],
      }),
  },
  {
    name: 'constant-if-branch-with-formal-inputs',
    expect: 'refuse',
    error: /If branches take none/,
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [2] }],
        outputs: [{ name: 'y' }],
        initializers: [{ name: 'c', type: 'bool', dims: [], data: Uint8Array.from([1]) }],
        nodes: [
          {
            op: 'If',
            inputs: ['c'],
            outputs: ['y'],
            attrs: {
              then_branch: {
                graph: {
                  name: 't',
                  inputs: [{ name: 'p', shape: [2] }],
                  outputs: [{ name: 't1' }],
                  nodes: [{ op: 'Neg', inputs: ['p'], outputs: ['t1'] }],
                },
              },
              else_branch: {
                graph: {
                  name: 'e',
                  outputs: [{ name: 'e1' }],
                  nodes: [{ op: 'Neg', inputs: ['x'], outputs: ['e1'] }],
                },
              },
            },
          },
        ],
      }),
  },
  {
    name: 'recursive-functions',
    expect: 'refuse',
    error: /call themselves/,
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [2] }],
        outputs: [{ name: 'y' }],
        imports: [{ domain: 'local', version: 1 }],
        nodes: [{ op: 'F', domain: 'local', inputs: ['x'], outputs: ['y'] }],
        functions: [
          {
            name: 'F',
            domain: 'local',
            inputs: ['a'],
            outputs: ['b'],
            imports: [
              { domain: '', version: 13 },
              { domain: 'local', version: 1 },
            ],
            nodes: [{ op: 'G', domain: 'local', inputs: ['a'], outputs: ['b'] }],
          },
          {
            name: 'G',
            domain: 'local',
            inputs: ['a'],
            outputs: ['b'],
            imports: [
              { domain: '', version: 13 },
              { domain: 'local', version: 1 },
            ],
            nodes: [{ op: 'F', domain: 'local', inputs: ['a'], outputs: ['b'] }],
          },
        ],
      }),
  },
  {
    name: 'sparse-indices-outside-dims',
    expect: 'refuse',
    error: /outside the dims/,
    build: () =>
      buildModel({
        outputs: [{ name: 'y' }],
        sparseInitializers: [{ values: f32('s', [2], [1, 2]), indices: i64('', [2], [1, 99]), dims: [2, 3] }],
        nodes: [{ op: 'Identity', inputs: ['s'], outputs: ['y'] }],
      }),
  },

  // --- external data (files: written beside the model; 'fifo' makes a named pipe) ------------
  {
    name: 'external-data-length-mismatch',
    expect: 'refuse',
    error: /length/,
    files: { 'w.bin': new Uint8Array(64) },
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [4] }],
        outputs: [{ name: 'y' }],
        initializers: [
          { name: 'w', type: 'float32', dims: [4], external: { location: 'w.bin', offset: 0, length: 12 } },
        ],
        nodes: [{ op: 'Add', inputs: ['x', 'w'], outputs: ['y'] }],
      }),
  },
  {
    name: 'external-data-past-the-end',
    expect: 'refuse',
    error: /external data/,
    files: { 'w.bin': new Uint8Array(8) },
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [4] }],
        outputs: [{ name: 'y' }],
        initializers: [
          { name: 'w', type: 'float32', dims: [4], external: { location: 'w.bin', offset: 0, length: 16 } },
        ],
        nodes: [{ op: 'Add', inputs: ['x', 'w'], outputs: ['y'] }],
      }),
  },
  {
    name: 'external-data-fifo',
    expect: 'refuse',
    error: /not a regular file|FIFO|fifo/,
    files: { 'w.bin': 'fifo' },
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [4] }],
        outputs: [{ name: 'y' }],
        initializers: [
          { name: 'w', type: 'float32', dims: [4], external: { location: 'w.bin', offset: 0, length: 16 } },
        ],
        nodes: [{ op: 'Add', inputs: ['x', 'w'], outputs: ['y'] }],
      }),
  },
  {
    name: 'external-data-outside-the-folder',
    expect: 'refuse',
    error: /outside|\.\./,
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [4] }],
        outputs: [{ name: 'y' }],
        initializers: [
          {
            name: 'w',
            type: 'float32',
            dims: [4],
            external: { location: '../../etc/passwd', offset: 0, length: 16 },
          },
        ],
        nodes: [{ op: 'Add', inputs: ['x', 'w'], outputs: ['y'] }],
      }),
  },

  // --- sizes that overflow ------------------------------------------------------------------------
  {
    name: 'reshape-minus-one-wraps',
    expect: 'refuse',
    error: /Reshape/,
    build: () =>
      unary('Reshape', {}, { extra: ['s'], initializers: [i64('s', [3], [-1, 4611686018427387904n, 4])] }),
  },
  {
    name: 'depth-to-space-block-squared-wraps',
    expect: 'refuse',
    error: /DepthToSpace/,
    build: () => unary('DepthToSpace', { blocksize: 4294967296 }, { shape: [1, 4, 2, 2] }),
  },
  {
    name: 'space-to-depth-huge-block',
    expect: 'refuse',
    error: /SpaceToDepth/,
    build: () => unary('SpaceToDepth', { blocksize: 3037000500 }, { shape: [1, 1, 4, 4] }),
  },
  {
    name: 'slice-extreme-starts-and-steps',
    expect: 'any',
    build: () =>
      constant(
        [{ op: 'Slice', inputs: ['d', 's', 'e', 'a', 't'], outputs: ['y'] }],
        [
          f32('d', [8], [1, 2, 3, 4, 5, 6, 7, 8]),
          i64('s', [1], [I64_MAX]),
          i64('e', [1], [I64_MIN]),
          i64('a', [1], [0]),
          i64('t', [1], [I64_MIN]),
        ],
      ),
  },
  {
    name: 'tile-repeats-wrap',
    expect: 'any',
    build: () =>
      constant(
        [{ op: 'Tile', inputs: ['d', 'r'], outputs: ['y'] }],
        [f32('d', [2, 2], [1, 2, 3, 4]), i64('r', [2], [4611686018427387904n, 4])],
      ),
  },
  {
    name: 'range-count-huge',
    expect: 'any',
    build: () =>
      constant(
        [{ op: 'Range', inputs: ['a', 'b', 'c'], outputs: ['y'] }],
        [i64('a', [], [0]), i64('b', [], [I64_MAX]), i64('c', [], [1])],
      ),
  },
  {
    name: 'range-infinite-limit',
    expect: 'any',
    build: () =>
      constant(
        [{ op: 'Range', inputs: ['a', 'b', 'c'], outputs: ['y'] }],
        [f32('a', [], [0]), f32('b', [], [Infinity]), f32('c', [], [1])],
      ),
  },
  {
    name: 'pad-negative-beyond-dim',
    expect: 'any',
    build: () =>
      constant(
        [{ op: 'Pad', inputs: ['d', 'p'], outputs: ['y'] }],
        [f32('d', [2, 3], [1, 2, 3, 4, 5, 6]), i64('p', [4], [0, -5, 0, 0])],
      ),
  },
  {
    name: 'constant-of-shape-huge',
    expect: 'any',
    build: () =>
      constant(
        [{ op: 'ConstantOfShape', inputs: ['s'], outputs: ['y'] }],
        [i64('s', [2], [4294967296n, 4294967296n])],
      ),
  },
  {
    name: 'expand-string-grows-model',
    expect: 'any',
    build: () =>
      constant(
        [{ op: 'Expand', inputs: ['d', 's'], outputs: ['y'] }],
        [
          { name: 'd', type: 'string', dims: [1], data: null, strings: ['x'.repeat(1000)] },
          i64('s', [1], [1000000]),
        ],
      ),
  },
  {
    name: 'dequantize-blocked-block-count-wraps',
    expect: 'any',
    build: () =>
      buildModel({
        opset: 21,
        inputs: [],
        outputs: [{ name: 'y' }],
        initializers: [
          { name: 'q', type: 'int8', dims: [4], data: Int8Array.from([1, 2, 3, 4]) },
          f32('s', [1], [0.5]),
        ],
        nodes: [
          {
            op: 'DequantizeLinear',
            inputs: ['q', 's'],
            outputs: ['y'],
            attrs: { axis: 0, block_size: 4611686018427387904n },
          },
        ],
      }),
  },

  // --- sizes of graph that must stay linear (oracle: false: ONNX Runtime itself takes too long) ---
  {
    name: 'fan-out-200k',
    expect: 'any',
    oracle: false,
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [2] }],
        outputs: Array.from({ length: 200000 }, (_, i) => ({ name: `y${i}` })),
        nodes: Array.from({ length: 200000 }, (_, i) => ({
          op: 'Neg',
          name: '',
          inputs: ['x'],
          outputs: [`y${i}`],
        })),
      }),
  },
  // The CLI's limits only (npm: false): the wasm module's time is not what this checks.
  {
    name: 'identity-chain-1m',
    expect: 'any',
    oracle: false,
    npm: false,
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [2] }],
        outputs: [{ name: 'y' }],
        nodes: Array.from({ length: 1000000 }, (_, i) => ({
          op: 'Identity',
          name: '',
          inputs: [i === 0 ? 'x' : `v${i - 1}`],
          outputs: [i === 999999 ? 'y' : `v${i}`],
        })),
      }),
  },
  {
    name: 'identical-nodes-50k',
    expect: 'any',
    oracle: false,
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [2] }],
        outputs: [{ name: 'y' }],
        nodes: [
          ...Array.from({ length: 50000 }, (_, i) => ({
            op: 'Relu',
            name: '',
            inputs: ['x'],
            outputs: [`r${i}`],
          })),
          { op: 'Sum', name: 's', inputs: Array.from({ length: 50000 }, (_, i) => `r${i}`), outputs: ['y'] },
        ],
      }),
  },

  // --- run-time errors that must not become constants ---------------------------------------------
  {
    name: 'gather-index-out-of-range',
    expect: 'any',
    build: () =>
      constant(
        [{ op: 'Gather', inputs: ['d', 'i'], outputs: ['y'] }],
        [f32('d', [3], [1, 2, 3]), i64('i', [1], [7])],
      ),
  },
  {
    name: 'integer-division-by-zero',
    expect: 'any',
    build: () =>
      constant(
        [{ op: 'Div', inputs: ['a', 'b'], outputs: ['y'] }],
        [i64('a', [2], [7, 8]), i64('b', [2], [0, 1])],
      ),
  },
  // ONNX Runtime slices first, then pads: reflect/edge/wrap need something left to repeat.
  {
    name: 'pad-reflect-crops-more-than-the-axis',
    expect: 'any',
    build: () =>
      constant(
        [{ op: 'Pad', inputs: ['d', 'p'], outputs: ['y'], attrs: { mode: 'reflect' } }],
        [f32('d', [4], [1, 2, 3, 4]), i64('p', [2], [-5, 3])],
        { opset: 19 },
      ),
  },
  {
    name: 'pad-reflect-longer-than-the-axis',
    expect: 'any',
    build: () =>
      constant(
        [{ op: 'Pad', inputs: ['d', 'p'], outputs: ['y'], attrs: { mode: 'reflect' } }],
        [f32('d', [4], [1, 2, 3, 4]), i64('p', [2], [5, 0])],
        { opset: 19 },
      ),
  },
  {
    name: 'pad-wrap-after-a-crop',
    expect: 'any',
    build: () =>
      constant(
        [{ op: 'Pad', inputs: ['d', 'p'], outputs: ['y'], attrs: { mode: 'wrap' } }],
        [f32('d', [4], [1, 2, 3, 4]), i64('p', [2], [-2, 5])],
        { opset: 19 },
      ),
  },
  {
    name: 'qlinearmatmul-empty-scale',
    expect: 'any',
    build: () =>
      buildModel({
        opset: 13,
        inputs: [],
        outputs: [{ name: 'y' }],
        initializers: [
          { name: 'a', type: 'uint8', dims: [2, 2], data: Uint8Array.from([1, 2, 3, 4]) },
          f32('as', [0], []),
          { name: 'az', type: 'uint8', dims: [], data: Uint8Array.from([0]) },
          { name: 'b', type: 'uint8', dims: [2, 2], data: Uint8Array.from([1, 0, 0, 1]) },
          f32('bs', [], [1]),
          { name: 'bz', type: 'uint8', dims: [], data: Uint8Array.from([0]) },
          f32('ys', [], [1]),
          { name: 'yz', type: 'uint8', dims: [], data: Uint8Array.from([0]) },
        ],
        nodes: [
          { op: 'QLinearMatMul', inputs: ['a', 'as', 'az', 'b', 'bs', 'bz', 'ys', 'yz'], outputs: ['y'] },
        ],
      }),
  },
  {
    name: 'range-int64-max-step',
    expect: 'any',
    refuse: false,
    build: () =>
      constant(
        [{ op: 'Range', inputs: ['a', 'b', 'c'], outputs: ['y'] }],
        [i64('a', [], [0]), i64('b', [], [I64_MAX]), i64('c', [], [I64_MAX])],
        { outputs: [{ name: 'y', type: 'int64' }] },
      ),
  },

  // --- invalid, though every node alone is fine ----------------------------------------------------
  {
    name: 'cumsum-axis-outside-the-rank',
    expect: 'refuse',
    error: /axis 2 is out of range for rank 2/,
    build: () => unary('CumSum', {}, { extra: ['a'], initializers: [i64('a', [], [2])] }),
  },
  {
    name: 'scan-inputs-differ-in-length',
    expect: 'refuse',
    error: /scan inputs differ in length \(2 and 3\)/,
    build: () =>
      buildModel({
        opset: 13,
        inputs: [
          { name: 'a', shape: [2, 4] },
          { name: 'b', shape: [3, 4] },
        ],
        outputs: [{ name: 'y' }],
        nodes: [
          {
            op: 'Scan',
            inputs: ['a', 'b'],
            outputs: ['y'],
            attrs: {
              num_scan_inputs: 2,
              body: {
                graph: {
                  name: 'body',
                  inputs: [
                    { name: 'ai', shape: [4] },
                    { name: 'bi', shape: [4] },
                  ],
                  outputs: [{ name: 's' }],
                  nodes: [{ op: 'Add', inputs: ['ai', 'bi'], outputs: ['s'] }],
                },
              },
            },
          },
        ],
      }),
  },
  {
    name: 'subgraph-redefines-an-outer-name',
    expect: 'refuse',
    error: /'t' is defined twice/,
    build: () =>
      buildModel({
        inputs: [
          { name: 'c', type: 'bool', shape: [] },
          { name: 'x', shape: [2] },
        ],
        outputs: [{ name: 'y' }],
        nodes: [
          { op: 'Neg', inputs: ['x'], outputs: ['t'] },
          {
            op: 'If',
            inputs: ['c'],
            outputs: ['y'],
            attrs: {
              then_branch: {
                graph: {
                  name: 'th',
                  outputs: [{ name: 't' }],
                  nodes: [{ op: 'Abs', inputs: ['x'], outputs: ['t'] }],
                },
              },
              else_branch: {
                graph: {
                  name: 'el',
                  outputs: [{ name: 'e' }],
                  nodes: [{ op: 'Neg', inputs: ['t'], outputs: ['e'] }],
                },
              },
            },
          },
        ],
      }),
  },
  {
    name: 'function-call-with-too-few-inputs',
    expect: 'refuse',
    error: /calls function 'F' with 1 inputs; it declares 2/,
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [2] }],
        outputs: [{ name: 'y' }],
        imports: [{ domain: 'local', version: 1 }],
        nodes: [{ op: 'F', domain: 'local', inputs: ['x'], outputs: ['y'] }],
        functions: [
          {
            name: 'F',
            domain: 'local',
            inputs: ['a', 'b'],
            outputs: ['c'],
            nodes: [{ op: 'Add', inputs: ['a', 'b'], outputs: ['c'] }],
          },
        ],
      }),
  },
  {
    name: 'function-attribute-of-another-type',
    expect: 'refuse',
    error: /attribute 'slope' is STRING; function 'F' uses it as FLOAT/,
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [2] }],
        outputs: [{ name: 'y' }],
        imports: [{ domain: 'local', version: 1 }],
        nodes: [{ op: 'F', domain: 'local', inputs: ['x'], outputs: ['y'], attrs: { slope: 'steep' } }],
        functions: [
          {
            name: 'F',
            domain: 'local',
            inputs: ['a'],
            outputs: ['c'],
            attributes: ['slope'],
            nodes: [
              { op: 'LeakyRelu', inputs: ['a'], outputs: ['c'], attrs: { alpha: { ref: 'slope', type: 1 } } },
            ],
          },
        ],
      }),
  },

  // --- what ONNX Runtime refuses when it reads strings, or would load wrongly ---------------------
  {
    name: 'cast-string-not-a-number',
    expect: 'any',
    build: () =>
      constant(
        [{ op: 'Cast', inputs: ['s'], outputs: ['y'], attrs: { to: 1 } }],
        [{ name: 's', type: 'string', dims: [2], data: null, strings: ['1.5', 'xxxx'] }],
      ),
  },
  {
    name: 'cast-string-out-of-range',
    expect: 'any',
    build: () =>
      constant(
        [{ op: 'Cast', inputs: ['s'], outputs: ['y'], attrs: { to: 1 } }],
        [{ name: 's', type: 'string', dims: [1], data: null, strings: ['1e400'] }],
      ),
  },
  {
    name: 'cast-string-integer-out-of-range',
    expect: 'any',
    build: () =>
      constant(
        [{ op: 'Cast', inputs: ['s'], outputs: ['y'], attrs: { to: 7 } }],
        [{ name: 's', type: 'string', dims: [1], data: null, strings: ['99999999999999999999'] }],
      ),
  },
  {
    name: 'cast-string-prefixes-as-onnx-runtime',
    expect: 'any',
    refuse: false,
    build: () =>
      constant(
        [{ op: 'Cast', inputs: ['s'], outputs: ['y'], attrs: { to: 7 } }],
        [{ name: 's', type: 'string', dims: [4], data: null, strings: ['1e400', ' 12', '3.5', '0x10'] }],
        { outputs: [{ name: 'y', type: 'int64' }] },
      ),
  },
  {
    name: 'labelencoder-keys-of-another-type',
    expect: 'refuse',
    error: /keys are float32 but the input is int64/,
    build: () =>
      buildModel({
        opset: 13,
        imports: [{ domain: 'ai.onnx.ml', version: 2 }],
        inputs: [],
        outputs: [{ name: 'y', type: 'int64' }],
        initializers: [i64('x', [2], [1, 2])],
        nodes: [
          {
            op: 'LabelEncoder',
            domain: 'ai.onnx.ml',
            inputs: ['x'],
            outputs: ['y'],
            attrs: { keys_floats: [1.5, 2.5], values_int64s: [1, 2] },
          },
        ],
      }),
  },
  {
    name: 'function-imports-a-future-opset',
    expect: 'refuse',
    error: /opset 10000 of ai\.onnx is newer than onnxfold knows/,
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [2] }],
        outputs: [{ name: 'y' }],
        imports: [{ domain: 'local', version: 1 }],
        nodes: [{ op: 'F', domain: 'local', inputs: ['x'], outputs: ['y'] }],
        functions: [
          {
            name: 'F',
            domain: 'local',
            inputs: ['a'],
            outputs: ['b'],
            imports: [{ domain: '', version: 10000 }],
            nodes: [{ op: 'Neg', inputs: ['a'], outputs: ['b'] }],
          },
        ],
      }),
  },
  // A fold inside a function body makes a constant that FunctionProto can only hold as a node.
  {
    name: 'function-body-constant-is-folded',
    expect: 'any',
    refuse: false,
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [2] }],
        outputs: [{ name: 'y' }],
        imports: [{ domain: 'local', version: 1 }],
        nodes: [{ op: 'F', domain: 'local', inputs: ['x'], outputs: ['y'] }],
        functions: [
          {
            name: 'F',
            domain: 'local',
            inputs: ['a'],
            outputs: ['b'],
            nodes: [
              { op: 'Constant', inputs: [], outputs: ['c'], attrs: { value: f32('', [2], [1.5, -2]) } },
              { op: 'Neg', inputs: ['c'], outputs: ['n'] },
              { op: 'Add', inputs: ['a', 'n'], outputs: ['b'] },
            ],
          },
        ],
      }),
  },
  // Two constant Ifs whose branches name their nodes alike: inlined, the names stay distinct.
  {
    name: 'constant-ifs-with-alike-node-names',
    expect: 'any',
    refuse: false,
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [2] }],
        outputs: [{ name: 'y' }],
        initializers: [{ name: 't', type: 'bool', dims: [], data: Uint8Array.from([1]) }],
        nodes: ['1', '2'].map((k) => ({
          op: 'If',
          name: `if${k}`,
          inputs: ['t'],
          outputs: [k === '1' ? 'm' : 'y'],
          attrs: {
            then_branch: {
              graph: {
                name: `th${k}`,
                outputs: [{ name: `a${k}` }],
                nodes: [{ op: 'Neg', name: 'neg', inputs: [k === '1' ? 'x' : 'm'], outputs: [`a${k}`] }],
              },
            },
            else_branch: {
              graph: {
                name: `el${k}`,
                outputs: [{ name: `b${k}` }],
                nodes: [{ op: 'Abs', name: 'abs', inputs: [k === '1' ? 'x' : 'm'], outputs: [`b${k}`] }],
              },
            },
          },
        })),
      }),
  },

  // --- modes set by the op's version --------------------------------------------------------------
  // BatchNormalization-9 with five outputs is in training mode at opset 9-13, read or not: it
  // normalizes with the batch's statistics and must not be fused as if in inference.
  {
    name: 'batchnorm-training-mode-opset-13',
    expect: 'any',
    refuse: false,
    build: () =>
      buildModel({
        opset: 13,
        inputs: [{ name: 'x', shape: [2, 2, 3, 3] }],
        outputs: [{ name: 'y' }],
        initializers: [
          f32('w', [2, 2, 1, 1], [1, 2, 3, 4]),
          f32('s', [2], [1, 2]),
          f32('b', [2], [0, 1]),
          f32('m', [2], [0.5, 0]),
          f32('v', [2], [1, 4]),
        ],
        nodes: [
          { op: 'Conv', inputs: ['x', 'w'], outputs: ['c'] },
          {
            op: 'BatchNormalization',
            inputs: ['c', 's', 'b', 'm', 'v'],
            outputs: ['y', 'rm', 'rv', 'sm', 'sv'],
          },
        ],
      }),
  },
  // --- issue 26: each case finishes in linear time or a budget refuses it, within 20 s and 2 GB --
  // 96 Loops that never end (no trip count, the condition stays true): the run's evaluation
  // budget (steps) stops them together, not one by one. ONNX Runtime would never finish them.
  {
    name: 'loops-that-never-end',
    expect: 'any',
    refuse: false,
    oracle: false,
    build: () =>
      buildModel({
        inputs: [],
        outputs: Array.from({ length: 96 }, (_, k) => ({ name: `y${k}` })),
        initializers: [f32('x', [1], [1]), { name: 'c', type: 'bool', dims: [], data: Uint8Array.from([1]) }],
        nodes: Array.from({ length: 96 }, (_, k) => ({
          op: 'Loop',
          inputs: ['', 'c', 'x'],
          outputs: [`y${k}`],
          attrs: {
            body: {
              graph: {
                name: `body${k}`,
                inputs: [
                  { name: 'i', type: 'int64', shape: [] },
                  { name: 'ci', type: 'bool', shape: [] },
                  { name: 'v', shape: [1] },
                ],
                outputs: [
                  { name: 'co', type: 'bool', shape: [] },
                  { name: 'w', shape: [1] },
                ],
                nodes: [
                  { op: 'Identity', inputs: ['ci'], outputs: ['co'] },
                  { op: 'Neg', inputs: ['v'], outputs: ['w'] },
                ],
              },
            },
          },
        })),
      }),
  },
  // A Loop whose carried value doubles every step, for 30 steps (4 GB): the budget's bytes stop it.
  {
    name: 'loop-carried-value-doubles',
    expect: 'any',
    refuse: false,
    oracle: false,
    build: () =>
      buildModel({
        inputs: [],
        outputs: [{ name: 'y' }],
        initializers: [
          f32('x', [1], [1]),
          i64('m', [], [30]),
          { name: 'c', type: 'bool', dims: [], data: Uint8Array.from([1]) },
        ],
        nodes: [
          {
            op: 'Loop',
            inputs: ['m', 'c', 'x'],
            outputs: ['y'],
            attrs: {
              body: {
                graph: {
                  name: 'body',
                  inputs: [
                    { name: 'i', type: 'int64', shape: [] },
                    { name: 'ci', type: 'bool', shape: [] },
                    { name: 'v', shape: ['n'] },
                  ],
                  outputs: [
                    { name: 'co', type: 'bool', shape: [] },
                    { name: 'w', shape: ['m'] },
                  ],
                  nodes: [
                    { op: 'Identity', inputs: ['ci'], outputs: ['co'] },
                    { op: 'Concat', inputs: ['v', 'v'], outputs: ['w'], attrs: { axis: 0 } },
                  ],
                },
              },
            },
          },
        ],
      }),
  },
  // 151 Negs in a chain over a 16 MB weight, each fold deferred to write time: the chain is
  // computed link by link, not with every intermediate resident (2.4 GB).
  {
    name: 'chain-of-deferred-folds',
    expect: 'any',
    refuse: false,
    build: () =>
      constant(
        Array.from({ length: 151 }, (_, k) => ({
          op: 'Neg',
          inputs: [k ? `n${k - 1}` : 'w'],
          outputs: [k === 150 ? 'y' : `n${k}`],
        })),
        [{ name: 'w', type: 'float32', dims: [4 << 20], data: new Float32Array(4 << 20).fill(0.5) }],
      ),
  },
  // 30,000 constant Ifs whose branches name their values alike: inlining finds each a fresh
  // name in constant time (it tried __1, __2, ... every time: quadratic).
  {
    name: 'constant-ifs-30000',
    expect: 'any',
    refuse: false,
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [2] }],
        outputs: [{ name: 'y' }],
        initializers: [{ name: 't', type: 'bool', dims: [], data: Uint8Array.from([1]) }],
        nodes: Array.from({ length: 30000 }, (_, k) => ({
          op: 'If',
          name: `if${k}`,
          inputs: ['t'],
          outputs: [k === 29999 ? 'y' : `m${k}`],
          attrs: {
            then_branch: {
              graph: {
                name: 'th',
                outputs: [{ name: 'a' }],
                nodes: [{ op: 'Neg', name: 'neg', inputs: [k ? `m${k - 1}` : 'x'], outputs: ['a'] }],
              },
            },
            else_branch: {
              graph: {
                name: 'el',
                outputs: [{ name: 'b' }],
                nodes: [{ op: 'Abs', name: 'abs', inputs: [k ? `m${k - 1}` : 'x'], outputs: ['b'] }],
              },
            },
          },
        })),
      }),
  },
  // SequenceConstruct of 100,000 constants: the bytes a fold frees are counted in one pass
  // over its inputs (every input's user was checked against every input: 10^10 steps).
  // oracle: false: ONNX Runtime takes six minutes over 100,000 initializers.
  {
    name: 'sequence-of-100000-constants',
    expect: 'any',
    refuse: false,
    oracle: false,
    build: () =>
      constant(
        [
          {
            op: 'SequenceConstruct',
            inputs: Array.from({ length: 100000 }, (_, k) => `c${k}`),
            outputs: ['s'],
          },
          { op: 'ConcatFromSequence', inputs: ['s'], outputs: ['y'], attrs: { axis: 0 } },
        ],
        Array.from({ length: 100000 }, (_, k) => f32(`c${k}`, [1], [k])),
      ),
  },
  // 5,000 weights of 2 KiB equal on the bytes pool-constants samples, different elsewhere
  // (float 480 lies between the last two samples, so comparing a pair reads almost all of
  // both): a full hash tells them apart, each read once.
  {
    name: 'weights-equal-on-their-samples',
    expect: 'any',
    refuse: false,
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [512] }],
        outputs: [{ name: 'y' }],
        initializers: Array.from({ length: 5000 }, (_, k) => {
          const data = new Float32Array(512).fill(0.25);
          data[480] = k;
          return { name: `w${k}`, type: 'float32', dims: [512], data };
        }),
        nodes: Array.from({ length: 5000 }, (_, k) => ({
          op: 'Add',
          inputs: [k ? `a${k - 1}` : 'x', `w${k}`],
          outputs: [k === 4999 ? 'y' : `a${k}`],
        })),
      }),
  },
  // A node name that is a module path 200,000 levels deep: the module tree stops at 256
  // levels (it stored every prefix, 4 GB, and recursed once per level).
  {
    name: 'module-path-200000-deep',
    expect: 'any',
    refuse: false,
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [2] }],
        outputs: [{ name: 'y' }],
        nodes: [{ op: 'Neg', name: '/a'.repeat(200000) + '/Neg', inputs: ['x'], outputs: ['y'] }],
      }),
  },
  // FlexAttention whose scores take 2 GiB (2^28 doubles) for a 64 KiB result: the scores are
  // counted against the run's bytes before they are allocated.
  {
    name: 'flex-attention-2gib-scores',
    expect: 'any',
    refuse: false,
    build: () =>
      buildModel({
        opset: 13,
        imports: [{ domain: 'ai.onnx.preview', version: 1 }],
        inputs: [],
        outputs: [{ name: 'y' }],
        initializers: ['q', 'k', 'v'].map((n) => f32(n, [1, 1, 16384, 1], fill(16384, 0.5))),
        nodes: [{ op: 'FlexAttention', domain: 'ai.onnx.preview', inputs: ['q', 'k', 'v'], outputs: ['y'] }],
      }),
  },
  // A degenerate TreeEnsemble: one tree that is a chain of 400,000 nodes, 50,000 rows
  // (2x10^10 node visits; validation computes it too, its output being small): the visits
  // count against the run's steps. ONNX Runtime would take minutes.
  {
    name: 'tree-ensemble-2e10-visits',
    expect: 'any',
    refuse: false,
    oracle: false,
    build: () => {
      const n = 400000;
      const ids = (f) => Array.from({ length: n }, (_, i) => f(i));
      return buildModel({
        opset: 21,
        imports: [{ domain: 'ai.onnx.ml', version: 5 }],
        inputs: [],
        outputs: [{ name: 'y' }],
        initializers: [f32('x', [50000, 1], fill(50000, 0.5))],
        nodes: [
          {
            op: 'TreeEnsemble',
            domain: 'ai.onnx.ml',
            inputs: ['x'],
            outputs: ['y'],
            attrs: {
              tree_roots: [0],
              nodes_featureids: ids(() => 0),
              nodes_splits: f32(undefined, [n], fill(n, 1)),
              nodes_modes: { type: 'uint8', dims: [n], data: new Uint8Array(n) },
              nodes_truenodeids: ids((i) => (i + 1 < n ? i + 1 : 0)),
              nodes_trueleafs: ids((i) => (i + 1 < n ? 0 : 1)),
              nodes_falsenodeids: ids(() => 0),
              nodes_falseleafs: ids(() => 1),
              leaf_targetids: [0],
              leaf_weights: f32(undefined, [1], [1]),
              n_targets: 1,
              aggregate_function: 1,
            },
          },
        ],
      });
    },
  },
  // dims [0] with 16 KiB of raw_data: refused on both read paths (the streaming one, which
  // leaves large raw_data in the file, accepted it), as ONNX Runtime refuses it.
  {
    name: 'empty-dims-with-raw-data',
    expect: 'refuse',
    error: /raw_data has 16384 bytes, float32 dims need 0/,
    build: () =>
      buildModel({
        inputs: [{ name: 'x', shape: [2] }],
        outputs: [{ name: 'y' }],
        initializers: [{ name: 'w', type: 'float32', dims: [0], data: new Float32Array(4096) }],
        nodes: [{ op: 'Concat', inputs: ['x', 'w'], outputs: ['y'], attrs: { axis: 0 } }],
      }),
  },
  // 20,000 Ifs, each outer one holding an inner one: every branch reserved the model's shared
  // name table to its exact need, rehashing (even shrinking) it each time; read in linear time.
  {
    name: 'ifs-nested-20000',
    expect: 'any',
    refuse: false,
    build: () => {
      const neg = (g, i, o) => ({
        name: g,
        outputs: [{ name: o }],
        nodes: [{ op: 'Neg', inputs: [i], outputs: [o] }],
      });
      return buildModel({
        inputs: [
          { name: 'x', shape: [2] },
          { name: 'c', type: 'bool', shape: [] },
        ],
        outputs: [{ name: 'y' }],
        nodes: Array.from({ length: 10000 }, (_, k) => {
          const i = k ? `m${k - 1}` : 'x';
          const inner = {
            op: 'If',
            inputs: ['c'],
            outputs: [`t${k}`],
            attrs: {
              then_branch: { graph: neg(`it${k}`, i, `it${k}o`) },
              else_branch: { graph: neg(`ie${k}`, i, `ie${k}o`) },
            },
          };
          return {
            op: 'If',
            inputs: ['c'],
            outputs: [k === 9999 ? 'y' : `m${k}`],
            attrs: {
              then_branch: { graph: { name: `ot${k}`, outputs: [{ name: `t${k}` }], nodes: [inner] } },
              else_branch: { graph: neg(`oe${k}`, i, `oe${k}o`) },
            },
          };
        }),
      });
    },
  },
];

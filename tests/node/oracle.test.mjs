// Tests for the equivalence oracle (tests/node/oracle.mjs) itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import ort from 'onnxruntime-node';

import { modelsDir, need, sharedDir } from './env.mjs';
import { assertEquivalent, compareModels, makeInputs } from './oracle.mjs';
import { buildModel } from './onnx-builder.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const haveShared = existsSync(modelsDir);
const SKIP_SHARED = `shared data not found at ${sharedDir} (set ONNXFOLD_SHARED)`;

const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-oracle-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

function save(name, bytes) {
  const p = join(tmp, name);
  writeFileSync(p, bytes);
  return p;
}

// Y = X + C, X: float32 [batch, 3]
function addModel(name, c, { outName = 'Y', opset = 13 } = {}) {
  return save(
    name,
    buildModel({
      opset,
      inputs: [{ name: 'X', type: 'float32', shape: ['batch', 3] }],
      outputs: [{ name: outName, type: 'float32', shape: ['batch', 3] }],
      initializers: [{ name: 'C', type: 'float32', dims: [3], data: Float32Array.from(c) }],
      nodes: [{ op: 'Add', inputs: ['X', 'C'], outputs: [outName] }],
    }),
  );
}

test('shared models: each model is equivalent to itself', async (t) => {
  if (!need(t, haveShared, SKIP_SHARED)) return;
  const models = readdirSync(modelsDir)
    .filter((f) => f.endsWith('.onnx'))
    .sort();
  assert.ok(models.length > 0, `no .onnx files in ${modelsDir}`);
  for (const f of models) {
    await t.test(f, async () => {
      const p = join(modelsDir, f);
      const r = await assertEquivalent(p, p);
      assert.equal(r.ok, true);
      assert.ok(r.outputs.length > 0);
      for (const o of r.outputs) {
        assert.equal(o.mismatches, 0);
        if (!o.nondeterministic)
          assert.equal(o.maxAbsDiff, 0, `${o.name} differs between two identical runs`);
      }
    });
  }
});

test('shared models: training-mode Dropout is detected as nondeterministic', async (t) => {
  const p = join(modelsDir, 'mobilenet_v3_small.op17.train.onnx');
  if (!need(t, existsSync(p), SKIP_SHARED)) return;
  const r = await compareModels(p, p);
  assert.equal(r.ok, true, r.message);
  assert.ok(
    r.outputs.some((o) => o.nondeterministic),
    r.message,
  );
});

test('shared models: different models are not equivalent', async (t) => {
  if (!need(t, haveShared, SKIP_SHARED)) return;
  const a = join(modelsDir, 'mobilenet_v2.op13.nofold.onnx');
  const b = join(modelsDir, 'mobilenet_v2.qdq_w8pc_fp32w.onnx');
  if (!need(t, existsSync(a) && existsSync(b), `${a} or ${b} missing`)) return;
  // Same input/output signature, but quantization changes the numbers.
  const r = await compareModels(a, b);
  assert.equal(r.ok, false, r.message);
  assert.match(r.message, /output 'output'/);
});

test('shared models: symbolic dims get sizes', async (t) => {
  const p = join(modelsDir, 'minibert.op14.nofold.onnx');
  if (!need(t, existsSync(p), SKIP_SHARED)) return;
  const s = await ort.InferenceSession.create(p, { graphOptimizationLevel: 'disabled', logSeverityLevel: 3 });
  try {
    const feeds = makeInputs(s, { seed: 3 });
    assert.deepEqual(feeds.input_ids.dims, [2, 8]);
    assert.equal(feeds.input_ids.type, 'int64');
    assert.ok([...feeds.input_ids.data].every((v) => v >= 0n && v < 10n));
    assert.ok([...feeds.attention_mask.data].every((v) => v === 1n));
    assert.deepEqual(makeInputs(s, { dimValue: 3, dims: { seq: 5 } }).input_ids.dims, [3, 5]);
  } finally {
    await s.release();
  }
});

test('hand-built model: identical copies are equivalent', async () => {
  const a = addModel('a.onnx', [1, 2, 3]);
  const b = addModel('b.onnx', [1, 2, 3]);
  const r = await compareModels(a, b);
  assert.equal(r.ok, true, r.message);
  assert.equal(r.outputs[0].name, 'Y');
  assert.equal(r.outputs[0].maxAbsDiff, 0);
  assert.deepEqual(r.outputs[0].dims, [2, 3]);
});

test('hand-built model: a perturbed constant is detected', async () => {
  const a = addModel('p0.onnx', [1, 2, 3]);
  const b = addModel('p1.onnx', [1, 2.5, 3]);
  const r = await compareModels(a, b);
  assert.equal(r.ok, false);
  const o = r.outputs.find((x) => x.name === 'Y');
  assert.equal(o.mismatches, 2); // column 1 of both batch rows
  assert.ok(Math.abs(o.maxAbsDiff - 0.5) < 1e-6);
  assert.equal(o.worst.coord[1], 1);
  await assert.rejects(assertEquivalent(a, b), (e) => {
    assert.match(e.message, /output 'Y'/);
    assert.match(e.message, /worst at \[\d,1\]/);
    assert.equal(e.result.ok, false);
    return true;
  });
});

test('hand-built model: differences within tolerance pass, outside fail', async () => {
  const a = addModel('t0.onnx', [1, 2, 3]);
  const b = addModel('t1.onnx', [1, 2, 3.0005]);
  assert.equal((await compareModels(a, b)).ok, true);
  assert.equal((await compareModels(a, b, { rtol: 0, atol: 1e-5 })).ok, false);
});

test('hand-built model: renamed output, extra input and dtype change fail', async () => {
  const a = addModel('r0.onnx', [1, 2, 3]);
  const renamed = addModel('r1.onnx', [1, 2, 3], { outName: 'Z' });
  let r = await compareModels(a, renamed);
  assert.equal(r.ok, false);
  assert.match(r.message, /output names differ/);

  const extraInput = save(
    'r2.onnx',
    buildModel({
      inputs: [
        { name: 'X', shape: ['batch', 3] },
        { name: 'W', shape: [3] },
      ],
      outputs: [{ name: 'Y', shape: ['batch', 3] }],
      nodes: [{ op: 'Add', inputs: ['X', 'W'], outputs: ['Y'] }],
    }),
  );
  r = await compareModels(a, extraInput);
  assert.equal(r.ok, false);
  assert.match(r.message, /inputs the original does not: W/);

  const asDouble = save(
    'r3.onnx',
    buildModel({
      inputs: [{ name: 'X', shape: ['batch', 3] }],
      outputs: [{ name: 'Y', type: 'float64', shape: ['batch', 3] }],
      initializers: [{ name: 'C', dims: [3], data: Float32Array.from([1, 2, 3]) }],
      nodes: [
        { op: 'Add', inputs: ['X', 'C'], outputs: ['S'] },
        { op: 'Cast', inputs: ['S'], outputs: ['Y'], attrs: { to: 11 } },
      ],
    }),
  );
  r = await compareModels(a, asDouble);
  assert.equal(r.ok, false);
  assert.match(r.message, /type differs: original float32, optimized float64/);
});

test('hand-built model: NaN equals NaN, NaN vs number differs', async () => {
  const sqrt = (name, abs) =>
    save(
      name,
      buildModel({
        inputs: [{ name: 'X', shape: ['batch', 4] }],
        outputs: [{ name: 'Y', shape: ['batch', 4] }],
        nodes: abs
          ? [
              { op: 'Abs', inputs: ['X'], outputs: ['A'] },
              { op: 'Sqrt', inputs: ['A'], outputs: ['Y'] },
            ]
          : [{ op: 'Sqrt', inputs: ['X'], outputs: ['Y'] }],
      }),
    );
  const a = sqrt('n0.onnx', false);
  const r = await compareModels(a, sqrt('n1.onnx', false));
  assert.equal(r.ok, true, r.message);
  const r2 = await compareModels(a, sqrt('n2.onnx', true));
  assert.equal(r2.ok, false);
  assert.equal(r2.outputs[0].maxAbsDiff, Infinity);
});

test('hand-built model: integer outputs compare exactly', async () => {
  const ids = (name, c) =>
    save(
      name,
      buildModel({
        inputs: [{ name: 'input_ids', type: 'int64', shape: ['batch', 'seq'] }],
        outputs: [{ name: 'Y', type: 'int64', shape: ['batch', 'seq'] }],
        initializers: [{ name: 'C', type: 'int64', dims: [1], data: BigInt64Array.from([c]) }],
        nodes: [{ op: 'Add', inputs: ['input_ids', 'C'], outputs: ['Y'] }],
      }),
    );
  const a = ids('i0.onnx', 1000000n);
  assert.equal((await compareModels(a, ids('i1.onnx', 1000000n))).ok, true);
  const r = await compareModels(a, ids('i2.onnx', 1000001n));
  assert.equal(r.ok, false);
  assert.equal(r.outputs[0].mismatches, 16); // [2, 8]: every element, despite rtol*|b| = 1000
});

test('hand-built model: stochastic Dropout must stay stochastic', async () => {
  const dropout = (name, keep) =>
    save(
      name,
      buildModel({
        opset: 13,
        inputs: [{ name: 'X', shape: ['batch', 64] }],
        outputs: [{ name: 'Y', shape: ['batch', 64] }],
        initializers: [
          { name: 'ratio', dims: [], data: Float32Array.from([0.5]) },
          { name: 'training', type: 'bool', dims: [], data: Uint8Array.from([1]) },
        ],
        nodes: keep
          ? [{ op: 'Dropout', inputs: ['X', 'ratio', 'training'], outputs: ['Y'] }]
          : [{ op: 'Identity', inputs: ['X'], outputs: ['Y'] }],
      }),
    );
  const a = dropout('d0.onnx', true);
  const r = await compareModels(a, a);
  assert.equal(r.ok, true, r.message);
  assert.equal(r.outputs[0].nondeterministic, true);
  const r2 = await compareModels(a, dropout('d1.onnx', false));
  assert.equal(r2.ok, false);
  assert.match(r2.message, /stochastic op was removed/);
});

test('check-equivalence CLI: exit 0 when equivalent, 1 when not', async () => {
  const cli = join(here, 'check-equivalence.mjs');
  const a = addModel('c0.onnx', [1, 2, 3]);
  const b = addModel('c1.onnx', [1, 2, 4]);
  const run = promisify(execFile);
  const ok = await run(process.execPath, [cli, a, a]);
  assert.match(ok.stdout, /^OK: /);
  await assert.rejects(run(process.execPath, [cli, a, b]), (e) => {
    assert.equal(e.code, 1);
    assert.match(e.stdout, /^FAIL: .*output 'Y'/);
    return true;
  });
  await assert.rejects(run(process.execPath, [cli, a]), (e) => e.code === 2);
});

// tools/make_cnn.py: the resnet50 and convnext_tiny benchmark models (random seeded weights, torch's
// do_constant_folding=False export form) at --image 64 pass onnx.checker's full check (--check),
// have torchvision's parameter counts (within 1%) and op counts, torch-style node and initializer
// names, and run in onnxruntime-node to finite, non-constant [1, 1000] outputs; convnext_tiny's
// opset-16 form (LayerNorm decomposed the way torch exports it) computes what opset 17's
// LayerNormalization does. resnet50 is written with --external-data, convnext_tiny inline.
// Skips with a reason when Debian's python3-onnx is missing; fails in CI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import ort from 'onnxruntime-node';

import { havePythonOnnx, need, python, repoRoot, run } from './env.mjs';
import { readModel } from './onnx-builder.mjs';
import { compareModels, makeInputs } from './oracle.mjs';

const makeCnn = join(repoRoot, 'tools', 'make_cnn.py');
const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-make-cnn-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

const ready = (t) =>
  need(t, havePythonOnnx(), 'Debian python3-onnx / python3-numpy not installed (scripts/bootstrap)');

// Writes the model and returns its path and make_cnn.py's JSON summary.
async function make(arch, name, flags = []) {
  const out = join(tmp, name);
  const { stdout } = await run(python, [makeCnn, '--arch', arch, '--image', '64', '--out', out, ...flags]);
  return { out, info: JSON.parse(stdout) };
}

const CASES = {
  resnet50: {
    params: 25_557_032,
    flags: ['--external-data', '--check'],
    ops: { Conv: 53, BatchNormalization: 53, Relu: 49, Add: 16, MaxPool: 1, Gemm: 1 },
    outputs: ['/layer1/layer1.0/conv1/Conv_output_0', '/layer4/layer4.2/relu_2/Relu_output_0'],
    initializers: ['layer1.0.downsample.1.running_var', 'fc.weight'],
  },
  convnext_tiny: {
    params: 28_589_128,
    flags: ['--check'],
    ops: { Conv: 22, LayerNormalization: 23, MatMul: 36, Erf: 18, Transpose: 82, Gemm: 1 },
    outputs: [
      '/features/features.5/features.5.8/block/block.3/MatMul_output_0',
      '/classifier/classifier.0/Transpose_1_output_0',
    ],
    initializers: ['features.7.2.layer_scale', 'features.6.1.bias', 'classifier.2.weight'],
  },
};

for (const [arch, want] of Object.entries(CASES)) {
  test(`make_cnn.py ${arch}: checker, parameters, ops, names; runs in ONNX Runtime`, async (t) => {
    if (!ready(t)) return;
    const { out, info } = await make(arch, `${arch}.onnx`, want.flags);
    assert.equal(existsSync(`${out}.data`), want.flags.includes('--external-data'));

    const model = readModel(readFileSync(out));
    const ops = {};
    for (const n of model.nodes) ops[n.op] = (ops[n.op] ?? 0) + 1;
    for (const [op, count] of Object.entries(want.ops)) assert.equal(ops[op], count, op);
    const outputs = new Set(model.nodes.flatMap((n) => n.outputs));
    for (const name of [...want.outputs, 'output']) assert.ok(outputs.has(name), name);
    const names = new Set(model.initializers.map((i) => i.name));
    for (const name of want.initializers) assert.ok(names.has(name), name);
    // Trainable parameters: BN's running statistics are buffers, not parameters.
    let params = 0;
    for (const i of model.initializers) {
      if (!/\.running_(mean|var)$/.test(i.name)) params += i.dims.reduce((a, b) => a * b, 1);
    }
    t.diagnostic(`${params} parameters, ${model.nodes.length} nodes`);
    assert.ok(Math.abs(params - want.params) <= 0.01 * want.params, `${params} parameters`);
    assert.equal(info.params, params);

    const session = await ort.InferenceSession.create(out, { graphOptimizationLevel: 'disabled' });
    const { output } = await session.run(makeInputs(session, { seed: 7 }));
    assert.deepEqual(output.dims, [1, 1000]);
    let min = Infinity;
    let max = -Infinity;
    for (const v of output.data) {
      assert.ok(Number.isFinite(v), `non-finite output ${v}`);
      min = Math.min(min, v);
      max = Math.max(max, v);
    }
    t.diagnostic(`output range [${min}, ${max}]`);
    assert.ok(max - min > 0.5, `output range [${min}, ${max}]`);
  });
}

test('make_cnn.py convnext_tiny: the opset-16 LayerNorm decomposition equals LayerNormalization', async (t) => {
  if (!ready(t)) return;
  const [decomposed, fused] = await Promise.all([
    make('convnext_tiny', 'convnext.op16.onnx', ['--opset', '16']),
    make('convnext_tiny', 'convnext.op17.onnx'),
  ]);
  assert.equal(decomposed.info.ops.LayerNormalization, undefined);
  assert.equal(decomposed.info.ops.ReduceMean, 46);
  const r = await compareModels(decomposed.out, fused.out, { seed: 3, rtol: 1e-3, atol: 1e-4 });
  assert.ok(r.ok, r.message);
});

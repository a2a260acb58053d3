// fuse-normalizations on real exports, checked in ONNX Runtime: minibert (opset 14) raised to
// opset 17 gets LayerNormalization (and Gelu needs 20), a make_llm decoder raised to 23 gets one
// RMSNormalization per norm (2 per layer + the final one); each optimized model must give the
// original's outputs (the oracle, ORT's own graph optimizations off). Uses the native CLI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import ort from 'onnxruntime-node';

import { cli, cliMissing, dist, haveCli, havePythonOnnx, makeDecoder, modelsDir, need, run } from './env.mjs';
import { readModel } from './onnx-builder.mjs';
import { compareModels, makeInputs } from './oracle.mjs';

const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-fuse-norm-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

// Optimizes `input` with the CLI and extra flags; returns the output model's op counts and the
// report's fusion counters.
async function optimize(input, tag, flags) {
  const output = join(tmp, `${tag}.onnx`);
  const report = join(tmp, `${tag}.report.json`);
  await run(cli, ['optimize', input, '-o', output, '-q', '--report', report, ...flags]);
  const ops = {};
  for (const n of readModel(readFileSync(output)).nodes) ops[n.op] = (ops[n.op] ?? 0) + 1;
  const counters = {};
  for (const p of JSON.parse(readFileSync(report, 'utf8')).passes) {
    if (p.pass !== 'fuse-normalizations') continue;
    for (const [k, v] of Object.entries(p.counters ?? {})) counters[k] = (counters[k] ?? 0) + v;
  }
  return { output, ops, counters };
}

async function assertSame(t, orig, opt) {
  const r = await compareModels(orig, opt, { seed: 3, rtol: 1e-3, atol: 1e-4 });
  const worst = Math.max(...r.outputs.map((o) => o.maxAbsDiff ?? 0));
  t.diagnostic(`largest difference ${worst}`);
  assert.ok(r.ok, r.message);
}

const minibert = join(modelsDir, 'minibert.op14.nofold.onnx');

test('minibert with targetOpset 17: LayerNormalization, equivalent in ONNX Runtime', async (t) => {
  if (!need(t, haveCli, cliMissing) || !need(t, existsSync(minibert), `${minibert} is missing`)) return;
  const plain = await optimize(minibert, 'minibert.op14', []);
  assert.equal(plain.ops.LayerNormalization ?? 0, 0, 'opset 14 has no LayerNormalization');
  const r = await optimize(minibert, 'minibert.op17', ['--target-opset', '17']);
  t.diagnostic(`ops: ${JSON.stringify(r.ops)}; counters ${JSON.stringify(r.counters)}`);
  assert.ok((r.ops.LayerNormalization ?? 0) > 0, 'LayerNormalization fused');
  assert.equal(
    r.ops.LayerNormalization,
    (r.counters['pattern fuse-layer-normalization'] ?? 0) +
      (r.counters['pattern fuse-layer-normalization-reciprocal'] ?? 0),
    'counted in the report',
  );
  assert.equal(r.ops.Sqrt ?? 0, 0, 'no decomposed normalization left');
  await assertSame(t, minibert, r.output);
});

test('minibert with targetOpset 20: Gelu too, equivalent in ONNX Runtime', async (t) => {
  if (!need(t, haveCli, cliMissing) || !need(t, existsSync(minibert), `${minibert} is missing`)) return;
  const r = await optimize(minibert, 'minibert.op20', ['--target-opset', '20']);
  t.diagnostic(`ops: ${JSON.stringify(r.ops)}`);
  assert.ok((r.ops.Gelu ?? 0) > 0, 'Gelu fused');
  assert.equal(r.ops.Erf ?? 0, 0, 'no decomposed Gelu left');
  assert.equal(r.ops.Gelu, r.counters['pattern fuse-gelu']);
  await assertSame(t, minibert, r.output);
});

test('a make_llm decoder with targetOpset 23: 2 * layers + 1 RMSNormalization, equivalent', async (t) => {
  if (!need(t, haveCli, cliMissing) || !need(t, havePythonOnnx(), 'python3-onnx is not installed')) return;
  const layers = 2;
  const model = join(tmp, 'llm', 'model.onnx');
  await makeDecoder(model, { layers });
  const r = await optimize(model, 'llm.op23', ['--target-opset', '23']);
  t.diagnostic(`ops: ${JSON.stringify(r.ops)}`);
  assert.equal(r.ops.RMSNormalization ?? 0, 2 * layers + 1);
  assert.equal(r.ops.Sqrt ?? 0, 0, 'no decomposed normalization left');
  await assertSame(t, model, r.output);
});

test('a target opset past the newest onnxfold knows is an error', async (t) => {
  if (!need(t, haveCli, cliMissing) || !need(t, existsSync(minibert), `${minibert} is missing`)) return;
  await assert.rejects(
    run(cli, ['optimize', minibert, '-o', join(tmp, 'x.onnx'), '-q', '--target-opset', '99']),
    /target opset 99/,
  );
});

test('minibert with targetOpset 20 and float16: the fused ops stay float16, outputs within 1e-2 of the range', async (t) => {
  if (!need(t, haveCli, cliMissing) || !need(t, existsSync(minibert), `${minibert} is missing`)) return;
  const r = await optimize(minibert, 'minibert.op20.fp16', ['--target-opset', '20', '--float16']);
  assert.ok((r.ops.LayerNormalization ?? 0) > 0 && (r.ops.Gelu ?? 0) > 0, JSON.stringify(r.ops));
  // Their scale and bias weights are float16: the ops run in float16, not in a float32 island.
  const fp16 = readModel(readFileSync(r.output));
  const types = new Map(fp16.initializers.map((i) => [i.name, i.type]));
  for (const n of fp16.nodes.filter((x) => x.op === 'LayerNormalization')) {
    assert.equal(types.get(n.inputs[1]), 'float16', `LayerNormalization scale ${n.inputs[1]}`);
  }
  t.diagnostic(`ops: ${JSON.stringify(r.ops)}`);
  const open = (p) =>
    ort.InferenceSession.create(p, { graphOptimizationLevel: 'disabled', logSeverityLevel: 3 });
  const orig = await open(minibert);
  const conv = await open(r.output);
  const feeds = makeInputs(orig, { seed: 7 });
  const a = await orig.run(feeds);
  const b = await conv.run(feeds);
  for (const name of orig.outputNames) {
    let lo = Infinity,
      hi = -Infinity,
      d = 0;
    for (let i = 0; i < a[name].data.length; i++) {
      lo = Math.min(lo, a[name].data[i]);
      hi = Math.max(hi, a[name].data[i]);
      d = Math.max(d, Math.abs(a[name].data[i] - b[name].data[i]));
    }
    t.diagnostic(`${name}: largest difference ${d / (hi - lo)} of the range`);
    assert.ok(d <= 1e-2 * (hi - lo), `${name}: ${d} against a range of ${hi - lo}`);
  }
});

test('the npm package: optimize(bytes, { targetOpset: 17 }) fuses and counts LayerNormalization', async (t) => {
  if (
    !need(t, existsSync(dist), `${dist} not built`) ||
    !need(t, existsSync(minibert), `${minibert} is missing`)
  )
    return;
  const { optimize } = await import('onnxfold');
  const { model, report } = await optimize(readFileSync(minibert), { targetOpset: 17 });
  const fused = report.passes
    .filter((p) => p.pass === 'fuse-normalizations')
    .reduce((n, p) => n + (p.counters?.['pattern fuse-layer-normalization'] ?? 0), 0);
  const ops = readModel(model).nodes.filter((n) => n.op === 'LayerNormalization').length;
  t.diagnostic(`LayerNormalization: ${ops}, counted ${fused}`);
  assert.ok(ops > 0);
  assert.equal(fused, ops);
  await assert.rejects(optimize(readFileSync(minibert), { targetOpset: -1 }), /targetOpset/);
});

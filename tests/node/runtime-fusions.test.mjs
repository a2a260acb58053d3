// ONNX Runtime fuses no less in onnxfold's output than in the original.
//
// ORT's own graph optimizations (LayerNorm, SkipLayerNorm, Gelu, Conv+activation, MatMul+Add...)
// match the exporter's patterns. A rewrite of ours that breaks one (a LayerNorm whose scale Mul
// of ones was removed ran as eight ops) makes the output slower in the runtime people ship to,
// whatever our node count says. For every shared model and a small make_llm decoder, both models
// are optimized by ORT at its default level and written back (optimizedModelFilePath): ours may
// not have more nodes, nor more of the ops that only survive a failed fusion.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import ort from 'onnxruntime-node';

import { readModel } from './onnx-builder.mjs';
import { cli, cliMissing, haveCli, havePythonOnnx, makeDecoder, modelsDir, need, run } from './env.mjs';

const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-fusions-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

// The pieces of a LayerNorm, RMSNorm or Gelu that ORT leaves only where it could not fuse them.
const UNFUSED = ['ReduceMean', 'Pow', 'Sqrt', 'Erf', 'Tanh', 'Reciprocal'];

const opKey = (n) => (n.domain && n.domain !== 'ai.onnx' ? `${n.domain}.${n.op}` : n.op);
function histogram(model) {
  const h = {};
  for (const n of model.nodes) h[opKey(n)] = (h[opKey(n)] ?? 0) + 1;
  return h;
}

/** The model as ONNX Runtime's CPU provider optimizes it at its default level. */
async function ortOptimized(path, tag) {
  const out = join(tmp, `${tag}.ort.onnx`);
  const s = await ort.InferenceSession.create(path, {
    executionProviders: ['cpu'],
    optimizedModelFilePath: out,
    logSeverityLevel: 3,
  });
  await s.release();
  return readModel(readFileSync(out));
}

async function compare(t, input, tag, flags = []) {
  const output = join(tmp, `${tag}.onnxfold.onnx`);
  await run(cli, ['optimize', input, '-o', output, '-q', ...flags]);
  const a = histogram(await ortOptimized(input, `${tag}.orig`));
  const b = histogram(await ortOptimized(output, `${tag}.ours`));
  const total = (h) => Object.values(h).reduce((x, y) => x + y, 0);
  const changed = [...new Set([...Object.keys(a), ...Object.keys(b)])]
    .filter((k) => a[k] !== b[k])
    .map((k) => `${k} ${a[k] ?? 0} -> ${b[k] ?? 0}`);
  t.diagnostic(
    `${tag}: ORT-optimized nodes ${total(a)} -> ${total(b)}${changed.length ? `; ${changed.join(', ')}` : ''}`,
  );
  assert.ok(
    total(b) <= total(a),
    `${tag}: ORT leaves ${total(b)} nodes of our output, ${total(a)} of the original`,
  );
  for (const op of UNFUSED) {
    assert.ok(
      (b[op] ?? 0) <= (a[op] ?? 0),
      `${tag}: ${op} ${a[op] ?? 0} -> ${b[op] ?? 0} after ORT's fusions`,
    );
  }
}

const shared = existsSync(modelsDir)
  ? readdirSync(modelsDir)
      .filter((f) => f.endsWith('.onnx'))
      .sort()
  : [];

for (const f of shared) {
  test(`ONNX Runtime fuses as much in onnxfold's output as in ${f}`, async (t) => {
    if (!need(t, haveCli, cliMissing)) return;
    await compare(t, join(modelsDir, f), f.replace(/\.onnx$/, ''));
  });
}

// With --target-opset, fuse-normalizations writes LayerNormalization, Gelu and RMSNormalization
// itself: ORT must still fuse around them (SkipLayerNormalization, ...) as in the original.
for (const opset of [17, 20]) {
  test(`ONNX Runtime fuses as much in onnxfold --target-opset ${opset}'s output as in minibert`, async (t) => {
    const f = 'minibert.op14.nofold.onnx';
    if (!need(t, haveCli, cliMissing) || !need(t, shared.includes(f), `${f} is missing`)) return;
    await compare(t, join(modelsDir, f), `minibert.op${opset}`, ['--target-opset', String(opset)]);
  });
}

test("ONNX Runtime fuses as much in onnxfold's output as in a make_llm decoder (RMSNorm, rotary, SiLU)", async (t) => {
  if (!need(t, haveCli, cliMissing) || !need(t, havePythonOnnx(), 'python3-onnx is not installed')) return;
  const model = join(tmp, 'llm', 'model.onnx');
  await makeDecoder(model);
  await compare(t, model, 'llm');
  await compare(t, model, 'llm.op23', ['--target-opset', '23']);
});

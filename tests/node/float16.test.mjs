// --float16 against the float32 model, under ONNX Runtime: every float32 shared model and a small
// Llama-shaped decoder (make_llm.py), converted by the native CLI, must be at most 0.6x the size
// of the default pipeline's output, load, and give every output within TOLERANCE of that
// output's range (max |diff| <= TOLERANCE * (max - min) of the float32 output, seeded inputs).
// Prints the table: model, sizes, largest difference relative to the range.
//
// Why relative to the range: float16 keeps 11 significant bits (a relative step of 2^-11, about
// 4.9e-4) and the errors of a few dozen layers add up, so an element near zero can be off by
// far more than its own size while being small next to the values around it; 1e-2 of the range
// is 20 float16 steps of the largest value, which a broken conversion (a wrong weight, a
// saturated activation, a float32-only op fed float16) overshoots by orders of magnitude.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  cli,
  cliMissing,
  dist,
  haveCli,
  makeLlm,
  makeSmallDecoder,
  modelBytes,
  modelsDir,
  need,
  repoRoot,
  run,
} from './env.mjs';
import { buildModel } from './onnx-builder.mjs';
import { compareByRange } from './oracle.mjs';

const TOLERANCE = 1e-2;
const SIZE_RATIO = 0.6;
const SEED = 7;

const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-float16-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

const models = existsSync(modelsDir)
  ? readdirSync(modelsDir)
      .filter((f) => f.endsWith('.onnx'))
      .sort()
  : [];
const rows = [];

async function checkModel(t, name, input) {
  const opt = join(tmp, `${name}.opt.onnx`);
  const fp16 = join(tmp, `${name}.fp16.onnx`);
  const reportPath = join(tmp, `${name}.fp16.json`);
  await run(cli, ['optimize', input, '-o', opt, '-q']);
  await run(cli, ['optimize', input, '-o', fp16, '--float16', '--verify', '--report', reportPath, '-q']);
  const report = JSON.parse(readFileSync(reportPath, 'utf8'));
  assert.deepEqual(report.warnings, [], `warnings: ${report.warnings.join('; ')}`);
  const runs = report.passes.filter((p) => p.pass === 'convert-float16');
  assert.ok(runs.length >= 1 && !runs.at(-1).changed, 'convert-float16 ran and was idempotent');
  const first = runs[0];
  const converted = first.counters?.['float32 weight bytes converted'] ?? 0;
  const before = modelBytes(opt);
  const after = modelBytes(fp16);
  // A float32 model: most of its bytes are float32 weights (not a QDQ model with int8 weights).
  const float32Model = first.changed && converted >= 0.5 * before;
  if (float32Model) {
    assert.ok(after < SIZE_RATIO * before, `${name}: ${after} bytes is not under ${SIZE_RATIO}x ${before}`);
  }
  const outputs = await compareByRange(input, fp16, { seed: SEED });
  const compared = outputs.filter((o) => !o.nondeterministic);
  const worst = Math.max(0, ...compared.map((o) => o.rel));
  rows.push({
    name,
    original: modelBytes(input),
    before,
    after,
    ratio: after / before,
    worst,
    float32Model,
    shapeOnly: compared.length === 0,
    kept: first.counters?.['nodes kept in float32'] ?? 0,
    saturated: first.counters?.['values saturated'] ?? 0,
    note: first.changed ? '' : (first.notes ?? []).join('; '),
  });
  for (const o of compared) {
    assert.ok(
      o.rel <= TOLERANCE,
      `${name}: output '${o.name}' differs by ${o.maxAbs}, ` +
        `${o.rel.toExponential(2)} of its range (> ${TOLERANCE})`,
    );
  }
  t.diagnostic(
    `${name}: ${before} -> ${after} bytes (${(after / before).toFixed(3)}x), max |diff| / range ${worst.toExponential(2)}`,
  );
}

for (const name of models) {
  test(`--float16 ${name}: half the size, loads, outputs within ${TOLERANCE} of their range`, async (t) => {
    if (!need(t, haveCli, cliMissing)) return;
    await checkModel(t, name.replace(/\.onnx$/, ''), join(modelsDir, name));
  });
}

test('--float16 on a small Llama-shaped decoder (make_llm.py)', async (t) => {
  if (
    !need(t, haveCli, cliMissing) ||
    !need(t, existsSync(makeLlm), `${makeLlm} is missing (set ONNXFOLD_SHARED)`)
  )
    return;
  const model = join(tmp, 'llama_small.onnx');
  makeSmallDecoder(model);
  await checkModel(t, 'llama_small', model);
  const row = rows.find((r) => r.name === 'llama_small');
  assert.ok(row.saturated >= 1, 'the -FLT_MAX mask constant saturates to -65504');
});

// A local function whose body takes an attribute by reference (the Conv's group): type
// inference cannot run that Conv without the call's value, and the converted model must still
// load (it once held float16 -> float16 Casts typed float).
test('--float16 on local functions with attribute references', async (t) => {
  if (!need(t, haveCli, cliMissing)) return;
  const weights = Float32Array.from({ length: 16 * 8 * 3 * 3 }, (_, i) => Math.sin(i) / 4);
  const model = join(tmp, 'function_ref_attr.onnx');
  writeFileSync(
    model,
    buildModel({
      opset: 17,
      inputs: [{ name: 'x', shape: [1, 16, 5, 5] }],
      outputs: [{ name: 'z', shape: [1, 16, 3, 3] }],
      initializers: [{ name: 'w', type: 'float32', dims: [16, 8, 3, 3], data: weights }],
      imports: [{ domain: 'local', version: 1 }],
      nodes: [{ op: 'ConvG', domain: 'local', inputs: ['x', 'w'], outputs: ['z'], attrs: { group: 2 } }],
      functions: [
        {
          name: 'ConvG',
          domain: 'local',
          inputs: ['x', 'w'],
          outputs: ['y'],
          attributes: ['group'],
          nodes: [
            { op: 'Conv', inputs: ['x', 'w'], outputs: ['c'], attrs: { group: { ref: 'group', type: 2 } } },
            { op: 'Relu', inputs: ['c'], outputs: ['y'] },
          ],
        },
      ],
    }),
  );
  await checkModel(t, 'function_ref_attr', model);
});

test("npm: optimize(bytes, { float16: true }) gives the native CLI's bytes and reports", async (t) => {
  if (!need(t, existsSync(dist), `${dist} not built`) || !need(t, haveCli, cliMissing)) return;
  const { optimize } = await import('onnxfold');
  const input = join(repoRoot, 'examples', 'conv1d_m5.onnx');
  const { model, report } = await optimize(readFileSync(input), { float16: true });
  const native = join(tmp, 'conv1d_m5.native.fp16.onnx');
  await run(cli, ['optimize', input, '-o', native, '--float16', '-q']);
  assert.ok(
    Buffer.from(model).equals(readFileSync(native)),
    'wasm and native float16 outputs are byte-identical',
  );
  assert.ok(model.length < SIZE_RATIO * (await optimize(readFileSync(input))).model.length);
  const first = report.passes.find((p) => p.pass === 'convert-float16');
  assert.ok(first?.changed && first.notes.some((n) => n.startsWith('converted ')), 'the pass reports itself');
  await assert.rejects(optimize(readFileSync(input), { float16: 'yes' }), /float16: expected a boolean/);
});

test('--float16 table', { concurrency: false }, (t) => {
  if (!rows.length) {
    t.skip('no model was converted');
    return;
  }
  const lines = [
    '| model | input bytes | default pipeline | --float16 | ratio | max |diff| / range | kept fp32 nodes |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const why = r.note.includes('QDQ') ? 'a QDQ model below opset 19' : 'mostly not float32 weights';
    lines.push(
      `| ${r.name}${r.float32Model ? '' : ` (not converted: ${why})`} | ${r.original} | ` +
        `${r.before} | ${r.after} | ${r.ratio.toFixed(3)} | ` +
        `${r.shapeOnly ? 'nondeterministic: shapes only' : r.worst.toExponential(2)} | ${r.kept} |`,
    );
  }
  console.log(lines.join('\n'));
});

// onnxfold's default pipeline folds at least what ONNX Runtime's offline 'basic' level folds:
// on every shared model and on Llama-shaped decoders from ../shared/tools/make_llm.py (one
// rotary table, and one per layer), the optimized model has no more nodes than ORT's, stays
// equivalent under the oracle, and grows by no more than the growth budget (5% by default).
// With growthBudget 0 the rotary tables stay nodes (every fold keeps to its own budget).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import ort from 'onnxruntime-node';

import { cli, cliMissing, haveCli, havePythonOnnx, makeLlm, modelsDir, need, python, run } from './env.mjs';
import { assertEquivalent } from './oracle.mjs';

const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-vs-ort-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));
const GROWTH = 0.05;

async function info(path) {
  const { stdout } = await run(cli, ['info', '--json', path], { maxBuffer: 1 << 26 });
  return JSON.parse(stdout);
}

async function ortBasic(input, output) {
  const session = await ort.InferenceSession.create(resolve(input), {
    graphOptimizationLevel: 'basic',
    optimizedModelFilePath: resolve(output),
    logSeverityLevel: 3,
  });
  await session.release();
}

async function check(t, name, input, extra = []) {
  const base = join(tmp, name);
  await run(cli, ['optimize', input, '-o', `${base}.of.onnx`, '--report', `${base}.json`, '-q', ...extra]);
  await ortBasic(input, `${base}.ort.onnx`);
  const [ours, theirs] = [await info(`${base}.of.onnx`), await info(`${base}.ort.onnx`)];
  const report = JSON.parse(readFileSync(`${base}.json`, 'utf8'));
  t.diagnostic(
    `${name}: ${report.before.nodes} nodes -> onnxfold ${ours.nodes}, ORT basic ${theirs.nodes}; ` +
      `weights ${report.before.initializer_bytes} -> ${report.after.initializer_bytes} bytes`,
  );
  await assertEquivalent(input, `${base}.of.onnx`);
  return { ours, theirs, report };
}

const models = existsSync(modelsDir)
  ? readdirSync(modelsDir)
      .filter((f) => f.endsWith('.onnx'))
      .sort()
  : [];
for (const name of models) {
  test(`${name}: no more nodes than ORT basic, within the growth budget`, async (t) => {
    if (!need(t, haveCli, cliMissing)) return;
    const { ours, theirs, report } = await check(t, name.replace(/\.onnx$/, ''), join(modelsDir, name));
    assert.ok(ours.nodes <= theirs.nodes, `${ours.nodes} nodes, ORT basic ${theirs.nodes}`);
    assert.ok(report.after.initializer_bytes <= report.before.initializer_bytes * (1 + GROWTH) + 1024);
  });
}

const haveMakeLlm = () => existsSync(makeLlm) && havePythonOnnx();

const decoders = {
  // max-pos 512: cos and sin tables of 32 KiB each, far over the 1 KiB a fold may add alone.
  llama_one_table: [
    '--layers',
    '2',
    '--hidden',
    '256',
    '--heads',
    '4',
    '--kv-heads',
    '2',
    '--ffn',
    '512',
    '--vocab',
    '1024',
    '--max-pos',
    '512',
  ],
  llama_table_per_layer: [
    '--layers',
    '4',
    '--hidden',
    '256',
    '--heads',
    '4',
    '--kv-heads',
    '2',
    '--ffn',
    '512',
    '--vocab',
    '1024',
    '--max-pos',
    '512',
    '--rope-per-layer',
    '--weight-layout',
    'out_in',
  ],
};

for (const [name, args] of Object.entries(decoders)) {
  test(`make_llm ${name}: rotary tables fold under the growth budget, no more nodes than ORT basic`, async (t) => {
    if (!need(t, haveCli, cliMissing) || !need(t, haveMakeLlm(), `${makeLlm} or python3-onnx is missing`))
      return;
    const input = join(tmp, `${name}.onnx`);
    execFileSync(python, [makeLlm, ...args, '--out', input], { stdio: 'ignore' });
    const { ours, theirs, report } = await check(t, name, input);
    assert.ok(ours.nodes <= theirs.nodes, `${ours.nodes} nodes, ORT basic ${theirs.nodes}`);
    assert.equal(ours.op_histogram.Cos ?? 0, 0, 'the rotary tables are constants');
    assert.ok(report.after.initializer_bytes <= report.before.initializer_bytes * (1 + GROWTH));

    const kept = await check(t, `${name}.nogrowth`, input, ['--growth-budget', '0']);
    assert.ok(kept.ours.op_histogram.Cos > 0, 'growthBudget 0: every fold keeps to its own budget');
    assert.ok(kept.ours.nodes > ours.nodes);
    // The report says what each refused table would cost and remove (the chain feeding it).
    // (Cos and Sin share the Concat before them: each removes only itself.)
    const cos = kept.report.not_folded.find((n) => n.op === 'Cos');
    assert.ok(cos.would_add_bytes > 1024 && cos.would_remove_nodes === 1, JSON.stringify(cos));
    const concat = kept.report.not_folded.find((n) => n.op === 'Concat' && n.would_add_bytes > 0);
    assert.ok(concat.would_remove_nodes >= 2, JSON.stringify(concat));
  });
}

// Every shared model, optimized by the native CLI with the default pipeline,
// must compute the same function as the original (the ORT oracle), and the
// CLI must fail cleanly on bad input without leaving an output file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { cli, cliMissing, haveCli, modelsDir, need, run } from './env.mjs';
import { assertEquivalent } from './oracle.mjs';

const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-optimize-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

const models = existsSync(modelsDir)
  ? readdirSync(modelsDir)
      .filter((f) => f.endsWith('.onnx'))
      .sort()
  : [];

for (const name of models) {
  test(`optimize ${name} stays equivalent`, async (t) => {
    if (!need(t, haveCli, cliMissing)) return;
    const input = join(modelsDir, name);
    const output = join(tmp, name.replace(/\.onnx$/, '.opt.onnx'));
    const report = join(tmp, name.replace(/\.onnx$/, '.report.json'));
    const before = readFileSync(input);
    await run(cli, ['optimize', input, '-o', output, '--report', report, '--verify', '-q']);
    assert.ok(readFileSync(input).equals(before), 'the input file was modified');
    const r = JSON.parse(readFileSync(report, 'utf8'));
    assert.deepEqual(r.warnings, [], `warnings: ${r.warnings.join('; ')}`);
    await assertEquivalent(input, output);
  });
}

test('shared models are present', (t) => {
  if (!need(t, models.length > 0, `no models in ${modelsDir} (set ONNXFOLD_SHARED)`)) return;
  assert.ok(models.length >= 10);
});

test('bad input: clear error, non-zero exit, no output file', async (t) => {
  if (!need(t, haveCli, cliMissing)) return;
  const bad = join(tmp, 'bad.onnx');
  writeFileSync(bad, Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01]));
  const out = join(tmp, 'bad.opt.onnx');
  await assert.rejects(run(cli, ['optimize', bad, '-o', out]), (e) => {
    assert.equal(e.code, 1);
    assert.match(e.stderr, /^onnxfold: error: .*ModelProto/m);
    assert.equal(e.stderr.trim().split('\n').length, 1, 'one line');
    return true;
  });
  assert.ok(!existsSync(out), 'no output file after a failure');
  assert.deepEqual(
    readdirSync(tmp).filter((f) => f.includes('.tmp-')),
    [],
    'no temporary files left',
  );
});

test('refuses to overwrite its input', async (t) => {
  if (!need(t, haveCli, cliMissing)) return;
  const m = join(tmp, 'self.onnx');
  writeFileSync(m, readFileSync(join(modelsDir, models[0] ?? 'missing')));
  const size = statSync(m).size;
  await assert.rejects(run(cli, ['optimize', m, '-o', m]), /never overwrites its input/);
  assert.equal(statSync(m).size, size);
});

test('unknown pass name is an error naming the pass', async (t) => {
  if (!need(t, haveCli, cliMissing)) return;
  const out = join(tmp, 'x.onnx');
  await assert.rejects(
    run(cli, ['optimize', join(modelsDir, models[0] ?? 'missing'), '-o', out, '--passes', 'nope']),
    /unknown pass 'nope'/,
  );
  assert.ok(!existsSync(out));
});

// Cross-build determinism: the wasm package (dist/) and the native CLI (build/native/onnxfold, or
// ONNXFOLD_CLI) give byte-identical outputs for every shared model with the default pipeline.
// On a difference the message names the first differing byte and the initializer or node around it.
// Skips with a reason when a build or the models are missing; fails instead when CI is set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli, dist, modelsDir, need } from './env.mjs';



// Printable strings around `offset` (tensor and node names are stored as plain text nearby).
function context(bytes, offset) {
  const from = Math.max(0, offset - 200);
  const text = Buffer.from(bytes.subarray(from, Math.min(bytes.length, offset + 50))).toString('latin1');
  const names = text.match(/[\x20-\x7e]{4,}/g) || [];
  return names.slice(-4).join(' | ');
}

const models = existsSync(modelsDir) ? readdirSync(modelsDir).filter((f) => f.endsWith('.onnx')).sort() : [];

test('wasm and native outputs are byte-identical on every shared model', async (t) => {
  if (!need(t, existsSync(dist), `${dist} not built (cmake --preset wasm && cmake --build --preset wasm --target onnxfold_wasm)`)) return;
  if (!need(t, existsSync(cli), `${cli} not built (cmake --preset native && cmake --build --preset native)`)) return;
  if (!need(t, models.length > 0, `no models in ${modelsDir} (set ONNXFOLD_SHARED)`)) return;
  const { optimize } = await import('onnxfold');
  const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-det-'));
  try {
    for (const name of models) {
      await t.test(name, async () => {
        const out = join(tmp, name);
        execFileSync(cli, ['optimize', join(modelsDir, name), '-o', out, '-q'], { stdio: ['ignore', 'ignore', 'pipe'] });
        const native = readFileSync(out);
        const { model: wasm } = await optimize(readFileSync(join(modelsDir, name)));
        if (Buffer.compare(native, wasm) === 0) return;
        let i = 0;
        while (i < native.length && i < wasm.length && native[i] === wasm[i]) i++;
        assert.fail(`${name}: native ${native.length} bytes, wasm ${wasm.length} bytes, first difference at byte ${i} ` +
          `(near: ${context(native, i)})`);
      });
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

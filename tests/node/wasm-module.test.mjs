// Smoke test: the Embind module built by the wasm preset (dist/onnxfold.mjs + onnxfold.wasm) loads
// under node through its ESM shims. ONNXFOLD_WASM_MODULE overrides the path (ctest sets it to the
// build tree's copy). Skips when the module has not been built (fails in CI).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { need, repoRoot } from './env.mjs';

const modulePath = process.env.ONNXFOLD_WASM_MODULE
  ? resolve(process.env.ONNXFOLD_WASM_MODULE)
  : resolve(repoRoot, 'dist', 'onnxfold.mjs');

test('wasm module: loads under node and instantiates', async (t) => {
  if (
    !need(
      t,
      existsSync(modulePath),
      `${modulePath} not built (cmake --preset wasm && cmake --build --preset wasm)`,
    )
  )
    return;
  const { default: createOnnxfold } = await import(pathToFileURL(modulePath).href);
  assert.equal(typeof createOnnxfold, 'function');
  const M = await createOnnxfold();
  assert.equal(typeof M, 'object');
  assert.ok(M.HEAPU8 === undefined || M.HEAPU8 instanceof Uint8Array);
  // The Embind surface js/ relies on (wasm-bindings/bindings.cpp).
  for (const name of [
    'optimize',
    'inspect',
    'validate',
    'version',
    'passes',
    'optionSchema',
    'variantPlan',
  ]) {
    assert.equal(typeof M[name], 'function', `Embind function ${name}`);
  }
  assert.match(M.version(), /^\d+\.\d+\.\d+/);
  assert.ok(JSON.parse(M.passes()).default.length > 0);
  // A second instance is independent.
  const M2 = await createOnnxfold();
  assert.notEqual(M, M2);
});

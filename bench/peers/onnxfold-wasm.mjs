#!/usr/bin/env node
// onnxfold's wasm build under node: loads dist/onnxfold.mjs (ONNXFOLD_WASM_MODULE overrides the
// path), reads IN, optimizes with the default pipeline, writes OUT.
//   node bench/peers/onnxfold-wasm.mjs IN OUT
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: onnxfold-wasm.mjs IN OUT');
  process.exit(2);
}
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const modulePath = resolve(process.env.ONNXFOLD_WASM_MODULE || resolve(repoRoot, 'dist', 'onnxfold.mjs'));
const { default: createOnnxfold } = await import(pathToFileURL(modulePath).href);
const M = await createOnnxfold();
const { model } = M.optimize(readFileSync(input), '{}', undefined);
writeFileSync(output, model);

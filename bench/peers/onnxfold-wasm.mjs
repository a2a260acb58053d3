#!/usr/bin/env node
// onnxfold's wasm build under node, through the npm package API: optimizeFile() reads IN straight
// into the wasm heap, runs the default pipeline and writes OUT from the heap (no JS-side copy).
//   node bench/peers/onnxfold-wasm.mjs IN OUT
// The package is this repo's (js/index.js + dist/); ONNXFOLD_WASM_MODULE=/x/dist/onnxfold.mjs
// uses the package of the tree around it (/x/js/index.js) instead, e.g. a clean build elsewhere.
// Builds older than the package (no js/ beside dist/) are driven through the raw Embind module.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: onnxfold-wasm.mjs IN OUT');
  process.exit(2);
}
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const glue = resolve(process.env.ONNXFOLD_WASM_MODULE || resolve(repoRoot, 'dist', 'onnxfold.mjs'));
const pkg = resolve(dirname(glue), '..', 'js', 'index.js');
if (existsSync(pkg)) {
  const { optimizeFile } = await import(pathToFileURL(pkg).href);
  await optimizeFile(input, output);
} else {
  const { default: createOnnxfold } = await import(pathToFileURL(glue).href);
  const M = await createOnnxfold();
  const { model } = M.optimize(readFileSync(input), '{}', undefined);
  writeFileSync(output, model);
}

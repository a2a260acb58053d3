#!/usr/bin/env node
// onnxsim (npm package `onnxsim`: onnx-simplifier compiled to wasm, constant folding through
// onnxruntime-web) with its default options: reads IN, simplifies, writes OUT.
//   node bench/peers/onnxsim.mjs IN OUT
import { readFileSync, writeFileSync } from 'node:fs';
import * as ortWeb from 'onnxruntime-web';
import { simplify } from 'onnxsim';

// onnxruntime-web's default thread pool (workers) never starts in node 20 on this machine:
// simplify() waited forever at its first fold. One thread, as every other tool here runs.
(ortWeb.default ?? ortWeb).env.wasm.numThreads = 1;

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: onnxsim.mjs IN OUT');
  process.exit(2);
}
// onnxsim prints an op-count table on stdout; keep it off stdout so the runner's output stays clean.
console.log = (...a) => console.error(...a);
const { model } = await simplify(readFileSync(input));
writeFileSync(output, model);
// The process would not exit on its own: something in onnxsim / onnxruntime-web (its wasm thread
// pool) keeps node's event loop alive after simplify() resolves. Exit once the result is written.
process.exit(0);

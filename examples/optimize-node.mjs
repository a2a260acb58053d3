#!/usr/bin/env node
// Optimizes an ONNX model with the onnxfold npm package (wasm) and writes <name>.opt.onnx beside
// it (or to OUT), then prints a summary of the report.
//   node examples/optimize-node.mjs MODEL.onnx [OUT.onnx]
// In a project: npm install onnxfold, then the same import works.
import { readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { optimize } from 'onnxfold';

const [input, output = join(dirname(input ?? '.'), basename(input ?? '', '.onnx') + '.opt.onnx')] = process.argv.slice(2);
if (!input) {
  console.error('usage: node optimize-node.mjs MODEL.onnx [OUT.onnx]');
  process.exit(2);
}

try {
  const bytes = await readFile(input);
  let shown = -1;
  const { model, externalData, report } = await optimize(bytes, {
    onProgress: ({ stage, fraction }) => {
      const pct = Math.floor(fraction * 10) * 10;
      if (process.stderr.isTTY && pct !== shown) process.stderr.write(`\r${stage} ${(shown = pct)}%   `);
    },
  });
  if (process.stderr.isTTY) process.stderr.write('\r');
  await writeFile(output, model);
  for (const [location, data] of Object.entries(externalData)) await writeFile(join(dirname(output), location), data);

  const { before, after } = report;
  const mb = (n) => (n / 1e6).toFixed(2);
  console.log(`${input} -> ${output}`);
  console.log(`nodes ${before.nodes} -> ${after.nodes}, initializers ${before.initializers} -> ${after.initializers}, ` +
    `size ${mb(report.input_bytes)} MB -> ${mb(report.output_bytes)} MB, ` +
    `${report.iterations} round(s), ${(report.timing_ms.read + report.timing_ms.optimize + report.timing_ms.write).toFixed(0)} ms`);
  const ops = new Set([...Object.keys(before.op_histogram), ...Object.keys(after.op_histogram)]);
  for (const op of [...ops].sort()) {
    const b = before.op_histogram[op] ?? 0;
    const a = after.op_histogram[op] ?? 0;
    if (a !== b) console.log(`  ${op.padEnd(24)} ${String(b).padStart(5)} -> ${a}`);
  }
  for (const w of report.warnings) console.log(`warning: ${w}`);
} catch (e) {
  console.error(`error: ${e.message}`);
  process.exit(1);
}

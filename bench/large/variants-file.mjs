#!/usr/bin/env node
// onnxfold's npm package in node: variantsFile(IN, OUT_DIR) writes every variant of
// src/api/variants.cpp (fp32, fp16, int8, q8, q4, q4f16); prints as JSON the bytes written, the
// largest wasm heap of the variants and each variant's time (its report's read + optimize + write).
//   node bench/large/variants-file.mjs IN OUT_DIR
import { variantsFile } from '../../js/index.js';

const [input, outDir] = process.argv.slice(2);
const { variants } = await variantsFile(input, outDir);
const ms = (r) => Math.round(r.timing_ms.read + r.timing_ms.optimize + r.timing_ms.write);
process.stdout.write(
  JSON.stringify({
    written_bytes: variants.reduce((n, v) => n + v.bytes, 0),
    variants: variants.length,
    peak_heap_bytes: Math.max(...variants.map((v) => v.report.memory?.peak_heap_bytes ?? 0)),
    ms: Object.fromEntries(variants.map((v) => [v.dtype, ms(v.report)])),
  }) + '\n',
);

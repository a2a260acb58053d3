#!/usr/bin/env node
// onnxfold's npm package in node: variantsFile(IN, OUT_DIR) writes every variant of
// src/api/variants.cpp (fp32, fp16, int8, q8, q4, q4f16); prints the bytes written as JSON.
//   node bench/large/variants-file.mjs IN OUT_DIR
import { variantsFile } from '../../js/index.js';

const [input, outDir] = process.argv.slice(2);
const { variants } = await variantsFile(input, outDir);
process.stdout.write(JSON.stringify({ written_bytes: variants.reduce((n, v) => n + v.bytes, 0), variants: variants.length }) + '\n');

#!/usr/bin/env node
// onnxfold's npm package in node: optimizeFile(IN, OUT) with the default pipeline; prints the
// report's memory figures (peak wasm heap, bytes read from sources) as JSON on stdout.
//   node bench/large/optimize-file.mjs IN OUT
import { optimizeFile } from '../../js/index.js';

const [input, output] = process.argv.slice(2);
const { report } = await optimizeFile(input, output);
process.stdout.write(JSON.stringify({ ...report.memory, nodes: [report.before.nodes, report.after.nodes] }) + '\n');

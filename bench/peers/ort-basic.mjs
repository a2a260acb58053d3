#!/usr/bin/env node
// onnxruntime-node's offline optimization: creating a session with graphOptimizationLevel 'basic'
// and optimizedModelFilePath makes ORT write the optimized graph to OUT. The session is created
// from the bytes of IN (read here, as every other tool reads its input; by path when IN has
// external data, which ORT can only find from its folder), then released.
//   node bench/peers/ort-basic.mjs IN OUT
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import ort from 'onnxruntime-node';

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: ort-basic.mjs IN OUT');
  process.exit(2);
}
const options = { graphOptimizationLevel: 'basic', optimizedModelFilePath: resolve(output) };
let session;
try {
  session = await ort.InferenceSession.create(readFileSync(input), options);
} catch (e) {
  // A model from bytes has no folder to find its external data in: open it by path then.
  if (!/external data/i.test(e.message)) throw e;
  session = await ort.InferenceSession.create(resolve(input), options);
}
await session.release();

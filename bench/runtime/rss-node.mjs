#!/usr/bin/env node
// Peak memory of one model in onnxruntime-node: a fresh process creates a session, runs it once
// and reports its peak RSS (getrusage maxrss) and the RSS it had before the session, in MiB.
//
//   node bench/runtime/rss-node.mjs MODEL.onnx '{"dims":{...}}'
import ort from 'onnxruntime-node';
import { makeInputs } from 'onnxfold/accuracy';
import { SESSION_OPTIONS } from './session-options.mjs';

const [path, json = '{}'] = process.argv.slice(2);
const { dims = {} } = JSON.parse(json);
const before = process.memoryUsage().rss;
const s = await ort.InferenceSession.create(path, SESSION_OPTIONS);
await s.run(makeInputs(ort.Tensor, s.inputMetadata, { seed: 1, dims }).feeds);
await s.release();
process.stdout.write(
  JSON.stringify({ baseMiB: before / 2 ** 20, peakMiB: process.resourceUsage().maxRSS / 1024 }),
);

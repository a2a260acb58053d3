#!/usr/bin/env node
// One model's variants in onnxruntime-node, in one process so that they share its state (the
// library loaded, caches warm) and differ only by the model:
//
//   node bench/runtime/measure-node.mjs '{"variants":[{"name":"original","path":"..."},...],
//       "dims":{...},"loadRounds":7,"minRunSeconds":3,"minRuns":20,"maxRuns":300}'
//
// The procedure is timing.mjs's (the page's too). Prints JSON: per variant its samples in ms.
// Peak memory is measured apart (rss-node.mjs): one process per variant.
import ort from 'onnxruntime-node';
import { makeInputs } from 'onnxfold/accuracy';
import { SESSION_OPTIONS as SESSION } from './session-options.mjs';
import { timeModels } from './timing.mjs';

const { variants, ...options } = JSON.parse(process.argv[2]);
const result = await timeModels(variants, {
  ...options,
  create: (v) => ort.InferenceSession.create(v.path, SESSION),
  makeInputs,
  Tensor: ort.Tensor,
});
process.stdout.write(JSON.stringify(result));

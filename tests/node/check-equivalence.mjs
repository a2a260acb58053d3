#!/usr/bin/env node
// Usage: node tests/node/check-equivalence.mjs ORIG.onnx OPT.onnx [--seed N] [--dim N] [--rtol X] [--atol X]
//        [--dims name=N,name=N] [--json]
// Exit status: 0 equivalent, 1 not equivalent, 2 usage error or the original model cannot be run.
import { parseArgs } from 'node:util';
import { compareModels } from './oracle.mjs';

const usage =
  'usage: check-equivalence.mjs ORIG.onnx OPT.onnx [--seed N] [--dim N] [--dims name=N,...] ' +
  '[--rtol X] [--atol X] [--json]';
let args;
try {
  args = parseArgs({
    allowPositionals: true,
    options: {
      seed: { type: 'string' },
      dim: { type: 'string' },
      dims: { type: 'string' },
      rtol: { type: 'string' },
      atol: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
} catch (e) {
  console.error(`${e.message}\n${usage}`);
  process.exit(2);
}
const { values: v, positionals } = args;
if (v.help || positionals.length !== 2) {
  console.error(usage);
  process.exit(v.help ? 0 : 2);
}
const num = (s, name) => {
  const x = Number(s);
  if (!Number.isFinite(x)) {
    console.error(`bad --${name}: ${s}`);
    process.exit(2);
  }
  return x;
};
const opts = {};
if (v.seed !== undefined) opts.seed = num(v.seed, 'seed');
if (v.dim !== undefined) opts.dimValue = num(v.dim, 'dim');
if (v.rtol !== undefined) opts.rtol = num(v.rtol, 'rtol');
if (v.atol !== undefined) opts.atol = num(v.atol, 'atol');
if (v.dims) {
  opts.dims = Object.fromEntries(
    v.dims.split(',').map((kv) => {
      const [k, x] = kv.split('=');
      return [k, num(x, 'dims')];
    }),
  );
}

const [orig, opt] = positionals;
let r;
try {
  r = await compareModels(orig, opt, opts);
} catch (e) {
  console.error(`ERROR: cannot run original model ${orig}: ${e.message}`);
  process.exit(2);
}
if (v.json) {
  console.log(JSON.stringify(r, (k, x) => (typeof x === 'number' && !Number.isFinite(x) ? String(x) : x), 2));
} else {
  console.log(`${r.ok ? 'OK' : 'FAIL'}: ${opt} vs ${orig}: ${r.message}`);
}
process.exit(r.ok ? 0 : 1);

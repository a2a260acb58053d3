#!/usr/bin/env node
// Where the run time goes: ONNX Runtime's own per-node profile of two or more models (or one
// model under different session options) in onnxruntime-node, to explain a run ratio that
// run.mjs reports. Each variant gets a profiling session (the benchmark's options: one thread,
// ORT's default level); runs are interleaved A/B/C... on the oracle's seeded inputs, the first
// five of each excluded. Prints per op type the number of nodes and the sum of the nodes'
// median kernel times, then the nodes whose op type differs most between the first variant
// and each other one.
//
//   node bench/runtime/profile-node.mjs [--runs N] [--disable Opt1,Opt2] NAME=PATH[@Opt1,Opt2] ...
//   node bench/runtime/profile-node.mjs original=../shared/models/minibert.op14.nofold.onnx \
//       onnxfold=/tmp/minibert.onnx onnxfold-no-sln=/tmp/minibert.onnx@SkipLayerNormFusion
//
// `@Opt,...` (or --disable, for every variant) names ORT graph transformers to switch off
// (session option optimization.disable_specified_optimizers), e.g. SkipLayerNormFusion,
// NchwcTransformer. The run medians it prints include the profiler's own cost: use run.mjs
// for the ratio itself.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import ort from 'onnxruntime-node';

import { makeInputs } from 'onnxfold/accuracy';
import { DIMS, SESSION_OPTIONS } from './session-options.mjs';

const args = process.argv.slice(2);
let runs = 200;
let disableAll = '';
const variants = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--runs') runs = Number(args[++i]);
  else if (args[i] === '--disable') disableAll = args[++i];
  else {
    const eq = args[i].indexOf('=');
    if (eq <= 0) throw new Error(`expected NAME=PATH[@Optimizer,...], got '${args[i]}'`);
    const [path, disable = ''] = args[i].slice(eq + 1).split('@');
    variants.push({
      name: args[i].slice(0, eq),
      path,
      disable: [disableAll, disable].filter(Boolean).join(','),
    });
  }
}
if (variants.length === 0 || !(runs > 5)) {
  console.log('usage: profile-node.mjs [--runs N>5] [--disable Opt1,Opt2] NAME=PATH[@Opt1,Opt2] ...');
  process.exit(2);
}

const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-profile-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

let feeds;
const sessions = [];
for (const [i, v] of variants.entries()) {
  const options = { ...SESSION_OPTIONS, enableProfiling: true, profileFilePrefix: join(tmp, `v${i}`) };
  if (v.disable) options.extra = { optimization: { disable_specified_optimizers: v.disable } };
  const s = await ort.InferenceSession.create(v.path, options);
  feeds ??= makeInputs(ort.Tensor, s.inputMetadata, { seed: 1, dims: DIMS }).feeds;
  sessions.push({ ...v, s, prefix: `v${i}_`, times: [] });
}
for (let r = 0; r < runs; r++) {
  for (let k = 0; k < sessions.length; k++) {
    const v = sessions[(k + r) % sessions.length];
    const t0 = performance.now();
    await v.s.run(feeds);
    v.times.push(performance.now() - t0);
  }
}
// The profile is written when the session is released: one JSON array of trace events, a
// node's kernel time being the event '<node>_kernel_time' (cat 'Node', dur in microseconds).
for (const v of sessions) {
  await v.s.release();
  const file = readdirSync(tmp).find((f) => f.startsWith(v.prefix));
  const perNode = new Map();
  for (const e of JSON.parse(readFileSync(join(tmp, file), 'utf8'))) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const name = e.name.slice(0, -'_kernel_time'.length);
    if (!perNode.has(name)) perNode.set(name, { op: e.args.op_name, dur: [] });
    perNode.get(name).dur.push(e.dur);
  }
  v.byOp = new Map();
  for (const { op, dur } of perNode.values()) {
    const o = v.byOp.get(op) ?? { nodes: 0, us: 0 };
    o.nodes += 1;
    o.us += median(dur.slice(5));
    v.byOp.set(op, o);
  }
  v.total = [...v.byOp.values()].reduce((a, o) => a + o.us, 0);
}

const ops = [...new Set(sessions.flatMap((v) => [...v.byOp.keys()]))].sort(
  (a, b) =>
    Math.max(...sessions.map((v) => v.byOp.get(b)?.us ?? 0)) -
    Math.max(...sessions.map((v) => v.byOp.get(a)?.us ?? 0)),
);
const cell = (v, op) => {
  const o = v.byOp.get(op);
  return (o ? `${o.nodes} x, ${o.us.toFixed(0)} us` : '-').padStart(18);
};
console.log(`${runs} runs each, interleaved; per op type: nodes, sum of the nodes' median kernel time`);
console.log(`${'op type'.padEnd(26)}${sessions.map((v) => v.name.padStart(18)).join('')}`);
for (const op of ops) console.log(`${op.padEnd(26)}${sessions.map((v) => cell(v, op)).join('')}`);
console.log(`${'all nodes (us)'.padEnd(26)}${sessions.map((v) => v.total.toFixed(0).padStart(18)).join('')}`);
console.log(
  `${'run median (ms, profiled)'.padEnd(26)}${sessions.map((v) => median(v.times.slice(5)).toFixed(2).padStart(18)).join('')}`,
);
for (const v of sessions.slice(1)) {
  const diff = ops
    .map((op) => [op, (v.byOp.get(op)?.us ?? 0) - (sessions[0].byOp.get(op)?.us ?? 0)])
    .filter(([, d]) => Math.abs(d) >= 20)
    .sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]));
  console.log(
    `${v.name} - ${sessions[0].name}: ${(v.total - sessions[0].total).toFixed(0)} us in all; ` +
      (diff.map(([op, d]) => `${op} ${d > 0 ? '+' : ''}${d.toFixed(0)}`).join(', ') ||
        'no op type differs by 20 us or more'),
  );
}

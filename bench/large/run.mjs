#!/usr/bin/env node
// Large-model benchmark: onnxfold as a whole process (the npm package in node, and the native
// CLI) against the I/O floor measured in the same run, on models with external data (LLM-shaped
// decoders from ../shared/tools/make_llm.py) and inline ones. A reported benchmark: it fails
// nothing. Per model and tool: median wall time of --runs, peak RSS (/usr/bin/time), and for node
// the peak wasm heap, the bytes read from sources and a per-phase profile (from the report: a
// second table says where node's time goes).
//
//   node bench/large/run.mjs --model /work/llm/llama1b.onnx --model ../shared/models/minibert.op14.nofold.onnx
//   options: --runs N (5), --tools floor,cp,node,native (all), --out-dir DIR (bench/large),
//            --work DIR (a scratch folder on the same disk as the models; default: beside the model)
//
// Tools: floor = bench/large/floor.mjs copies the model and its data files through 16 MiB;
// cp = coreutils cp of the same files (the native CLI's floor); node = optimizeFile;
// native = build/native/onnxfold optimize; variants-node = variantsFile (every variant: fp32, fp16,
// int8, q8, q4, q4f16) and variants-native = onnxfold variants, both with the GB they wrote. Not in
// the default --tools: give them, e.g. --tools floor,cp,variants-node,variants-native. Before each run `sync` flushes the previous run's
// output, so no run pays for another's write-back. The model's files are every file in its folder whose
// name starts with the model's file name (model.onnx, model.onnx.data, ...).
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
  readFileSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '..', '..');
const args = process.argv.slice(2);
const opt = { models: [], runs: 5, tools: ['floor', 'cp', 'node', 'native'], outDir: here, work: undefined };
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--model') opt.models.push(resolve(args[++i]));
  else if (a === '--runs') opt.runs = Number(args[++i]);
  else if (a === '--tools') opt.tools = args[++i].split(',');
  else if (a === '--out-dir') opt.outDir = resolve(args[++i]);
  else if (a === '--work') opt.work = resolve(args[++i]);
  else {
    console.error(`unknown argument ${a}`);
    process.exit(2);
  }
}
if (opt.models.length === 0) {
  console.error('give at least one --model');
  process.exit(2);
}
const TIME = '/usr/bin/time';
if (!existsSync(TIME)) {
  console.error(`${TIME} not found (apt-get install time)`);
  process.exit(2);
}
const cli = join(repoRoot, 'build', 'native', 'onnxfold');

function filesOf(model) {
  const dir = dirname(model);
  const name = basename(model);
  return readdirSync(dir)
    .filter((f) => f.startsWith(name))
    .map((f) => join(dir, f))
    .sort();
}

// Runs argv under /usr/bin/time; returns { wallS, rssMB, stdout }.
function timed(argv) {
  return new Promise((resolveRun, reject) => {
    const timeFile = join(opt.work ?? '/tmp', `.time-${process.pid}`);
    const t0 = process.hrtime.bigint();
    const child = spawn(TIME, ['-o', timeFile, '-f', '%M', ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('close', (code) => {
      const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
      if (code !== 0) {
        reject(new Error(`${argv.join(' ')}: exit ${code}: ${stderr.trim().split('\n').at(-1)}`));
        return;
      }
      const rssMB = Number(readFileSync(timeFile, 'utf8').trim().split('\n').at(-1)) / 1024;
      rmSync(timeFile, { force: true });
      resolveRun({ wallS, rssMB, stdout });
    });
  });
}

const tools = {
  floor: (m, out) => [process.execPath, join(here, 'floor.mjs'), out, ...filesOf(m)],
  cp: (m, out) => ['cp', ...filesOf(m), out],
  node: (m, out) => [process.execPath, join(here, 'optimize-file.mjs'), m, join(out, basename(m))],
  native: (m, out) => [cli, 'optimize', m, '-o', join(out, basename(m)), '-q'],
  // Every variant (fp32, fp16, int8, q8, q4, q4f16): six outputs from one input.
  'variants-node': (m, out) => [process.execPath, join(here, 'variants-file.mjs'), m, out],
  'variants-native': (m, out) => [cli, 'variants', m, '--out', out],
};

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
// The median of each figure of optimize-file.mjs's profile over the runs (passes: of the first run's).
function medianProfile(ps) {
  const out = {};
  for (const [k, v] of Object.entries(ps[0])) {
    out[k] =
      typeof v === 'number'
        ? median(ps.map((p) => p[k]))
        : Object.fromEntries(Object.keys(v).map((pass) => [pass, median(ps.map((p) => p[k][pass] ?? 0))]));
  }
  return out;
}
const results = [];
const load0 = loadavg()[0];
for (const model of opt.models) {
  const bytes = filesOf(model).reduce((n, f) => n + statSync(f).size, 0);
  const work = mkdtempSync(join(opt.work ?? dirname(model), '.onnxfold-bench-'));
  // Warm the page cache once, as every tool then finds it.
  spawnSync('cat', filesOf(model), { stdio: ['ignore', 'ignore', 'ignore'] });
  const runs = Object.fromEntries(opt.tools.map((t) => [t, []]));
  try {
    for (let r = 0; r < opt.runs; r++) {
      const order = opt.tools.slice(r % opt.tools.length).concat(opt.tools.slice(0, r % opt.tools.length));
      for (const tool of order) {
        const out = join(work, tool);
        mkdirSync(out, { recursive: true });
        // Dirty pages of the previous run's output would be written back during this one.
        spawnSync('sync');
        try {
          const res = await timed(tools[tool](model, out));
          if (tool === 'node' || tool === 'variants-node')
            Object.assign(res, JSON.parse(res.stdout.trim().split('\n').at(-1)));
          if (tool.startsWith('variants'))
            res.writtenBytes = readdirSync(out).reduce((n, f) => n + statSync(join(out, f)).size, 0);
          runs[tool].push(res);
        } catch (e) {
          runs[tool].push({ error: e.message });
        }
        rmSync(out, { recursive: true, force: true });
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const row = { model: basename(model), bytes, tools: {} };
  for (const [tool, rs] of Object.entries(runs)) {
    const ok = rs.filter((x) => !x.error);
    if (ok.length === 0) {
      row.tools[tool] = { error: rs[0]?.error };
      continue;
    }
    row.tools[tool] = {
      wallS: median(ok.map((x) => x.wallS)),
      minS: Math.min(...ok.map((x) => x.wallS)),
      rssMB: median(ok.map((x) => x.rssMB)),
      heapMB: ok[0].peak_heap_bytes !== undefined ? ok[0].peak_heap_bytes / 2 ** 20 : undefined,
      readMB: ok[0].source_bytes_read !== undefined ? ok[0].source_bytes_read / 2 ** 20 : undefined,
      nodes: ok[0].nodes,
      writtenGB: ok[0].writtenBytes !== undefined ? ok[0].writtenBytes / 1e9 : undefined,
      runs: rs.map((x) => x.wallS ?? x.error),
      profile: ok[0].profile && medianProfile(ok.map((x) => x.profile)),
    };
  }
  results.push(row);
  console.error(`${row.model}: ${JSON.stringify(row.tools)}`);
}

const f = (x, d = 2) => (x === undefined ? '–' : x.toFixed(d));
const lines = [
  `Run ${new Date().toISOString()}, ${opt.runs} runs each (median), load average ${load0.toFixed(2)} -> ${loadavg()[0].toFixed(2)}.`,
  '',
  '| model | GB in | tool | wall s (median) | min s | ×floor (node) | ×cp (native) | peak RSS MB | RSS − floor MB | peak wasm heap MB | MB read from sources | GB written |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|',
];
for (const row of results) {
  const floor = row.tools.floor;
  const cp = row.tools.cp;
  for (const [tool, r] of Object.entries(row.tools)) {
    if (r.error) {
      lines.push(`| ${row.model} | ${f(row.bytes / 1e9)} | ${tool} | failed: ${r.error} | | | | | | | | |`);
      continue;
    }
    lines.push(
      `| ${row.model} | ${f(row.bytes / 1e9)} | ${tool} | ${f(r.wallS, 3)} | ${f(r.minS, 3)} | ` +
        `${floor && !floor.error ? f(r.wallS / floor.wallS) + 'x' : '–'} | ${cp && !cp.error ? f(r.wallS / cp.wallS) + 'x' : '–'} | ` +
        `${f(r.rssMB, 0)} | ${floor && !floor.error ? f(r.rssMB - floor.rssMB, 0) : '–'} | ${f(r.heapMB, 0)} | ${f(r.readMB, 1)} | ${f(r.writtenGB)} |`,
    );
  }
}
// Where node's time goes (medians of the report's profile; ms unless named MB).
lines.push(
  '',
  '| model | node wall ms | compile | instantiate | wasm call | read | optimize | write | source reads (in write) | sink | host read ms / MB / calls | host out ms / MB heap / MB copied | slowest passes |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
);
for (const row of results) {
  const p = row.tools.node?.profile;
  if (!p) continue;
  const mb = (x) => f(x / 2 ** 20, 1);
  lines.push(
    `| ${row.model} | ${f(row.tools.node.wallS * 1000, 0)} | ${f(p.compile_ms, 0)} | ${f(p.instantiate_ms, 0)} | ${f(p.call_ms, 0)} | ` +
      `${f(p.read_ms, 0)} | ${f(p.optimize_ms, 0)} | ${f(p.write_ms, 0)} | ${f(p.source_read_ms, 0)} (${f(p.write_source_read_ms, 0)}) | ${f(p.sink_write_ms, 0)} | ` +
      `${f(p.host_read_ms, 0)} / ${mb(p.host_read_bytes)} / ${p.host_reads} | ${f(p.host_write_ms, 0)} / ${mb(p.host_write_bytes)} / ${mb(p.host_copy_bytes)} | ` +
      `${Object.entries(p.passes)
        .map(([n, ms]) => `${n} ${f(ms, 0)}`)
        .join(', ')} |`,
  );
}
const md = lines.join('\n') + '\n';
process.stdout.write(md);
mkdirSync(opt.outDir, { recursive: true });
writeFileSync(join(opt.outDir, 'results.md'), md);
writeFileSync(join(opt.outDir, 'results.json'), JSON.stringify(results, null, 1) + '\n');

#!/usr/bin/env node
// What users feel: each benchmark model's variants (the original, onnxfold's default output,
// onnxfold --float16, onnxfold's int8, q8, q4 and q4f16 variants as `onnxfold variants` writes them,
// onnxsim's output, ONNX Runtime's own offline-optimized model) loaded and
// run in onnxruntime-node and in onnxruntime-web (Chromium), measured in one run of this script.
//
//   node bench/runtime/run.mjs [--model SUBSTR ...] [--llm tiny,1b] [--no-web] [--no-node]
//       [--load-rounds N] [--run-seconds S] [--out-dir DIR] [--target-opset N]
//
// Per model and runtime: session creation (median of --load-rounds creations, the variants
// created in rotated order, a warm-up creation excluded), the first run after creation, the
// median of many runs (the variants' sessions interleaved A/B/C..., warm-up excluded, at least
// 20 runs each and --run-seconds in all), each ratio against the original with a 95% bootstrap
// interval; in node also the peak RSS of a fresh process per variant; the file bytes. Writes
// results.json and results.md to --out-dir (default bench/runtime). A reported benchmark: it
// fails nothing (tests/node/runtime-fusions.test.mjs is the test). --target-opset N adds the
// variant onnxfold-opN (onnxfold --target-opset N: fused LayerNormalization, Gelu, RMSNorm).
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import ort from 'onnxruntime-node';

import { openBrowser } from './measure-web.mjs';
import { DIMS, SESSION_OPTIONS } from './session-options.mjs';
import { ratioOfMedians, summary } from './stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '..', '..');
const shared = resolve(process.env.ONNXFOLD_SHARED ?? join(repoRoot, '..', 'shared'));
const cli = process.env.ONNXFOLD_CLI ?? join(repoRoot, 'build', 'native', 'onnxfold');
const work = join(repoRoot, 'build', 'runtime-bench');

const { values: opt } = parseArgs({
  options: {
    model: { type: 'string', multiple: true },
    llm: { type: 'string', default: 'tiny' },
    'no-web': { type: 'boolean', default: false },
    'no-node': { type: 'boolean', default: false },
    'load-rounds': { type: 'string', default: '7' },
    'run-seconds': { type: 'string', default: '3' },
    'out-dir': { type: 'string', default: here },
    'target-opset': { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help) {
  console.log(
    'usage: run.mjs [--model SUBSTR ...] [--llm tiny,1b] [--no-web] [--no-node] [--load-rounds N] [--run-seconds S] [--out-dir DIR] [--target-opset N]',
  );
  process.exit(0);
}
const log = (...a) => console.error(...a);
const LLM = { tiny: ['--preset', 'tiny'], '1b': ['--preset', '1b'] };
// onnxruntime-web's wasm heap is at most 4 GB: larger models are measured in node only.
const WEB_LIMIT = 2 ** 31;

function sh(cmd, args, timeout = 0) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 28, timeout, killSignal: 'SIGKILL' });
  if (r.error?.code === 'ETIMEDOUT')
    throw new Error(`${basename(args[0] ?? cmd)}: no result after ${timeout / 1e3} s`);
  if (r.status !== 0)
    throw new Error(
      `${basename(cmd)} ${args.slice(0, 3).join(' ')}...: ${(r.stderr || r.stdout || '').trim().split('\n').slice(-3).join(' | ')}`,
    );
  return r.stdout;
}

// A variant is a folder holding model.onnx and its external data files.
const filesOf = (dir) => readdirSync(dir).filter((f) => f !== 'model.onnx');
const bytesOf = (dir) => readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);

function fresh(dir) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The benchmark models: [{ name, dir }] with the original in dir/original. */
function models() {
  const out = [];
  for (const f of readdirSync(join(shared, 'models'))
    .filter((x) => x.endsWith('.onnx'))
    .sort()) {
    const dir = join(work, f.replace(/\.onnx$/, ''));
    const o = fresh(join(dir, 'original'));
    symlinkSync(join(shared, 'models', f), join(o, 'model.onnx'));
    out.push({ name: f.replace(/\.onnx$/, ''), dir });
  }
  for (const size of opt.llm.split(',').filter(Boolean)) {
    const dir = join(work, `llm-${size}`);
    const o = join(dir, 'original');
    if (!existsSync(join(o, 'model.onnx'))) {
      fresh(o);
      log(`make_llm ${size}`);
      sh('/usr/bin/python3', [
        join(shared, 'tools', 'make_llm.py'),
        ...LLM[size],
        '--out',
        join(o, 'model.onnx'),
      ]);
    }
    out.push({ name: `llm-${size}`, dir });
  }
  return out.filter((m) => !opt.model || opt.model.some((s) => m.name.includes(s)));
}

/** Writes the variants next to the original; returns [{ name, dir }] of those that could be made. */
async function prepare(m) {
  const original = join(m.dir, 'original');
  const input = join(original, 'model.onnx');
  const variants = [{ name: 'original', dir: original }];
  const make = async (name, fn) => {
    const dir = fresh(join(m.dir, name));
    try {
      await fn(join(dir, 'model.onnx'));
      variants.push({ name, dir });
    } catch (e) {
      log(`  ${m.name} ${name}: not made: ${e.message.split('\n')[0]}`);
      variants.push({ name, dir: null, why: e.message.split('\n')[0].slice(0, 200) });
    }
  };
  await make('onnxfold', (out) => sh(cli, ['optimize', input, '-o', out, '-q']));
  if (opt['target-opset']) {
    await make(`onnxfold-op${opt['target-opset']}`, (out) =>
      sh(cli, ['optimize', input, '-o', out, '-q', '--target-opset', opt['target-opset']]),
    );
  }
  await make('onnxfold-fp16', (out) => sh(cli, ['optimize', input, '-o', out, '-q', '--float16']));
  // transformers.js's quantized variants as `onnxfold variants` writes them (src/api/variants.cpp):
  // made once into a scratch folder, then each moved to its own folder as model.onnx (with its
  // external data files, model_q4.onnx_data..., which keep the names the model refers to).
  const QUANT = { int8: 'model_int8', q8: 'model_quantized', q4: 'model_q4', q4f16: 'model_q4f16' };
  const scratch = fresh(join(m.dir, 'variants-out'));
  let made = null;
  try {
    sh(cli, [
      'variants',
      input,
      '--out',
      scratch,
      '--name',
      'model',
      '--dtypes',
      Object.keys(QUANT).join(','),
    ]);
  } catch (e) {
    made = e;
  }
  for (const [dtype, base] of Object.entries(QUANT)) {
    await make(`onnxfold-${dtype}`, (out) => {
      if (made) throw made;
      const dir = dirname(out);
      for (const f of readdirSync(scratch).filter((x) => x.startsWith(`${base}.onnx`))) {
        renameSync(join(scratch, f), f === `${base}.onnx` ? out : join(dir, f));
      }
      if (!existsSync(out)) throw new Error(`onnxfold variants wrote no ${base}.onnx`);
    });
  }
  rmSync(scratch, { recursive: true, force: true });
  await make('onnxsim', (out) => {
    if (filesOf(original).length) throw new Error('onnxsim (npm) reads one model file: no external data');
    // onnxsim (npm) sometimes never returns from its first fold in node (about one start in
    // three here, at any size): a run gets 45 s (the slowest model here takes 8), and three tries.
    for (let attempt = 1; ; attempt++) {
      try {
        sh(process.execPath, [join(repoRoot, 'bench', 'peers', 'onnxsim.mjs'), input, out], 45e3);
        return;
      } catch (e) {
        if (attempt === 3) throw e;
        log(`  ${m.name} onnxsim: ${e.message.split('\n')[0]}; again`);
      }
    }
  });
  await make('ort-offline', async (out) => {
    // ONNX Runtime's offline optimization at 'extended' (all but the layout changes of 'all',
    // which tie a model to one CPU), as its docs suggest for models optimized ahead of time.
    const big = bytesOf(original) > WEB_LIMIT;
    const options = { ...SESSION_OPTIONS, graphOptimizationLevel: 'extended', optimizedModelFilePath: out };
    if (big)
      options.extra = { session: { optimized_model_external_initializers_file_name: 'model.onnx.data' } };
    const s = await ort.InferenceSession.create(input, options);
    await s.release();
  });
  return variants;
}

const versionOf = (pkg) =>
  JSON.parse(readFileSync(join(repoRoot, 'node_modules', pkg, 'package.json'), 'utf8')).version;

function child(script, args) {
  return JSON.parse(sh(process.execPath, [join(here, script), ...args]));
}

function summarize(samples) {
  const base = samples.original;
  const out = {};
  for (const [name, s] of Object.entries(samples)) {
    out[name] = { load: summary(s.load), firstRun: summary(s.firstRun), run: summary(s.run) };
    if (name !== 'original') {
      out[name].loadRatio = ratioOfMedians(base.load, s.load);
      out[name].runRatio = ratioOfMedians(base.run, s.run);
    }
  }
  return out;
}

const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '-');
const ratio = (r) => (r ? `${fmt(r.ratio, 2)}x [${fmt(r.lo, 2)}, ${fmt(r.hi, 2)}]` : '-');
const mib = (b) => `${fmt(b / 2 ** 20, 1)}`;

function markdown(results, env) {
  const lines = [
    `# Runtime benchmark: load and run in ONNX Runtime`,
    '',
    `Measured ${env.date} by bench/runtime/run.mjs on ${env.cpu} (${env.cores} cores, ${env.memGiB} GiB), ` +
      `load average ${env.load} at the start; onnxruntime-node ${env.ortNode}, onnxruntime-web ${env.ortWeb} in Chromium ${env.chromium ?? '-'} ` +
      `(wasm provider; WebGPU: ${env.webgpu ?? 'not checked'}). One thread per session; ratios are original / variant ` +
      '(above 1: the variant is faster), with a 95% bootstrap interval.',
    '',
  ];
  for (const rt of ['node', 'web']) {
    const rows = results.filter((r) => r[rt] || r[`${rt}Skipped`]);
    if (!rows.length) continue;
    lines.push(
      `## onnxruntime-${rt}`,
      '',
      '| model | variant | MiB | load ms | load ratio | first run ms | run ms (median, IQR) | run ratio | runs |' +
        (rt === 'node' ? ' peak RSS MiB |' : ''),
      '|---|---|---:|---:|---:|---:|---:|---:|---:|' + (rt === 'node' ? '---:|' : ''),
    );
    for (const r of rows) {
      for (const v of r.variants) {
        const s = r[rt]?.[v.name];
        if (!s) {
          lines.push(
            `| ${r.model} | ${v.name} | | | | | ${v.why ?? r[`${rt}Skipped`] ?? 'not measured'} | | |${rt === 'node' ? ' |' : ''}`,
          );
          continue;
        }
        const rss = rt === 'node' ? ` ${fmt(r.rss?.[v.name]?.peakMiB, 0)} |` : '';
        lines.push(
          `| ${r.model} | ${v.name} | ${mib(v.bytes)} | ${fmt(s.load.median)} | ${ratio(s.loadRatio)} | ${fmt(s.firstRun.median, 2)} | ` +
            `${fmt(s.run.median, 2)} (${fmt(s.run.q1, 2)}-${fmt(s.run.q3, 2)}) | ${ratio(s.runRatio)} | ${s.run.n} |${rss}`,
        );
      }
    }
    lines.push('');
  }
  return lines.join('\n');
}

async function main() {
  mkdirSync(work, { recursive: true });
  const env = {
    date: new Date().toISOString().slice(0, 16).replace('T', ' '),
    cpu: cpus()[0]?.model ?? '?',
    cores: cpus().length,
    memGiB: Math.round(totalmem() / 2 ** 30),
    load: loadavg()
      .map((x) => x.toFixed(2))
      .join(' '),
    ortNode: versionOf('onnxruntime-node'),
    ortWeb: versionOf('onnxruntime-web'),
  };
  const options = {
    dims: DIMS,
    loadRounds: Number(opt['load-rounds']),
    minRunSeconds: Number(opt['run-seconds']),
  };
  const browser = opt['no-web'] ? null : await openBrowser(repoRoot);
  if (browser) env.chromium = browser.version;
  const results = [];
  for (const m of models()) {
    log(`${m.name}: preparing variants`);
    const variants = (await prepare(m)).map((v) => ({ ...v, bytes: v.dir ? bytesOf(v.dir) : null }));
    // A variant ONNX Runtime cannot load is reported, not measured: 1.30 crashes (SIGSEGV, in its
    // NchwcTransformer) at its default level on a float16 Transpose feeding a MatMul.
    for (const v of variants.filter((x) => x.dir)) {
      const r = spawnSync(
        process.execPath,
        [
          '-e',
          `require('onnxruntime-node').InferenceSession.create(${JSON.stringify(join(v.dir, 'model.onnx'))}, ` +
            `${JSON.stringify(SESSION_OPTIONS)}).then(() => process.exit(0), (e) => { console.error(e.message.split('\\n')[0]); process.exit(3); })`,
        ],
        { encoding: 'utf8', cwd: repoRoot },
      );
      if (r.status !== 0) {
        v.why = `onnxruntime-node cannot load it: ${r.signal ?? r.stderr.trim().slice(0, 160)}`;
        v.dir = null;
        log(`  ${m.name} ${v.name}: ${v.why}`);
      }
    }
    const ready = variants.filter((v) => v.dir);
    const r = { model: m.name, variants: variants.map(({ name, bytes, why }) => ({ name, bytes, why })) };
    if (!opt['no-node']) {
      log(`${m.name}: onnxruntime-node`);
      const n = child('measure-node.mjs', [
        JSON.stringify({
          ...options,
          variants: ready.map((v) => ({ name: v.name, path: join(v.dir, 'model.onnx') })),
        }),
      ]);
      r.node = summarize(n.samples);
      r.nodeRepeat = n.repeat;
      r.rss = Object.fromEntries(
        ready.map((v) => [
          v.name,
          child('rss-node.mjs', [join(v.dir, 'model.onnx'), JSON.stringify({ dims: DIMS })]),
        ]),
      );
    }
    if (browser) {
      const small = ready.filter((v) => v.bytes < WEB_LIMIT);
      if (small.length < ready.length)
        r.webSkipped = "over 2 GB: beyond onnxruntime-web's 4 GB wasm heap with its copies";
      if (small.some((v) => v.name === 'original')) {
        log(`${m.name}: onnxruntime-web`);
        // One variant that onnxruntime-web cannot create or run fails the page's whole measurement:
        // reported for this model, and the run goes on.
        try {
          const w = await browser.measure(
            small.map((v) => ({ name: v.name, dir: v.dir, file: 'model.onnx', data: filesOf(v.dir) })),
            options,
          );
          r.web = summarize(w.samples);
          r.webRepeat = w.repeat;
          env.webgpu = w.webgpu;
        } catch (e) {
          r.webSkipped = `onnxruntime-web failed: ${e.message.split('\n')[0].slice(0, 200)}`;
          log(`  ${m.name}: ${r.webSkipped}`);
        }
      }
    }
    results.push(r);
    for (const rt of ['node', 'web']) {
      const o = r[rt]?.onnxfold;
      if (o) log(`  ${rt}: load ${ratio(o.loadRatio)}, run ${ratio(o.runRatio)}`);
    }
  }
  await browser?.close();
  mkdirSync(opt['out-dir'], { recursive: true });
  writeFileSync(
    join(opt['out-dir'], 'results.json'),
    `${JSON.stringify({ env, options, results }, null, 1)}\n`,
  );
  const md = markdown(results, env);
  writeFileSync(join(opt['out-dir'], 'results.md'), `${md}\n`);
  console.log(md);
}

await main();

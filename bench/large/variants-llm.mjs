#!/usr/bin/env node
// A decoder's transformers.js variants in ONNX Runtime: each variant in a folder (as
// `onnxfold variants IN --out DIR` or variantsFile write it) is loaded in onnxruntime-node and in
// onnxruntime-web (Chromium, wasm provider) where it fits, runs one seeded short prompt, and is
// judged on its logits against the original fp32 decoder's (run in onnxruntime-node).
//
//   node bench/large/variants-llm.mjs DECODER.onnx VARIANTS_DIR [--name NAME] [--seq 16] [--seed 1]
//       [--no-web] [--no-node] [--threads 1] [--json FILE]
//
// NAME: the variants' file name without .onnx (default: the decoder's, as the CLI names them).
// Prints per variant and runtime: bytes, load ms (node: InferenceSession.create from the file;
// web: create from the bytes already fetched), run ms (the prompt's one run after creation),
// cosine and top-1 (argmax) agreement per position of the logits against the original's, and
// peak RSS: node, a fresh process per variant (its maxRSS, node itself included: about 45 MiB);
// web, the page's renderer process (VmHWM; Chromium's other processes not included). Sessions
// use ONNX Runtime's defaults with --threads threads (bench/runtime's one by default). wasm32's
// memory is 4 GiB, and onnxruntime-web copies every weight into it: a variant of 4 GiB or more
// cannot load there and is reported, not tried; smaller ones are tried and their error shown.
// A reported benchmark: it fails nothing.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '..', '..');
const WASM32_MEMORY = 2 ** 32;

// --child MODEL PROMPT_JSON LOGITS_OUT THREADS: one session in this fresh process.
if (process.argv[2] === '--child') {
  const { default: ort } = await import('onnxruntime-node');
  const [model, promptJson, logitsOut, threads] = process.argv.slice(3);
  const p = JSON.parse(promptJson);
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: Number(threads),
    interOpNumThreads: 1,
    logSeverityLevel: 3,
  });
  const t1 = performance.now();
  const out = await session.run({
    input_ids: new ort.Tensor('int64', BigInt64Array.from(p.data, BigInt), p.dims),
  });
  const t2 = performance.now();
  const logits = out.logits;
  writeFileSync(
    logitsOut,
    new Uint8Array(logits.data.buffer, logits.data.byteOffset, logits.data.byteLength),
  );
  await session.release();
  process.stdout.write(
    JSON.stringify({
      loadMs: t1 - t0,
      runMs: t2 - t1,
      type: logits.type,
      dims: logits.dims,
      peakRssMiB: process.resourceUsage().maxRSS / 1024,
    }),
  );
  process.exit(0);
}

const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    name: { type: 'string' },
    seq: { type: 'string', default: '16' },
    seed: { type: 'string', default: '1' },
    'no-web': { type: 'boolean', default: false },
    'no-node': { type: 'boolean', default: false },
    threads: { type: 'string', default: '1' },
    json: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help || positionals.length !== 2) {
  console.error(
    'usage: variants-llm.mjs DECODER.onnx VARIANTS_DIR [--name NAME] [--seq N] [--seed N] [--no-web] [--no-node] [--threads N] [--json FILE]',
  );
  process.exit(opt.help ? 0 : 2);
}
const [decoder, dir] = positionals.map((p) => resolve(p));
const { variantSchema } = await import('../../js/index.js');
const { logitsTensor, promptIds } = await import('../../tests/node/logits.mjs');
const { compareTensors } = await import('onnxfold/accuracy');
const log = (...a) => console.error(...a);

const name = opt.name ?? basename(decoder).replace(/\.onnx$/, '');
const filesOf = (folder, file) => readdirSync(folder).filter((f) => f.startsWith(file));
const bytesOf = (folder, file) =>
  filesOf(folder, file).reduce((n, f) => n + statSync(join(folder, f)).size, 0);
const variants = (await variantSchema())
  .map(({ dtype, file }) => ({ dtype, file: `${name}${file.slice('model'.length)}` }))
  .filter((v) => existsSync(join(dir, v.file)))
  .map((v) => ({ ...v, bytes: bytesOf(dir, v.file) }));
if (!variants.length) {
  console.error(
    `no variant of '${name}' in ${dir} (${name}.onnx, ${name}_fp16.onnx, ...; --name sets the name)`,
  );
  process.exit(2);
}
// The decoder's data files are those beside it whose names start with its own.
const original = {
  dtype: 'original',
  file: basename(decoder),
  dir: dirname(decoder),
  bytes: bytesOf(dirname(decoder), basename(decoder)),
};

// The prompt: ids spread over the vocabulary (the logits' last dim, from the model's summary).
const { inspect } = await import('../../js/index.js');
const externalData = Object.fromEntries(
  filesOf(original.dir, original.file)
    .filter((f) => f !== original.file)
    .map((f) => [f, join(original.dir, f)]),
);
const summary = await inspect(decoder, { externalData });
const vocab = Number(/,(\d+)\]$/.exec(summary.outputs.find((o) => o.name === 'logits')?.type ?? '')?.[1]);
if (!Number.isInteger(vocab) || vocab <= 0) {
  console.error(`${decoder}: no logits output with a fixed vocabulary size`);
  process.exit(2);
}
const prompt = promptIds({ seed: Number(opt.seed), vocab, seq: Number(opt.seq) });
const promptJson = JSON.stringify({ data: Array.from(prompt.data, String), dims: prompt.dims });

const scratch = mkdtempSync(join(tmpdir(), 'onnxfold-variants-llm-'));
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));
const rows = [];
let reference = null;

function nodeRun(v, folder) {
  const logitsOut = join(scratch, `${v.dtype}.f32`);
  const r = spawnSync(
    process.execPath,
    [fileURLToPath(import.meta.url), '--child', join(folder, v.file), promptJson, logitsOut, opt.threads],
    { encoding: 'utf8', maxBuffer: 1 << 24, cwd: repoRoot },
  );
  if (r.status !== 0)
    return {
      error: (r.stderr || r.signal || `exit ${r.status}`)
        .trim()
        .split('\n')
        .slice(-2)
        .join(' | ')
        .slice(0, 300),
    };
  const res = JSON.parse(r.stdout);
  const bytes = readFileSync(logitsOut);
  rmSync(logitsOut);
  return { ...res, logits: new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4) };
}

function judge(row, logits) {
  if (!reference || !logits) return row;
  const dims = [reference.length / vocab, vocab];
  const m = compareTensors('logits', logitsTensor(reference, dims), logitsTensor(logits, dims));
  return { ...row, cosine: m.cosine, argmax: m.argmax, rel: m.relRange };
}

// Reference first: the original in node (also when --no-node: the web rows need it).
log(`original: onnxruntime-node`);
const ref = nodeRun(original, original.dir);
if (ref.error) {
  console.error(`the original does not run in onnxruntime-node: ${ref.error}`);
  process.exit(1);
}
reference = ref.logits;
if (!opt['no-node']) {
  rows.push(
    judge(
      {
        runtime: 'node',
        dtype: 'original',
        bytes: original.bytes,
        loadMs: ref.loadMs,
        runMs: ref.runMs,
        peakRssMiB: ref.peakRssMiB,
      },
      ref.logits,
    ),
  );
  for (const v of variants) {
    log(`${v.dtype}: onnxruntime-node`);
    const r = nodeRun(v, dir);
    rows.push(
      r.error
        ? { runtime: 'node', dtype: v.dtype, bytes: v.bytes, error: r.error }
        : judge(
            {
              runtime: 'node',
              dtype: v.dtype,
              bytes: v.bytes,
              loadMs: r.loadMs,
              runMs: r.runMs,
              peakRssMiB: r.peakRssMiB,
            },
            r.logits,
          ),
    );
  }
}

// The renderer processes under this one (Chromium is our child): pid -> VmHWM in MiB.
function renderers() {
  const parent = new Map();
  const cmd = new Map();
  for (const p of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      parent.set(
        Number(p),
        Number(
          readFileSync(`/proc/${p}/stat`, 'utf8')
            .replace(/^.*\) /, '')
            .split(' ')[1],
        ),
      );
      cmd.set(Number(p), readFileSync(`/proc/${p}/cmdline`, 'utf8'));
    } catch {
      /* gone */
    }
  }
  const ours = (pid) => {
    for (let p = pid, i = 0; p > 1 && i < 64; p = parent.get(p), i++) if (p === process.pid) return true;
    return false;
  };
  const out = new Map();
  for (const [pid, c] of cmd) {
    if (!c.includes('--type=renderer') || !ours(pid)) continue;
    try {
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (hwm) out.set(pid, Number(hwm[1]) / 1024);
    } catch {
      /* gone */
    }
  }
  return out;
}

if (!opt['no-web']) {
  const { launchChromium } = await import('../../tests/browser/harness.mjs');
  const { runInPage, servedUrl, unpack } = await import('../../tests/browser/ort-web.mjs');
  const { serveStatic } = await import('../../web/serve.mjs');
  const playwright = await import('playwright-core');
  const ORT_WEB = join(repoRoot, 'node_modules', 'onnxruntime-web', 'dist', 'ort.wasm.min.mjs');
  // The served root is the repository: the models are reached through links in a folder under build/.
  const { mkdirSync, symlinkSync } = await import('node:fs');
  mkdirSync(join(repoRoot, 'build'), { recursive: true });
  const served = mkdtempSync(join(repoRoot, 'build', 'variants-llm-'));
  process.on('exit', () => rmSync(served, { recursive: true, force: true }));
  const server = await serveStatic({ root: repoRoot });
  const browser = await launchChromium(playwright);
  try {
    for (const v of [original, ...variants]) {
      const folder = v.dir ?? dir;
      if (v.bytes >= WASM32_MEMORY) {
        rows.push({
          runtime: 'web',
          dtype: v.dtype,
          bytes: v.bytes,
          error: `cannot load: ${(v.bytes / 1e9).toFixed(2)} GB of weights, more than wasm32's 4 GiB memory that onnxruntime-web copies them into`,
        });
        continue;
      }
      const linkDir = join(served, v.dtype);
      mkdirSync(linkDir);
      const files = filesOf(folder, v.file);
      for (const f of files) symlinkSync(join(folder, f), join(linkDir, f));
      const model = {
        url: servedUrl(join(linkDir, v.file)),
        data: files.filter((f) => f !== v.file).map((f) => ({ name: f, url: servedUrl(join(linkDir, f)) })),
      };
      log(`${v.dtype}: onnxruntime-web`);
      const before = new Set(renderers().keys());
      const page = await browser.newPage();
      let r;
      let rss = null;
      try {
        page.on('pageerror', (e) => log(`page error: ${e.message}`));
        await page.goto(new URL('/web/serve.mjs', server.url).href);
        const inputs = {
          input_ids: { type: 'int64', data: Array.from(prompt.data, String), dims: prompt.dims },
        };
        r = (
          await page.evaluate(runInPage, {
            ortUrl: servedUrl(ORT_WEB),
            models: { [v.dtype]: model },
            inputs,
            packed: true,
          })
        )[v.dtype];
        const mine = [...renderers()].filter(([pid]) => !before.has(pid)).map(([, mib]) => mib);
        rss = mine.length ? Math.max(...mine) : null;
      } catch (e) {
        r = { error: String(e.message).split('\n')[0] };
      } finally {
        await page.close().catch(() => {});
      }
      rmSync(linkDir, { recursive: true, force: true });
      rows.push(
        r.error
          ? { runtime: 'web', dtype: v.dtype, bytes: v.bytes, error: r.error.slice(0, 300) }
          : judge(
              {
                runtime: 'web',
                dtype: v.dtype,
                bytes: v.bytes,
                loadMs: r.loadMs,
                runMs: r.runMs,
                peakRssMiB: rss,
              },
              unpack(r.outputs.logits.packed),
            ),
      );
    }
  } finally {
    await browser.close();
    await server.close();
  }
}

const fmt = (x, d) => (Number.isFinite(x) ? x.toFixed(d) : '-');
const lines = [
  `${decoder} (${(original.bytes / 1e9).toFixed(2)} GB), variants in ${dir}; prompt: ${prompt.dims[1]} ids (seed ${opt.seed}) ` +
    `over a vocabulary of ${vocab}; ${opt.threads} thread(s); load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')} at the end`,
  '',
  '| runtime | variant | MB | load ms | run ms | cosine | argmax agreement | max \\|diff\\| / range | peak RSS MiB |',
  '|---|---|---:|---:|---:|---:|---:|---:|---:|',
];
for (const r of rows) {
  if (r.error) {
    lines.push(
      `| ${r.runtime} | ${r.dtype} | ${fmt(r.bytes / 1e6, 1)} | | | | | ${r.error.replaceAll('|', '\\|')} | |`,
    );
    continue;
  }
  lines.push(
    `| ${r.runtime} | ${r.dtype} | ${fmt(r.bytes / 1e6, 1)} | ${fmt(r.loadMs, 0)} | ${fmt(r.runMs, 0)} | ${fmt(r.cosine, 6)} | ` +
      `${fmt(r.argmax, 3)} | ${r.rel === undefined ? '-' : r.rel.toExponential(2)} | ${fmt(r.peakRssMiB, 0)} |`,
  );
}
console.log(lines.join('\n'));
if (opt.json)
  writeFileSync(
    opt.json,
    `${JSON.stringify({ decoder, dir, vocab, prompt: { seed: Number(opt.seed), dims: prompt.dims }, rows }, null, 1)}\n`,
  );

// Bundlers: esbuild bundles a small browser entry that imports 'onnxfold' (resolved like an
// installed package, through package.json "exports") for platform "browser". The bundle must build
// without node built-ins, emit the .wasm asset (byte-identical to dist/onnxfold.wasm) through the
// package's "onnxfold/onnxfold.wasm" export, and work: it is then imported and run (node executes
// the same bundle; the glue's environment checks pick node's loader for the asset).
// Skips with a reason when dist/ or esbuild is missing; fails instead when CI is set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { modelsDir, need, repoRoot } from './env.mjs';

const model = join(modelsDir, 'conv1d_m5.op14.nofold.onnx');
const distWasm = join(repoRoot, 'dist', 'onnxfold.wasm');

async function loadEsbuild() {
  try {
    return await import('esbuild');
  } catch {
    return null;
  }
}

test(
  'esbuild bundles a browser entry importing onnxfold, with the wasm as an asset',
  { timeout: 120_000 },
  async (t) => {
    if (
      !need(
        t,
        existsSync(distWasm),
        'dist/onnxfold.wasm not built (cmake --build --preset wasm --target onnxfold_wasm)',
      )
    )
      return;
    const esbuild = await loadEsbuild();
    if (!need(t, esbuild, 'esbuild is not installed (npm ci installs the dev dependencies)')) return;
    if (!need(t, existsSync(model), `${model} missing (shared models)`)) return;

    const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-bundle-'));
    try {
      // A consumer project with onnxfold "installed" (a link to the repo, resolved through exports).
      mkdirSync(join(tmp, 'node_modules'));
      symlinkSync(repoRoot, join(tmp, 'node_modules', 'onnxfold'), 'dir');
      writeFileSync(
        join(tmp, 'entry.js'),
        [
          "import { optimize, inspect, env } from 'onnxfold';",
          "import wasmUrl from 'onnxfold/onnxfold.wasm';",
          '// esbuild does not follow new URL(..., import.meta.url); point the package at the emitted asset.',
          'env.wasmUrl = new URL(wasmUrl, import.meta.url);',
          'export async function run(bytes) {',
          '  const { model, report } = await optimize(bytes);',
          '  return { bytes: model.length, nodes: report.after.nodes, check: (await inspect(model)).nodes };',
          '}',
        ].join('\n'),
      );
      const out = join(tmp, 'out');
      const result = await esbuild.build({
        absWorkingDir: tmp,
        entryPoints: ['entry.js'],
        bundle: true,
        format: 'esm',
        platform: 'browser',
        target: 'es2022',
        outdir: out,
        loader: { '.wasm': 'file' },
        metafile: true,
        logLevel: 'silent',
      });
      assert.deepEqual(result.errors, []);
      const emitted = readdirSync(out);
      const wasmAssets = emitted.filter((f) => f.endsWith('.wasm'));
      assert.equal(wasmAssets.length, 1, `one wasm asset (emitted: ${emitted.join(', ')})`);
      assert.ok(
        Buffer.compare(readFileSync(join(out, wasmAssets[0])), readFileSync(distWasm)) === 0,
        'asset is dist/onnxfold.wasm',
      );
      const bundle = readFileSync(join(out, 'entry.js'), 'utf8');
      assert.ok(bundle.includes(wasmAssets[0]), 'the bundle refers to the asset');
      assert.doesNotMatch(
        bundle,
        /^\s*import\s.*from\s*["'](node:|fs|path|module|url)/m,
        'no node built-in imports',
      );
      const inputs = Object.keys(result.metafile.inputs);
      assert.ok(
        inputs.some((p) => p.endsWith('dist/onnxfold.mjs')),
        'the glue is bundled',
      );
      assert.ok(
        inputs.some((p) => p.endsWith('js/index.js')),
        'the package entry is bundled',
      );
      const bundleBytes = readFileSync(join(out, 'entry.js')).length;
      assert.ok(bundleBytes < 200_000, `bundle is ${bundleBytes} bytes`);

      const { run } = await import(pathToFileURL(join(out, 'entry.js')).href);
      const r = await run(readFileSync(model));
      assert.ok(r.bytes > 0);
      assert.equal(r.nodes, r.check);
      assert.ok(r.nodes < 22);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  },
);

// The same kind of bundle in Chromium: once on the page's main thread and once in a module Web
// Worker, both served by a static localhost server (application/wasm, so streaming compile runs).
test(
  'the esbuild bundle runs in Chromium, on the page and in a Web Worker',
  { timeout: 120_000 },
  async (t) => {
    if (
      !need(
        t,
        existsSync(distWasm),
        'dist/onnxfold.wasm not built (cmake --build --preset wasm --target onnxfold_wasm)',
      )
    )
      return;
    const esbuild = await loadEsbuild();
    if (!need(t, esbuild, 'esbuild is not installed (npm ci installs the dev dependencies)')) return;
    if (!need(t, existsSync(model), `${model} missing (shared models)`)) return;
    let playwright;
    try {
      playwright = await import('playwright-core');
    } catch {
      playwright = null;
    }
    const chromium = process.env.ONNXFOLD_CHROMIUM ?? '/usr/bin/chromium';
    if (
      !need(
        t,
        playwright && existsSync(chromium),
        `playwright-core (npm ci) or ${chromium} (apt-get install chromium) missing`,
      )
    )
      return;

    const { createServer } = await import('node:http');
    const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-browser-'));
    let server;
    let browser;
    try {
      mkdirSync(join(tmp, 'node_modules'));
      symlinkSync(repoRoot, join(tmp, 'node_modules', 'onnxfold'), 'dir');
      const job = [
        "import { optimize, inspect, env } from 'onnxfold';",
        "import wasmUrl from 'onnxfold/onnxfold.wasm';",
        'env.wasmUrl = new URL(wasmUrl, import.meta.url);',
        'export async function run(bytes) {',
        '  const fractions = [];',
        '  // A Blob in gives a Blob out (parts referring to the input).',
        '  const { model, report } = await optimize(new Blob([bytes]), { onProgress: (p) => fractions.push(p.fraction) });',
        '  let error = "";',
        '  try { await optimize(new Uint8Array([1, 2, 3])); } catch (e) { error = `${e.name}: ${e.message}`; }',
        '  return { bytes: model instanceof Blob ? model.size : -1, nodes: report.after.nodes, check: (await inspect(model)).nodes, last: fractions.at(-1), error };',
        '}',
      ].join('\n');
      writeFileSync(join(tmp, 'job.js'), job);
      writeFileSync(
        join(tmp, 'worker.js'),
        "import { run } from './job.js';\n" +
          'self.onmessage = async (e) => { try { self.postMessage(await run(e.data)); } catch (err) { self.postMessage({ failed: String(err) }); } };\n',
      );
      writeFileSync(
        join(tmp, 'page.js'),
        "import { run } from './job.js';\n" +
          [
            'const bytes = new Uint8Array(await (await fetch("model.onnx")).arrayBuffer());',
            'const main = await run(bytes).catch((e) => ({ failed: String(e) }));',
            'const worker = new Worker("./worker.js", { type: "module" });',
            'const inWorker = await new Promise((resolve) => { worker.onmessage = (e) => resolve(e.data); worker.onerror = (e) => resolve({ failed: e.message }); worker.postMessage(bytes); });',
            'window.results = { main, worker: inWorker };',
          ].join('\n'),
      );
      const out = join(tmp, 'out');
      await esbuild.build({
        absWorkingDir: tmp,
        entryPoints: ['page.js', 'worker.js'],
        bundle: true,
        format: 'esm',
        platform: 'browser',
        target: 'es2022',
        outdir: out,
        loader: { '.wasm': 'file' },
        logLevel: 'silent',
      });
      writeFileSync(
        join(out, 'index.html'),
        '<!doctype html><meta charset="utf-8"><script type="module" src="page.js"></script>',
      );
      writeFileSync(join(out, 'model.onnx'), readFileSync(model));
      const types = {
        '.html': 'text/html',
        '.js': 'text/javascript',
        '.wasm': 'application/wasm',
        '.onnx': 'application/octet-stream',
      };
      server = createServer((req, res) => {
        const file = join(out, decodeURIComponent(new URL(req.url, 'http://x').pathname));
        if (!file.startsWith(out) || !existsSync(file)) {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(200, {
          'content-type': types[file.slice(file.lastIndexOf('.'))] ?? 'application/octet-stream',
        });
        res.end(readFileSync(file));
      });
      await new Promise((r) => server.listen(0, '127.0.0.1', r));
      browser = await playwright.chromium.launch({
        executablePath: chromium,
        headless: true,
        args: [
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
      const page = await browser.newPage();
      const logs = [];
      page.on('console', (m) => logs.push(m.text()));
      page.on('pageerror', (e) => logs.push(String(e)));
      await page.goto(`http://127.0.0.1:${server.address().port}/index.html`);
      await page.waitForFunction(() => window.results, null, { timeout: 90_000 });
      const results = await page.evaluate(() => window.results);
      for (const where of ['main', 'worker']) {
        const r = results[where];
        assert.equal(r.failed, undefined, `${where}: ${r.failed} (console: ${logs.join(' | ')})`);
        assert.ok(r.nodes < 22 && r.nodes === r.check && r.bytes > 0, `${where}: ${JSON.stringify(r)}`);
        assert.equal(r.last, 1, `${where}: progress reaches 1`);
        assert.match(r.error, /^OnnxfoldError: optimize: /, `${where}: errors are OnnxfoldErrors`);
      }
    } finally {
      if (browser) await browser.close();
      if (server) server.close();
      rmSync(tmp, { recursive: true, force: true });
    }
  },
);

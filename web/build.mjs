#!/usr/bin/env node
// Bundles the web page into a static folder (default build/web): main.js, worker.js and
// verify-worker.js (esbuild, with the 'onnxfold' package resolved by name through package.json
// "exports"; the verify worker bundles onnxruntime-web and gets its .wasm copied;
// graph-layout-worker.js bundles elkjs for the graph view), index.html,
// style.css, the wasm binary next to the bundles (the Emscripten glue finds it relative to the
// script that loads it) and the sample model. Prints each file's size, raw and gzipped.
//
//   node web/build.mjs [--out DIR] [--no-minify]
import { build } from 'esbuild';
import { copyFile, mkdir, readFile, readdir, rm, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';

const webDir = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(webDir, '..');

const STATIC_FILES = [
  [join(webDir, 'index.html'), 'index.html'],
  [join(webDir, 'style.css'), 'style.css'],
  [join(repoRoot, 'dist', 'onnxfold.wasm'), 'onnxfold.wasm'],
  [join(repoRoot, 'examples', 'conv1d_m5.onnx'), 'conv1d_m5.onnx'],
  // ONNX Runtime Web's CPU (SIMD) runtime for the verify worker, fetched by its wasmPaths.
  [join(repoRoot, 'node_modules', 'onnxruntime-web', 'dist', 'ort-wasm-simd-threaded.wasm'),
    'ort-wasm-simd-threaded.wasm'],
];

/**
 * Builds the page into outDir. `alias` maps import specifiers to files (esbuild's alias option),
 * for trying the page against another build of the package.
 */
export async function buildWeb({ outDir = join(repoRoot, 'build', 'web'), minify = true, alias } = {}) {
  for (const [from] of STATIC_FILES) {
    if (!existsSync(from)) {
      const hint = from.includes('node_modules') ? ' (run npm ci)'
        : from.endsWith('.wasm') ? ' (build it: cmake --preset wasm && cmake --build --preset wasm)' : '';
      throw new Error(`build-web: missing ${relative(repoRoot, from)}${hint}`);
    }
  }
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  await build({
    absWorkingDir: repoRoot,
    // verify-worker (with onnxruntime-web) is its own bundle, fetched only when Verify is pressed.
    entryPoints: {
      main: join(webDir, 'src', 'main.js'),
      worker: join(webDir, 'src', 'worker.js'),
      'verify-worker': join(webDir, 'src', 'verify-worker.js'),
      // elkjs, fetched only when the graph view is opened.
      'graph-layout-worker': join(webDir, 'src', 'graph-layout-worker.js'),
    },
    outdir: outDir,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    // Module workers and top-level await in workers: Chrome 80+, Firefox 114+, Safari 15+.
    target: ['chrome100', 'firefox114', 'safari15'],
    minify,
    sourcemap: 'linked',
    legalComments: 'none',
    logLevel: 'warning',
    alias,
  });
  await Promise.all(STATIC_FILES.map(([from, to]) => copyFile(from, join(outDir, to))));
  const files = [];
  for (const name of (await readdir(outDir)).sort()) {
    if (name.endsWith('.map')) continue;
    const bytes = await readFile(join(outDir, name));
    files.push({ name, bytes: (await stat(join(outDir, name))).size, gzip: gzipSync(bytes, { level: 9 }).length });
  }
  return { outDir, files };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { out: { type: 'string' }, 'no-minify': { type: 'boolean' } } });
  try {
    const { outDir, files } = await buildWeb({
      outDir: values.out ? resolve(values.out) : undefined,
      minify: !values['no-minify'],
    });
    const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
    console.log(`build-web: ${relative(process.cwd(), outDir) || '.'}`);
    for (const f of files) console.log(`  ${f.name.padEnd(28)} ${kib(f.bytes).padStart(11)}  gzip ${kib(f.gzip).padStart(10)}`);
    const code = files.filter((f) => /\.(js|wasm)$/.test(f.name));
    console.log(`  code (js + wasm): ${kib(code.reduce((a, f) => a + f.bytes, 0))}, ` +
      `gzip ${kib(code.reduce((a, f) => a + f.gzip, 0))}`);
  } catch (e) {
    console.error(e.message);
    process.exit(1);
  }
}

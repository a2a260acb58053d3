// One model's variants in onnxruntime-web (wasm provider, one thread) in headless Chromium
// (playwright-core, Debian's /usr/bin/chromium): the page bench/runtime/page/ runs the same
// procedure as measure-node.mjs (timing.mjs). The repository root is served, so the page reads
// onnxruntime-web from node_modules and the variants from build/runtime-bench.
import { relative } from 'node:path';
import { chromium } from 'playwright-core';
import { serveStatic } from '../../web/serve.mjs';

const ARGS = [
  '--no-sandbox',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--enable-unsafe-webgpu',
];

/** Starts Chromium and the server; returns { measure(variants, options), close() }. */
export async function openBrowser(repoRoot) {
  const server = await serveStatic({ root: repoRoot });
  const browser = await chromium.launch({
    executablePath: process.env.ONNXFOLD_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ARGS,
  });
  const url = (p) => `/${relative(repoRoot, p).split('\\').join('/')}`;
  return {
    version: browser.version(),
    // variants: [{ name, dir, file, data: [names] }] with absolute dirs under repoRoot.
    async measure(variants, options) {
      const page = await browser.newPage();
      try {
        page.setDefaultTimeout(0);
        page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
        await page.goto(new URL('bench/runtime/page/index.html', server.url).href);
        await page.waitForFunction(() => document.body?.dataset.ready === '1', null, { timeout: 60_000 });
        const cfg = { ...options, variants: variants.map((v) => ({ ...v, dir: url(v.dir) })) };
        return await page.evaluate((c) => window.measure(c), cfg);
      } finally {
        await page.close();
      }
    },
    async close() {
      await browser.close();
      await server.close();
    },
  };
}

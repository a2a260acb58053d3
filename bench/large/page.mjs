#!/usr/bin/env node
// The web page at LLM size: Chromium (playwright-core, Debian's /usr/bin/chromium) opens the
// bundled page (build/web, scripts/build-web), picks a model and its data files, clicks
// Optimize and waits until the result can be downloaded. Prints the time from the click to the
// download links (median of --runs), the peak wasm heap the page reports, and the page's
// weights-to-heap ratio, what the page stored in the browser's storage rather than memory, and
// Chromium's peak RSS (all its processes, and the largest one). A reported benchmark; it fails
// nothing.
//
//   node bench/large/page.mjs /work/llm/llama1b.onnx [--runs 3] [--download DIR] [--query Q] [--variants]
// --download DIR saves the last run's result files there (to compare with the CLI's output).
// --query Q adds the page's URL options (e.g. 'quantize=int4&qformat=ort'); --variants clicks
// the Variants panel's button instead (every variant), and the heap is the largest of them.
import { readdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serveStatic } from '../../web/serve.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const model = resolve(args[0]);
const runs = args.includes('--runs') ? Number(args[args.indexOf('--runs') + 1]) : 3;
const downloadDir = args.includes('--download') ? resolve(args[args.indexOf('--download') + 1]) : undefined;
const query = args.includes('--query') ? args[args.indexOf('--query') + 1] : '';
const variants = args.includes('--variants');
const files = readdirSync(dirname(model)).filter((f) => f.startsWith(basename(model))).map((f) => join(dirname(model), f)).sort();

const server = await serveStatic({ root: resolve(here, '..', '..', 'build', 'web') });
const context = async () => browser.newContext({ acceptDownloads: true });
const browser = await chromium.launch({ executablePath: process.env.ONNXFOLD_CHROMIUM ?? '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
// Chromium's memory while the page works: every process under the browser, sampled from
// /proc every 250 ms; the peak of their total RSS and of the largest one (the worker's renderer).
function descendants(root) {
  const parent = new Map();
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      parent.set(Number(pid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch { /* gone */ }
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) for (const [pid, pp] of parent) if (pp === out[i]) out.push(pid);
  return out;
}
const rssOf = (pid) => {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;
  } catch {
    return 0;
  }
};
const memory = { total: 0, largest: 0 };
const sampler = setInterval(() => {
  const rss = descendants(browser.process().pid).map(rssOf);
  memory.total = Math.max(memory.total, rss.reduce((a, b) => a + b, 0));
  memory.largest = Math.max(memory.largest, ...rss);
}, 250);

const times = [];
let heap;
let spill;
for (let r = 0; r < runs; r++) {
  const page = await (await context()).newPage();
  await page.goto(query ? `${server.url}?${query}` : server.url);
  await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 60_000 });
  await page.setInputFiles('#file', files);
  await page.waitForFunction(() => document.body.dataset.model && ['ready', 'error'].includes(document.body.dataset.state), null, { timeout: 120_000 });
  const t0 = Date.now();
  if (variants) await page.locator('#variants-box summary').click();
  await page.click(variants ? '#variants' : '#run');
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state), null, { timeout: 3_600_000 });
  const state = await page.evaluate(() => document.body.dataset.state);
  if (state !== 'done') throw new Error(await page.locator('#error').textContent());
  await page.locator(variants ? '#variants-table' : '#download').waitFor();
  times.push((Date.now() - t0) / 1000);
  heap = Number(await page.evaluate(() => document.body.dataset.peakHeap));
  spill = Number(await page.evaluate(() => document.body.dataset.spillBytes ?? 0));
  if (downloadDir && r === runs - 1) {
    for (const link of await page.locator(variants ? '#variants-result a' : '#downloads a').all()) {
      const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
      await download.saveAs(join(downloadDir, download.suggestedFilename()));
    }
  }
  await page.close();
}
clearInterval(sampler);
await browser.close();
await server.close();
const sorted = [...times].sort((a, b) => a - b);
console.log(JSON.stringify({ model: basename(model), query, variants, files: files.map((f) => basename(f)), seconds: times,
  median: sorted[Math.floor(sorted.length / 2)], peakHeapMB: heap / 2 ** 20, storedMB: spill / 2 ** 20,
  chromiumPeakRssMB: memory.total / 2 ** 20, largestProcessPeakRssMB: memory.largest / 2 ** 20 }));

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
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
const files = readdirSync(dirname(model))
  .filter((f) => f.startsWith(basename(model)))
  .map((f) => join(dirname(model), f))
  .sort();

const server = await serveStatic({ root: resolve(here, '..', '..', 'build', 'web') });
// A profile on disk, as a user's browser has: an incognito context (newContext) keeps the
// site's storage in memory with a small quota, where a multi-GB result does not fit.
const profile = mkdtempSync(join(tmpdir(), 'onnxfold-page-bench-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.ONNXFOLD_CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  acceptDownloads: true,
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
// Chromium's memory while the page works: every process under this one, sampled from
// /proc every 250 ms; the peak of their total RSS and of the largest one (the worker's renderer).
function descendants(root) {
  const parent = new Map();
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      parent.set(Number(pid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone */
    }
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) for (const [pid, pp] of parent) if (pp === out[i]) out.push(pid);
  return out;
}
// RSS, and its anonymous part (RssAnon: the process's own memory; the rest is file pages
// mapped while read, which the kernel can drop).
const rssOf = (pid) => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
    return { rss: kb('VmRSS'), anon: kb('RssAnon') };
  } catch {
    return { rss: 0, anon: 0 };
  }
};
const kindOf = (pid) => {
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const type = cmd.find((a) => a.startsWith('--type='))?.slice(7);
    const sub = cmd.find((a) => a.startsWith('--utility-sub-type='))?.slice(19);
    return sub ? `${type}:${sub}` : (type ?? 'browser');
  } catch {
    return '?';
  }
};
const memory = { total: 0, anon: 0, largest: 0, largestKind: '' };
const sampler = setInterval(() => {
  // Chromium runs as this process's children (playwright's launch); this process not counted.
  const pids = descendants(process.pid).slice(1);
  const m = pids.map(rssOf);
  memory.total = Math.max(
    memory.total,
    m.reduce((a, b) => a + b.rss, 0),
  );
  memory.anon = Math.max(
    memory.anon,
    m.reduce((a, b) => a + b.anon, 0),
  );
  const rss = m.map((x) => x.rss);
  const i = rss.indexOf(Math.max(...rss));
  if (rss[i] > memory.largest) Object.assign(memory, { largest: rss[i], largestKind: kindOf(pids[i]) });
}, 250);

const times = [];
let heap;
let spill;
let lastProfile;
for (let r = 0; r < runs; r++) {
  const page = await browser.newPage();
  await page.goto(query ? `${server.url}?${query}` : server.url);
  await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 60_000 });
  await page.setInputFiles('#file', files);
  await page.waitForFunction(
    () => document.body.dataset.model && ['ready', 'error'].includes(document.body.dataset.state),
    null,
    { timeout: 120_000 },
  );
  const t0 = Date.now();
  if (variants) await page.locator('#variants-box summary').click();
  await page.click(variants ? '#variants' : '#run');
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state), null, {
    timeout: 3_600_000,
  });
  const state = await page.evaluate(() => document.body.dataset.state);
  if (state !== 'done') throw new Error(await page.locator('#error').textContent());
  await page.locator(variants ? '#variants-table' : '#download').waitFor();
  times.push((Date.now() - t0) / 1000);
  heap = Number(await page.evaluate(() => document.body.dataset.peakHeap));
  spill = Number(await page.evaluate(() => document.body.dataset.spillBytes ?? 0));
  lastProfile = JSON.parse(await page.evaluate(() => document.body.dataset.profile ?? 'null'));
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
rmSync(profile, { recursive: true, force: true });
await server.close();
const sorted = [...times].sort((a, b) => a - b);
console.log(
  JSON.stringify({
    model: basename(model),
    query,
    variants,
    files: files.map((f) => basename(f)),
    seconds: times,
    median: sorted[Math.floor(sorted.length / 2)],
    peakHeapMB: heap / 2 ** 20,
    storedMB: spill / 2 ** 20,
    chromiumPeakRssMB: memory.total / 2 ** 20,
    chromiumPeakAnonMB: memory.anon / 2 ** 20,
    largestProcessPeakRssMB: memory.largest / 2 ** 20,
    largestProcess: memory.largestKind,
    profile: lastProfile,
  }),
);

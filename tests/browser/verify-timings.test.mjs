// Verify's load and run times (issue 22): after the comparison the page shows, for the original and
// the optimized model, the session-creation time and the median run time with the number of runs,
// the spread, and the ratio in words. This reads them back from the page (the text and the data
// attributes of #verify-load, #verify-run and #verify-timings) and checks that they are there for
// both models, positive and finite, and that the ratio shown follows from the medians shown. No
// speed is asserted: it depends on the machine.
//
//   scripts/build-web && node --test tests/browser/verify-timings.test.mjs
//
// Without Chromium or the built page the tests skip, except under CI (process.env.CI), where they
// fail; mobilenet_v2 comes from the shared models (ONNXFOLD_SHARED) and skips without them.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { serveStatic } from '../../web/serve.mjs';
import { TIMING } from '../../web/src/verify-timing.js';
import { launchChromium, prerequisites, repoRoot, shared, webDir } from './harness.mjs';

const sample = join(repoRoot, 'examples', 'conv1d_m5.onnx');
const mobilenet = join(shared, 'models', 'mobilenet_v2.op13.nofold.onnx');

const { playwright, skipReason } = await prerequisites('verify timings', {
  files: ['verify-worker.js', 'ort-wasm-simd-threaded.wasm'],
});

// '12.1 ms' -> { ms: 12.1, tol: 0.05 } (tol: half a unit of the last digit shown, in ms).
function parseTime(text) {
  const m = /^([\d.]+) (ms|s)$/.exec(text);
  assert.ok(m, `not a time: '${text}'`);
  const scale = m[2] === 's' ? 1000 : 1;
  const decimals = m[1].split('.')[1]?.length ?? 0;
  return { ms: Number(m[1]) * scale, tol: 0.5 * 10 ** -decimals * scale };
}

// `shown` (as parsed) is `value` rounded for display.
function assertShows(shown, value, what) {
  assert.ok(
    Math.abs(shown.ms - value) <= shown.tol * 1.001 + 1e-9,
    `${what}: shows ${shown.ms} ms for ${value} ms`,
  );
}

// One line (#verify-load or #verify-run): its numbers, checked against each other. Returns the text.
async function checkLine(page, key) {
  const line = page.locator(`#verify-${key}`);
  assert.equal(await line.count(), 1, `#verify-${key} shown`);
  const text = (await line.textContent()).replace(/\s+/g, ' ').trim();
  const data = await line.evaluate((e) => ({ ...e.dataset }));
  const orig = Number(data.originalMs);
  const opt = Number(data.optimizedMs);
  for (const [name, v] of [
    ['original', orig],
    ['optimized', opt],
  ]) {
    assert.ok(
      Number.isFinite(v) && v > 0,
      `${key} ${name}: ${data[`${name}Ms`]} ms is not a positive number`,
    );
  }
  const n = [Number(data.originalN), Number(data.optimizedN)];
  assert.ok(
    n.every((x) => Number.isInteger(x) && x >= 1),
    `${key} counts ${n}`,
  );
  assert.ok(Math.abs(Number(data.ratio) - orig / opt) <= 1e-9 * (orig / opt), `${key} ratio ${data.ratio}`);

  // 'Load: 412 ms → 98.0 ms (4.2x faster; ...' or 'Run: median 12.1 ms → 12.0 ms over 20 runs each (same speed, ...'
  const label = key === 'load' ? 'Load' : 'Run';
  const m = new RegExp(
    `^${label}: (?:median )?([\\d.]+ m?s) → ([\\d.]+ m?s)` +
      '(?: over (\\d+) runs each)? \\((same speed(?:, within noise)?|([\\d.]+)x (faster|slower));',
  ).exec(text);
  assert.ok(m, `${key} line: ${text}`);
  const [shownOrig, shownOpt] = [parseTime(m[1]), parseTime(m[2])];
  assertShows(shownOrig, orig, `${key} original`);
  assertShows(shownOpt, opt, `${key} optimized`);
  if (key === 'run') {
    assert.ok(m[3], `run line reports N: ${text}`);
    assert.equal(Number(m[3]), n[0]);
    assert.equal(n[0], n[1], 'interleaved: as many runs of each');
  }

  // The ratio shown follows from the medians shown (to their rounding and its own).
  if (m[4].startsWith('same speed')) {
    assert.equal(data.verdict, 'same');
    if (m[4].endsWith('within noise')) assert.equal(data.withinNoise, 'true');
    else assert.equal((orig / opt).toFixed(2), '1.00');
  } else {
    assert.equal(data.verdict, m[6]);
    const shownRatio = Number(m[5]);
    const decimals = m[5].split('.')[1]?.length ?? 0;
    const [num, den] = m[6] === 'faster' ? [shownOrig, shownOpt] : [shownOpt, shownOrig];
    assert.ok(shownRatio >= 1, `${m[5]}x ${m[6]}: a ratio of at least 1 in words`);
    const fromShown = num.ms / den.ms;
    const slack = 0.5 * 10 ** -decimals + fromShown * (num.tol / num.ms + den.tol / den.ms) + 1e-9;
    assert.ok(
      Math.abs(shownRatio - fromShown) <= slack,
      `${key}: ${m[5]}x ${m[6]} but the medians shown give ${fromShown.toFixed(3)} (${text})`,
    );
    assert.equal(m[6] === 'faster', orig > opt, `${key}: ${m[6]} with medians ${orig} and ${opt}`);
  }
  return text;
}

describe('web page: Verify shows load and run times for both models (Chromium)', { skip: skipReason }, () => {
  let server;
  let browser;
  const pageErrors = [];

  before(async () => {
    server = await serveStatic({ root: webDir });
    browser = await launchChromium(playwright);
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  async function verifyModel(t, file) {
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    t.after(() => context.close());
    const page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(`${t.name}: ${e.message}`));
    await page.goto(server.url);
    await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    await page.setInputFiles('#file', file);
    await page.waitForFunction(() => Number(document.body.dataset.loads ?? 0) > 0);
    await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state));
    await page.click('#run');
    await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state), null, {
      timeout: 120_000,
    });
    assert.equal(
      await page.evaluate(() => document.body.dataset.state),
      'done',
      await page.locator('#error').textContent(),
    );
    await page.click('#verify');
    await page.waitForFunction(() => ['pass', 'fail', 'error'].includes(document.body.dataset.verify), null, {
      timeout: 300_000,
    });
    assert.equal(
      await page.evaluate(() => document.body.dataset.verify),
      'pass',
      `${await page.locator('#verify-verdict').textContent()} ${await page.locator('#verify-error').textContent()}`,
    );

    assert.ok(await page.locator('#verify-timings').isVisible(), 'timings shown');
    const timings = JSON.parse(await page.locator('#verify-timings').getAttribute('data-timings'));
    assert.equal(timings.error, undefined, `timing failed: ${timings.error}`);
    assert.equal(timings.mode, 'together', 'a small model pair is timed with runs alternating');
    for (const which of ['original', 'optimized']) {
      assert.equal(timings.firstRun[which].n, timings.load[which].n, 'a first run after every load');
      for (const what of ['load', 'firstRun', 'run']) {
        const s = timings[what][which];
        assert.equal(s.times.length, s.n, `${what} ${which}: one time per count`);
        assert.ok(
          s.times.every((x) => Number.isFinite(x) && x > 0),
          `${what} ${which}: ${s.times}`,
        );
        assert.ok(
          s.min <= s.q1 && s.q1 <= s.median && s.median <= s.q3 && s.q3 <= s.max,
          `${what} ${which} order`,
        );
      }
      const { n, reps } = timings.run[which];
      assert.ok(n >= TIMING.minRuns && n <= TIMING.maxRuns, `${which}: ${n} runs`);
      assert.ok(Number.isInteger(reps) && reps >= 1, `${which}: ${reps} runs per time`);
    }
    const lines = [await checkLine(page, 'load'), await checkLine(page, 'run')];
    console.log(`${file.split('/').pop()}:\n  ${lines.join('\n  ')}`);
    return lines;
  }

  test('conv1d_m5 (uploaded): load and run times of both models, N, ratio consistent with the medians', async (t) => {
    await verifyModel(t, sample);
  });

  test('mobilenet_v2: the same on a shared model', async (t) => {
    if (!existsSync(mobilenet)) {
      if (process.env.CI) assert.fail(`missing ${mobilenet}`);
      t.skip(`shared models not found under ${shared} (set ONNXFOLD_SHARED)`);
      return;
    }
    await verifyModel(t, mobilenet);
  });

  // Models too large to hold both are timed one after the other: the worker's other path, driven
  // directly with the size limit set to 0 (and no budgets: one load, the minimum of runs).
  test('verify worker: one model after the other when together they are over the limit', async (t) => {
    const context = await browser.newContext();
    t.after(() => context.close());
    const page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(`${t.name}: ${e.message}`));
    await page.goto(server.url);
    const r = await page.evaluate(async () => {
      const bytes = new Uint8Array(await (await fetch('./conv1d_m5.onnx')).arrayBuffer());
      const w = new Worker('./verify-worker.js', { type: 'module' });
      try {
        return await new Promise((resolve, reject) => {
          w.onmessage = ({ data }) => {
            if (data.type === 'result') resolve(data.value);
            else if (data.type === 'error') reject(new Error(data.error.message));
          };
          w.onerror = (e) => reject(new Error(e.message || 'worker error'));
          w.postMessage({
            id: 1,
            op: 'verify',
            args: {
              original: { name: 'a.onnx', bytes },
              candidate: { name: 'b.onnx', bytes },
              seed: 1,
              dims: {},
              rtol: 1e-3,
              atol: 1e-4,
              timing: { togetherLimit: 0, loadBudgetMs: 0, runBudgetMs: 0 },
            },
          });
        });
      } finally {
        w.terminate();
      }
    });
    assert.equal(r.ok, true, r.message);
    const { timings } = r;
    assert.equal(timings.mode, 'apart', JSON.stringify(timings));
    for (const which of ['original', 'optimized']) {
      assert.equal(timings.load[which].n, 1);
      assert.equal(timings.firstRun[which].n, 1);
      assert.equal(timings.run[which].n, TIMING.minRuns);
      for (const what of ['load', 'firstRun', 'run']) {
        assert.ok(
          timings[what][which].times.every((x) => Number.isFinite(x) && x > 0),
          `${what} ${which}`,
        );
      }
    }
  });

  test('no uncaught page errors', () => {
    assert.deepEqual(pageErrors, []);
  });
});

// End-to-end test of the page's size budget explorer (build/web, made by scripts/build-web):
// playwright-core drives Debian's Chromium against a localhost server. A small Llama-shaped
// decoder (../shared/tools/make_llm.py, external data) has rotary tables the default budgets
// refuse to fold; the explorer optimizes at each refused fold's size, plots nodes against
// output size, and picking a point re-runs the optimizer with that budget: the result's size
// and node count must be the point's. Screenshot: build/test-artifacts/budget-explorer.png.
//
//   scripts/build-web && node --test tests/browser/
//
// Without Chromium, the built page or python3-onnx the tests skip, except under CI, where they fail.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveStatic } from '../../web/serve.mjs';
import { artifacts, launchChromium, prerequisites, webDir } from './harness.mjs';
import { havePythonOnnx, makeDecoder, makeLlm } from '../node/env.mjs';
import { candidateBudgets } from '../../web/src/budget.js';

const { playwright, skipReason } = await prerequisites('budget explorer', {
  also: [makeLlm, ['python3-onnx and python3-numpy', havePythonOnnx()]],
});

test('candidate budgets: every refused size when few, an even spread ending at the largest', () => {
  assert.deepEqual(candidateBudgets([300, 100, 300, 200]), [100, 200, 300]);
  const many = Array.from({ length: 100 }, (_, i) => (i + 1) * 10);
  const picked = candidateBudgets(many, 5);
  assert.equal(picked.length, 5);
  assert.equal(picked.at(-1), 1000);
  assert.deepEqual(
    picked,
    [...picked].sort((a, b) => a - b),
  );
});

describe('web page: size budget explorer (Chromium)', { skip: skipReason }, () => {
  let server;
  let browser;
  let dir;
  let model;

  before(async () => {
    await mkdir(artifacts, { recursive: true });
    dir = await mkdtemp(join(tmpdir(), 'onnxfold-budget-'));
    model = join(dir, 'llm.onnx');
    await makeDecoder(model, { layers: 1, 'max-pos': 256, 'rope-per-layer': true });
    server = await serveStatic({ root: webDir });
    browser = await launchChromium(playwright);
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const waitState = (page, states, timeout = 120_000) =>
    page.waitForFunction((s) => s.includes(document.body.dataset.state), states, { timeout });

  test('explore, pick the largest budget: the re-run gives the plotted size and nodes', async (t) => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 1400 } });
    t.after(() => context.close());
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(server.url);
    await waitState(page, ['ready']);
    await page.setInputFiles('#file', [model, `${model}.data`]);
    await waitState(page, ['ready', 'error']);
    await page.click('#run');
    await waitState(page, ['done', 'error']);
    assert.equal(
      await page.evaluate(() => document.body.dataset.state),
      'done',
      await page.locator('#error').textContent(),
    );

    const status = await page.locator('#budget-status').textContent();
    assert.match(status, /refused \d+ folds?, each adding .* and removing \d+ to \d+ nodes\./, status);
    await page.click('#budget-explore');
    await page.waitForSelector('#budget-plot circle.point:not(.current)', { timeout: 300_000 });
    const points = await page.$$eval('#budget-plot circle.point', (cs) =>
      cs.map((c) => ({
        budget: Number(c.dataset.budget),
        bytes: Number(c.dataset.bytes),
        nodes: Number(c.dataset.nodes),
        current: c.classList.contains('current'),
      })),
    );
    t.diagnostic(`points: ${JSON.stringify(points)}`);
    assert.ok(points.length >= 2);
    const current = points.find((p) => p.current);
    const largest = points.reduce((a, b) => (b.budget > a.budget ? b : a));
    // Folding the refused tables removes nodes and costs bytes.
    assert.ok(
      largest.nodes < current.nodes,
      `${largest.nodes} nodes at the largest budget, ${current.nodes} now`,
    );
    assert.ok(largest.bytes > current.bytes);
    await page.locator('#budget').screenshot({ path: join(artifacts, 'budget-explorer.png') });

    // Pick it with the keyboard: focus the point, Enter.
    await page.focus(`#budget-plot circle.point[data-budget="${largest.budget}"]`);
    await page.keyboard.press('Enter');
    // Done with the picked budget (the run may be over before 'running' could be seen).
    await page.waitForFunction(
      (b) =>
        ['done', 'error'].includes(document.body.dataset.state) &&
        document.querySelector('#size-budget').value === String(b) &&
        !document.querySelector('#budget').hidden,
      largest.budget,
      { timeout: 120_000 },
    );
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'done');
    assert.equal(await page.inputValue('#size-budget'), String(largest.budget));
    assert.equal(await page.inputValue('#constructor-budget'), String(largest.budget));
    assert.match(page.url(), new RegExp(`budget=${largest.budget}`));
    const nodes = await page.locator('#summary .fact').first().locator('.value').textContent();
    assert.match(nodes, new RegExp(`→ ${largest.nodes}$`), nodes);
    // The download's bytes (model + external data) are the point's.
    const size = await page.evaluate(() =>
      [...document.querySelectorAll('#downloads a[download]')]
        .filter((a) => !a.dataset.all)
        .reduce((s, a) => s + Number(a.dataset.bytes ?? 0), 0),
    );
    t.diagnostic(`re-run output ${size} bytes, point ${largest.bytes}`);
    assert.equal(size, largest.bytes);
    assert.deepEqual(errors, []);
  });
});

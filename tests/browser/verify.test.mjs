// End-to-end test of the page's Verify section, options in the URL and keyboard use (build/web,
// made by scripts/build-web): playwright-core drives Debian's Chromium against a localhost server.
// Verify runs onnxruntime-web in its own worker, fetched only when pressed: the first load stays
// under 1 MB gzipped. Verify passes on the sample and shared models, and shows FAIL against a copy
// of an optimized model with one weight changed (picked with "Compare with…"). Screenshots go to
// build/test-artifacts/verify-pass.png and verify-fail.png.
//
//   scripts/build-web && node --test tests/browser/
//
// Without Chromium, the built page or python3-onnx the tests skip, except under CI (process.env.CI),
// where they fail. ONNXFOLD_CHROMIUM overrides /usr/bin/chromium; ONNXFOLD_SHARED locates the shared models.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { serveStatic } from '../../web/serve.mjs';
import { makeInputs as pageInputs } from 'onnxfold/accuracy';
import { artifacts, launchChromium, prerequisites, repoRoot, shared, webDir } from './harness.mjs';
import { havePythonOnnx, python } from '../node/env.mjs';

const sample = join(repoRoot, 'examples', 'conv1d_m5.onnx');
// minibert: int64 inputs (ids, attention mask) and two outputs.
const sharedModels = [
  'squeezenet1_1.op13.initin.onnx',
  'mobilenet_v2.op13.nofold.onnx',
  'minibert.op14.nofold.onnx',
].map((m) => join(shared, 'models', m));

const FIRST_LOAD_LIMIT = 1024 * 1024; // gzipped bytes
const VERIFY_FILES = ['verify-worker.js', 'ort-wasm-simd-threaded.wasm'];

const { playwright, skipReason } = await prerequisites('verify', {
  files: ['conv1d_m5.onnx', ...VERIFY_FILES],
});

// A copy of `from` whose last node's last float initializer input (e.g. a Gemm's bias) has one
// value moved by 1.0: that output moves by 1.0, far past any tolerance.
const ALTER = `
import sys, onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
inits = {i.name: i for i in m.graph.initializer if i.data_type == onnx.TensorProto.FLOAT}
for node in reversed(m.graph.node):
    names = [n for n in node.input if n in inits and len(numpy_helper.to_array(inits[n]).flat)]
    if names:
        t = inits[names[-1]]
        a = numpy_helper.to_array(t).copy()
        a.flat[0] += 1.0
        t.CopyFrom(numpy_helper.from_array(a, t.name))
        break
else:
    sys.exit('no float initializer to change')
onnx.save(m, sys.argv[2])
`;

const gz = (file) => gzipSync(readFileSync(file), { level: 9 }).length;
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;

// The page's verify must feed what the tests' oracle feeds (same seed, dims and value rules).
test("verify inputs are the oracle's inputs (conv1d_m5, minibert)", async (t) => {
  let oracle;
  try {
    oracle = await import('../node/oracle.mjs');
  } catch (e) {
    if (process.env.CI) throw e;
    t.skip(`onnxruntime-node not available: ${e.message}`);
    return;
  }
  const { default: ort } = await import('onnxruntime-node');
  for (const model of [sample, join(shared, 'models', 'minibert.op14.nofold.onnx')].filter(existsSync)) {
    const session = await ort.InferenceSession.create(model);
    try {
      const expected = oracle.makeInputs(session, { seed: 3 });
      const { feeds } = pageInputs(ort.Tensor, session.inputMetadata, { seed: 3 });
      assert.deepEqual(Object.keys(feeds), Object.keys(expected));
      for (const [name, tensor] of Object.entries(feeds)) {
        assert.deepEqual(tensor.dims, expected[name].dims, `${name} dims`);
        assert.deepEqual(tensor.data, expected[name].data, `${name} data`);
      }
    } finally {
      await session.release();
    }
  }
});

describe('web page: verify, URL options, keyboard (Chromium)', { skip: skipReason }, () => {
  let server;
  let browser;
  const pageErrors = [];
  const foreignRequests = [];

  before(async () => {
    await mkdir(join(artifacts, 'verify'), { recursive: true });
    server = await serveStatic({ root: webDir });
    browser = await launchChromium(playwright);
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  // Opens the page (with an optional query) and records the paths it fetches from the server.
  async function openPage(t, query = '') {
    const context = await browser.newContext({
      acceptDownloads: true,
      viewport: { width: 1200, height: 900 },
    });
    const page = await context.newPage();
    const fetched = [];
    page.on('pageerror', (e) => pageErrors.push(`${t.name}: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') t.diagnostic(`console error: ${m.text()}`);
    });
    page.on('request', (r) => {
      const u = r.url();
      if (u.startsWith(server.url)) fetched.push(new URL(u).pathname.slice(1) || 'index.html');
      else if (!/^(blob|data):/.test(u)) foreignRequests.push(u);
    });
    t.after(() => context.close());
    await page.goto(server.url + query);
    await waitState(page, ['ready'], 60_000);
    return { page, fetched };
  }

  async function waitState(page, states, timeout = 120_000) {
    await page.waitForFunction((s) => s.includes(document.body.dataset.state), states, { timeout });
    return page.evaluate(() => document.body.dataset.state);
  }

  async function waitVerify(page) {
    await page.waitForFunction(() => ['pass', 'fail', 'error'].includes(document.body.dataset.verify), null, {
      timeout: 180_000,
    });
    return page.evaluate(() => document.body.dataset.verify);
  }

  async function upload(page, file) {
    const loads = () => Number(document.body.dataset.loads ?? 0);
    const n = await page.evaluate(loads);
    await page.setInputFiles('#file', file);
    await page.waitForFunction(`(${loads})() > ${n}`);
    return waitState(page, ['ready', 'error']);
  }

  async function optimize(page) {
    await page.click('#run');
    assert.equal(
      await waitState(page, ['done', 'error']),
      'done',
      await page.locator('#error').textContent(),
    );
  }

  // Verify passed: every row of the table says pass; returns the verdict line.
  async function assertPass(page) {
    const state = await waitVerify(page);
    const verdict = await page.locator('#verify-verdict').textContent();
    assert.equal(state, 'pass', `${verdict} ${await page.locator('#verify-error').textContent()}`);
    assert.match(verdict, /^PASS/);
    const results = await page.locator('#verify-table tbody td:last-child').allTextContents();
    assert.ok(results.length > 0 && results.every((r) => r.startsWith('pass')), results.join(', '));
    return verdict;
  }

  // Presses Tab until `selector` has focus; returns the ids focused on the way.
  async function tabTo(page, selector, max = 120) {
    const seen = [];
    for (let i = 0; i < max; i++) {
      await page.keyboard.press('Tab');
      const id = await page.evaluate(() => document.activeElement?.id || document.activeElement?.tagName);
      seen.push(id);
      if (await page.evaluate((s) => document.activeElement?.matches(s), selector)) return seen;
    }
    assert.fail(`${selector} not reached with Tab; focused: ${seen.join(' ')}`);
  }

  test('first load under 1 MB gzipped without the runtime; keyboard only: sample, optimize, verify', async (t) => {
    const { page, fetched } = await openPage(t);
    const firstLoad = [...new Set(fetched)];
    for (const f of VERIFY_FILES) assert.ok(!firstLoad.includes(f), `${f} fetched before Verify`);
    assert.ok(!firstLoad.includes('graph-layout-worker.js'), 'elk fetched before the graph view was opened');
    const firstGz = firstLoad.reduce((a, f) => a + gz(join(webDir, f)), 0);
    console.log(`first load: ${firstLoad.join(', ')}: ${kib(firstGz)} gzipped`);
    assert.ok(firstGz < FIRST_LOAD_LIMIT, `first load ${firstGz} B gzipped`);

    // Verify is disabled until there is an optimized model, and the page says why.
    assert.equal(await page.locator('#verify').isDisabled(), true);
    assert.match(await page.locator('#verify-why').textContent(), /Load a model first/);

    // Keyboard only: Tab to a control, Enter. The order follows the page: model, options, run, verify.
    const toSample = await tabTo(page, '#sample');
    assert.ok(toSample.length <= 2, `sample button near the top, after ${toSample.join(' ')}`);
    await page.keyboard.press('Enter');
    assert.equal(await waitState(page, ['ready', 'error']), 'ready');
    assert.match(await page.locator('#verify-why').textContent(), /Optimize the model first/);
    const toRun = await tabTo(page, '#run');
    assert.ok(toRun.includes('pass-freeze') && toRun.includes('size-budget'), `order: ${toRun.join(' ')}`);
    await page.keyboard.press('Enter');
    assert.equal(await waitState(page, ['done', 'error']), 'done');
    const before = fetched.length;
    const toVerify = await tabTo(page, '#verify');
    assert.ok(
      toVerify.indexOf('verify-seed') < toVerify.indexOf('verify-rtol'),
      `order: ${toVerify.join(' ')}`,
    );
    await page.keyboard.press('Enter');
    await assertPass(page);

    const onVerify = [...new Set(fetched.slice(before))];
    assert.deepEqual([...onVerify].sort(), [...VERIFY_FILES].sort());
    const raw = onVerify.reduce((a, f) => a + readFileSync(join(webDir, f)).length, 0);
    const gzipped = onVerify.reduce((a, f) => a + gz(join(webDir, f)), 0);
    console.log(`fetched on Verify: ${onVerify.join(', ')}: ${kib(raw)}, ${kib(gzipped)} gzipped`);

    // Accessibility basics: every control named, live regions for progress and errors, table headers.
    const unlabelled = await page.evaluate(() =>
      [...document.querySelectorAll('input, select, button, textarea')]
        .filter(
          (e) =>
            !(
              e.labels?.length ||
              e.getAttribute('aria-label') ||
              (e.tagName === 'BUTTON' && e.textContent.trim())
            ),
        )
        .map((e) => e.id || e.outerHTML.slice(0, 60)),
    );
    assert.deepEqual(unlabelled, []);
    for (const sel of ['#status', '#verify-status'])
      assert.equal(await page.getAttribute(sel, 'role'), 'status');
    for (const sel of ['#error', '#verify-error'])
      assert.equal(await page.getAttribute(sel, 'role'), 'alert');
    assert.match(
      await page.locator('#verify-table caption').textContent(),
      /conv1d_m5\.onnx \(original\) vs conv1d_m5\.opt\.onnx/,
    );
    assert.equal(await page.locator('#verify-table thead th[scope=col]').count(), 7);
    assert.equal(await page.locator('#verify-table tbody th[scope=row]').count(), 1);
  });

  test('verify passes on the shared models (squeezenet1_1, mobilenet_v2, minibert); screenshot', async (t) => {
    const present = sharedModels.filter((m) => existsSync(m));
    if (!present.length) {
      if (process.env.CI) assert.fail(`no shared models under ${shared}`);
      t.skip(`shared models not found under ${shared} (set ONNXFOLD_SHARED)`);
      return;
    }
    const { page } = await openPage(t);
    for (const model of present) {
      assert.equal(await upload(page, model), 'ready', await page.locator('#error').textContent());
      await optimize(page);
      const started = performance.now();
      await page.click('#verify');
      const verdict = await assertPass(page);
      console.log(
        `${model.split('/').pop()}: ${verdict} (${((performance.now() - started) / 1000).toFixed(2)} s)`,
      );
    }
    const shot = join(artifacts, 'verify-pass.png');
    await page.locator('#verify-section').screenshot({ path: shot });
    assert.ok((await stat(shot)).size > 5_000);
  });

  test('external data: an optimized model with a .data file verifies; Verify waits for a new run', async (t) => {
    const { page } = await openPage(t);
    await page.click('#sample');
    assert.equal(await waitState(page, ['ready', 'error']), 'ready');
    await page.fill('#external-threshold', '1024');
    await optimize(page);
    assert.equal(await page.locator('#download-ext-0').getAttribute('download'), 'conv1d_m5.opt.onnx.data');
    await page.click('#verify');
    await assertPass(page);
    // Read in the same task as the click: a small model's run may be over before a second call.
    const disabledOnRun = await page.evaluate(() => {
      document.getElementById('run').click();
      return document.getElementById('verify').disabled;
    });
    assert.equal(disabledOnRun, true);
    assert.equal(await waitState(page, ['done', 'error']), 'done');
    assert.equal(await page.locator('#verify').isEnabled(), true);
  });

  test('compare with: an altered copy of the optimized model shows FAIL; the unaltered one passes', async (t) => {
    if (!havePythonOnnx()) {
      if (process.env.CI) assert.fail('python3-onnx / python3-numpy missing');
      t.skip('python3-onnx / python3-numpy missing (scripts/bootstrap)');
      return;
    }
    const { page } = await openPage(t);
    await page.click('#sample');
    assert.equal(await waitState(page, ['ready', 'error']), 'ready');
    await optimize(page);
    const dir = join(artifacts, 'verify');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
    const optimized = join(dir, 'conv1d_m5.opt.onnx');
    await download.saveAs(optimized);
    const altered = join(dir, 'conv1d_m5.altered.onnx');
    execFileSync(python, ['-c', ALTER, optimized, altered]);

    await page.setInputFiles('#verify-other', altered);
    assert.equal(await waitVerify(page), 'fail', await page.locator('#verify-error').textContent());
    assert.match(
      await page.locator('#verify-verdict').textContent(),
      /^FAIL: conv1d_m5\.onnx vs conv1d_m5\.altered\.onnx/,
    );
    const row = await page.locator('#verify-table tbody tr').first().allTextContents();
    assert.match(row.join(' '), /FAIL/);
    const maxAbs = Number(await page.locator('#verify-table tbody tr td').nth(2).textContent());
    assert.ok(maxAbs >= 0.99, `max abs diff ${maxAbs}`);
    const shot = join(artifacts, 'verify-fail.png');
    await page.locator('#verify-section').screenshot({ path: shot });
    assert.ok((await stat(shot)).size > 5_000);

    await page.setInputFiles('#verify-other', optimized);
    await assertPass(page);
  });

  test('options in the URL: read on load, written back on change, bad ones ignored with a notice', async (t) => {
    const { page } = await openPage(
      t,
      '?passes=fold-constants,dce&budget=0&growth=2&preserve=lora_*,scale&quant=integer' +
        '&float16=1&external=4096&seed=7&rtol=0.01&atol=0.001',
    );
    const checked = await page
      .locator('#passes input[name=pass]:checked')
      .evaluateAll((cs) => cs.map((c) => c.value));
    assert.deepEqual(checked, ['fold-constants', 'dce']);
    assert.equal(await page.inputValue('#size-budget'), '0');
    assert.equal(await page.inputValue('#growth-budget'), '2');
    assert.equal(await page.inputValue('#preserve'), 'lora_*,scale');
    assert.equal(await page.inputValue('#quant'), 'integer');
    assert.equal(await page.isChecked('#float16'), true);
    assert.equal(await page.inputValue('#external-threshold'), '4096');
    assert.equal(await page.inputValue('#verify-seed'), '7');
    assert.equal(await page.inputValue('#verify-rtol'), '0.01');
    assert.equal(await page.inputValue('#verify-atol'), '0.001');
    assert.equal(await page.locator('#url-notice').isHidden(), true);
    // location, not page.url(): replaceState is not a navigation playwright waits for.
    const query = (p) => p.evaluate(() => Object.fromEntries(new URLSearchParams(location.search)));
    assert.equal((await query(page)).budget, '0');

    await page.fill('#size-budget', '99');
    assert.equal((await query(page)).budget, '99');
    await page.uncheck('#float16');
    assert.equal((await query(page)).float16, undefined, 'a default value leaves the URL');
    await page.click('#passes-default');
    assert.equal((await query(page)).passes, undefined);
    await page.check('#pass-convert-float16');
    assert.match((await query(page)).passes, /convert-float16/);
    await page.selectOption('#quant', '');
    assert.equal((await query(page)).quant, undefined);
    assert.equal((await query(page)).seed, '7');

    // The options reach the optimizer: budget 0 and two passes.
    const { page: p2 } = await openPage(t, '?passes=fold-constants,dce&budget=0');
    await p2.click('#sample');
    assert.equal(await waitState(p2, ['ready', 'error']), 'ready');
    await optimize(p2);
    const ran = new Set(await p2.locator('#passes-table tbody tr:not(.total) th').allTextContents());
    assert.deepEqual([...ran].sort(), ['dce', 'fold-constants']);

    // Unknown keys and invalid values: ignored, listed, and dropped from the URL.
    const { page: p3 } = await openPage(t, '?quant=bogus&zzz=1&budget=-3&passes=dce,nope&rtol=abc');
    const notice = await p3.locator('#url-notice').textContent();
    assert.ok(await p3.locator('#url-notice').isVisible());
    for (const s of ['quant=bogus', 'zzz', 'budget=-3', 'nope', 'rtol=abc'])
      assert.ok(notice.includes(s), notice);
    assert.equal(await p3.inputValue('#quant'), '');
    assert.equal(await p3.inputValue('#size-budget'), '1024');
    assert.equal(await p3.inputValue('#verify-rtol'), '0.001');
    const p3checked = await p3
      .locator('#passes input[name=pass]:checked')
      .evaluateAll((cs) => cs.map((c) => c.value));
    assert.deepEqual(p3checked, ['dce'], 'the known passes of a list apply');
    assert.deepEqual(await query(p3), { passes: 'dce' });
  });

  test('no uncaught page errors, no request leaves localhost', () => {
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(foreignRequests, []);
  });
});

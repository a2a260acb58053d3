// End-to-end test of the bundled web page (build/web, made by scripts/build-web): playwright-core
// drives Debian's Chromium against the page on a localhost static server started here. It uploads
// sample models, runs the default pipeline, downloads the result and checks it with the ONNX
// Runtime equivalence oracle; cancels a run; shows the error of a corrupt file; saves a screenshot
// to build/test-artifacts/web-page.png and prints the page's end-to-end time per model.
//
//   scripts/build-web && node --test tests/browser/
//
// Without Chromium or the built page the tests skip, except under CI (process.env.CI), where they
// fail. ONNXFOLD_CHROMIUM overrides /usr/bin/chromium; ONNXFOLD_SHARED locates the shared models.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { assertEquivalent } from '../node/oracle.mjs';
import { serveStatic } from '../../web/serve.mjs';
import { artifacts, launchChromium, prerequisites, repoRoot, shared, webDir } from './harness.mjs';
import { PAGE_DECIDED_OPTIONS } from '../../web/src/option-fields.js';

const sample = join(repoRoot, 'examples', 'conv1d_m5.onnx');
const mobilenet = join(shared, 'models', 'mobilenet_v2.op13.nofold.onnx');

const { playwright, skipReason } = await prerequisites('browser', { files: ['conv1d_m5.onnx'] });

// The package itself, for comparing the page's output with node's (same wasm, same options).
let pkg = null;
try {
  pkg = await import('onnxfold');
} catch {
  pkg = null;
}

describe('web page (Chromium)', { skip: skipReason }, () => {
  let server;
  let browser;
  const pageErrors = [];
  const foreignRequests = [];

  before(async () => {
    await mkdir(join(artifacts, 'options'), { recursive: true });
    server = await serveStatic({ root: webDir });
    browser = await launchChromium(playwright);
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  async function openPage(t) {
    const context = await browser.newContext({
      acceptDownloads: true,
      viewport: { width: 1200, height: 900 },
    });
    const page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(`${t.name}: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') t.diagnostic(`console error: ${m.text()}`);
    });
    // Offline: every request the page makes must go to the local server (or blob:/data:).
    page.on('request', (r) => {
      const u = r.url();
      if (!u.startsWith(server.url) && !/^(blob|data):/.test(u)) foreignRequests.push(u);
    });
    t.after(() => context.close());
    await page.goto(server.url);
    await waitState(page, ['ready'], 60_000);
    return page;
  }

  async function waitState(page, states, timeout = 120_000) {
    await page.waitForFunction((s) => s.includes(document.body.dataset.state), states, { timeout });
    return page.evaluate(() => document.body.dataset.state);
  }

  // Picks files with the file input and waits until the page has read the model (or failed to).
  async function upload(page, files, name) {
    const loads = () => Number(document.body.dataset.loads ?? 0);
    const before = await page.evaluate(loads);
    await page.setInputFiles('#file', files);
    await page.waitForFunction(`(${loads})() > ${before}`);
    assert.equal(await page.evaluate(() => document.body.dataset.model), name);
    return waitState(page, ['ready', 'error']);
  }

  async function opsTotals(page) {
    const cells = await page.locator('#ops-table tfoot td').allTextContents();
    return { before: Number(cells[0]), after: Number(cells[1]) };
  }

  async function downloadResult(page, name, { selector = '#download', dir = artifacts } = {}) {
    const link = page.locator(selector);
    assert.equal(await link.getAttribute('download'), name);
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    assert.equal(download.suggestedFilename(), name);
    const out = join(dir, name);
    await download.saveAs(out);
    return out;
  }

  // The page shows the optimized model's module tree when the wasm build has moduleTree.
  async function checkModuleTree(page, optimized) {
    let tree = null;
    let error = null;
    try {
      tree = await pkg.moduleTree(optimized);
    } catch (e) {
      error = e.message;
    }
    assert.equal(error, null, `moduleTree failed: ${error}`);
    const box = page.locator('#module-tree');
    assert.equal(await box.isHidden(), false);
    const text = await box.locator('.tree').textContent();
    assert.match(text, new RegExp(`${tree.nodes} nodes?`));
    for (const c of tree.children ?? []) assert.ok(text.includes(c.name), `child module ${c.name} listed`);
  }

  // Upload through the file input, run the default pipeline, download, check with the oracle.
  async function endToEnd(t, page, modelPath) {
    const name = modelPath.split('/').pop();
    const optName = name.replace(/\.onnx$/, '.opt.onnx');
    const started = performance.now();
    assert.equal(await upload(page, modelPath, name), 'ready', await page.locator('#error').textContent());
    await page.click('#run');
    const state = await waitState(page, ['done', 'error']);
    assert.equal(state, 'done', `run failed: ${await page.locator('#error').textContent()}`);
    const runStatus = await page.locator('#status').textContent();
    const out = await downloadResult(page, optName);
    const millis = performance.now() - started;

    const totals = await opsTotals(page);
    assert.ok(totals.after < totals.before, `nodes: ${totals.before} before, ${totals.after} after`);
    const rows = await page.locator('#ops-table tbody tr').count();
    assert.ok(rows > 0);
    assert.equal(
      await page.locator('#ops-chart svg rect').count(),
      2 * rows,
      'one before and one after bar per op',
    );
    assert.ok((await page.locator('#passes-table tbody tr').count()) > 1, 'time per pass listed');
    assert.match(await page.locator('#not-folded summary').textContent(), /Why not folded \(\d+ nodes?\)/);
    // Each listed node's op, from the report's one spelling (not_folded[].op).
    const ops = await page.locator('#not-folded tbody tr td:nth-child(2)').allTextContents();
    assert.ok(
      ops.every((op) => /^[\w:.]+$/.test(op)),
      `not-folded ops: ${ops.slice(0, 5).join(', ')}`,
    );

    const { size } = await stat(out);
    assert.match(
      await page.locator('#download').textContent(),
      new RegExp(`Download ${optName.replace('.', '\\.')}`),
    );
    await assertEquivalent(modelPath, out);
    if (pkg) {
      // The page must give exactly what the package gives in node for the default options.
      const viaNode = await pkg.optimize(await readFile(modelPath), { sizeBudget: 1024 });
      assert.ok(Buffer.from(viaNode.model).equals(await readFile(out)), 'page output == node package output');
    }
    const line =
      `${name}: page end to end (upload -> download) ${(millis / 1000).toFixed(2)} s; ` +
      `nodes ${totals.before} -> ${totals.after}; ${size} bytes downloaded; page status: ${runStatus}`;
    console.log(line);
    return { out, millis };
  }

  test('sample model: loads with one click, optimizes, downloads <name>.opt.onnx', async (t) => {
    const page = await openPage(t);
    assert.ok((await page.locator('#passes input[name=pass]:checked').count()) > 0, 'default passes checked');
    assert.match(await page.locator('#version').textContent(), /version \S+/);
    await page.click('#sample');
    assert.equal(await waitState(page, ['ready', 'error']), 'ready');
    await page.click('#run');
    assert.equal(
      await waitState(page, ['done', 'error']),
      'done',
      await page.locator('#error').textContent(),
    );
    const totals = await opsTotals(page);
    assert.ok(totals.after < totals.before, `nodes: ${totals.before} before, ${totals.after} after`);
    const out = await downloadResult(page, 'conv1d_m5.opt.onnx');
    await assertEquivalent(sample, out);
  });

  test('upload, default pipeline, download, oracle (conv1d_m5, mobilenet_v2 when present); screenshot', async (t) => {
    const page = await openPage(t);
    await endToEnd(t, page, sample);
    if (existsSync(mobilenet)) await endToEnd(t, page, mobilenet);
    else t.diagnostic(`${mobilenet} not found: mobilenet_v2 not timed (set ONNXFOLD_SHARED)`);
    await page.locator('#not-folded summary').click();
    const shot = join(artifacts, 'web-page.png');
    await page.screenshot({ path: shot, fullPage: true });
    assert.ok((await stat(shot)).size > 10_000);
    console.log(`screenshot: ${shot}`);
  });

  test('cancel stops a run; the next run works in a fresh worker', async (t) => {
    const page = await openPage(t);
    const model = existsSync(mobilenet) ? mobilenet : sample;
    assert.equal(await upload(page, model, model.split('/').pop()), 'ready');
    // Both clicks in one task: the run has started (message posted) when cancel terminates it.
    await page.evaluate(() => {
      document.getElementById('run').click();
      document.getElementById('cancel').click();
    });
    assert.equal(await waitState(page, ['cancelled', 'done', 'error']), 'cancelled');
    assert.match(await page.locator('#status').textContent(), /Cancelled/);
    assert.equal(await page.locator('#run').isEnabled(), true);
    assert.equal(await page.locator('#cancel').isEnabled(), false);
    assert.equal(await page.locator('#error').isHidden(), true);
    await page.click('#run');
    assert.equal(
      await waitState(page, ['done', 'error']),
      'done',
      await page.locator('#error').textContent(),
    );
    const totals = await opsTotals(page);
    assert.ok(totals.after < totals.before);
  });

  test("a corrupt file shows the optimizer's error message", async (t) => {
    const page = await openPage(t);
    // A valid start (ir_version) followed by a field whose length runs past the end.
    const corrupt = Buffer.from([0x08, 0x08, 0x3a, 0xff, 0x7f, 0x0a, 0x01]);
    const file = { name: 'corrupt.onnx', mimeType: 'application/octet-stream', buffer: corrupt };
    assert.equal(await upload(page, file, 'corrupt.onnx'), 'error');
    const shown = (await page.locator('#error .error-message').textContent()).trim();
    assert.ok(await page.locator('#error').isVisible());
    assert.ok(shown.length > 10 && !/^\d+$/.test(shown), `readable message, got '${shown}'`);
    t.diagnostic(`corrupt.onnx: ${shown}`);
    if (pkg) {
      const expected = await pkg.inspect(corrupt).then(
        () => null,
        (e) => e.message,
      );
      assert.equal(shown, expected);
    }
    // Running anyway reports the same kind of error, and the page stays usable.
    await page.click('#run');
    assert.equal(await waitState(page, ['done', 'error']), 'error');
    assert.ok((await page.locator('#error .error-message').textContent()).trim().length > 10);
    await page.click('#sample');
    assert.equal(await waitState(page, ['ready', 'error']), 'ready');
    assert.equal(await page.locator('#error').isHidden(), true);
  });

  test('external data: written past a threshold, read back from uploaded files', async (t) => {
    const page = await openPage(t);
    const dir1 = join(artifacts, 'external-1');
    const dir2 = join(artifacts, 'external-2');
    await mkdir(dir1, { recursive: true });
    await mkdir(dir2, { recursive: true });

    // 1. The sample with weights of 1 KiB and more written to conv1d_m5.opt.onnx.data.
    await page.click('#sample');
    assert.equal(await waitState(page, ['ready', 'error']), 'ready');
    await page.fill('#external-threshold', '1024');
    await page.click('#run');
    assert.equal(
      await waitState(page, ['done', 'error']),
      'done',
      await page.locator('#error').textContent(),
    );
    const model1 = await downloadResult(page, 'conv1d_m5.opt.onnx', { dir: dir1 });
    const data1 = await downloadResult(page, 'conv1d_m5.opt.onnx.data', {
      selector: '#download-ext-0',
      dir: dir1,
    });
    assert.ok((await stat(data1)).size > (await stat(model1)).size, 'the weights went to the .data file');
    await assertEquivalent(sample, model1);

    // 2. That model alone cannot be read: the page names the missing file.
    assert.equal(await upload(page, model1, 'conv1d_m5.opt.onnx'), 'error');
    assert.match(await page.locator('#error').textContent(), /conv1d_m5\.opt\.onnx\.data/);

    // Adding the data file afterwards makes it readable.
    assert.equal(
      await upload(page, data1, 'conv1d_m5.opt.onnx'),
      'ready',
      await page.locator('#error').textContent(),
    );
    assert.match(
      await page.locator('#model-info').textContent(),
      /external data: conv1d_m5\.opt\.onnx\.data/,
    );

    // 3. Model and data file picked together: optimized again, the output keeps its data external.
    assert.equal(
      await upload(page, [model1, data1], 'conv1d_m5.opt.onnx'),
      'ready',
      await page.locator('#error').textContent(),
    );
    await page.fill('#external-threshold', '');
    await page.click('#run');
    assert.equal(
      await waitState(page, ['done', 'error']),
      'done',
      await page.locator('#error').textContent(),
    );
    const model2 = await downloadResult(page, 'conv1d_m5.opt.opt.onnx', { dir: dir2 });
    await downloadResult(page, 'conv1d_m5.opt.opt.onnx.data', { selector: '#download-ext-0', dir: dir2 });
    await assertEquivalent(sample, model2);
  });

  test('chosen passes and options reach the optimizer', async (t) => {
    const page = await openPage(t);
    await page.click('#sample');
    assert.equal(await waitState(page, ['ready', 'error']), 'ready');

    // No pass at all is refused in the page (the package would run its default pipeline).
    await page.click('#passes-none');
    await page.click('#run');
    assert.match(await page.locator('#error').textContent(), /Choose at least one pass/);

    await page.check('#pass-fold-constants');
    await page.check('#pass-dce');
    await page.fill('#size-budget', '0');
    await page.click('#run');
    assert.equal(
      await waitState(page, ['done', 'error']),
      'done',
      await page.locator('#error').textContent(),
    );
    const ran = new Set(await page.locator('#passes-table tbody tr:not(.total) th').allTextContents());
    assert.deepEqual([...ran].sort(), ['dce', 'fold-constants']);
    const out = await downloadResult(page, 'conv1d_m5.opt.onnx', { dir: join(artifacts, 'options') });
    await assertEquivalent(sample, out);
    if (pkg) {
      const viaNode = await pkg.optimize(await readFile(sample), {
        passes: ['fold-constants', 'dce'],
        sizeBudget: 0,
      });
      assert.ok(Buffer.from(viaNode.model).equals(await readFile(out)), 'page output == node package output');
    }

    // A quantization mode goes through too: either it runs, or the page shows the package's error.
    await page.click('#passes-default');
    await page.fill('#size-budget', '1024');
    await page.selectOption('#quant', 'integer');
    await page.click('#run');
    if ((await waitState(page, ['done', 'error'])) === 'error') {
      const shown = await page.locator('#error .error-message').textContent();
      assert.match(shown, /quant/);
      if (pkg) {
        const expected = await pkg.optimize(await readFile(sample), { quant: 'integer' }).then(
          () => null,
          (e) => e.message,
        );
        assert.equal(shown, expected);
      }
    }

    // Weight-only quantization: int8 Conv weights as DequantizeLinear, the package's bytes.
    await page.selectOption('#quant', '');
    await page.selectOption('#quantize', 'int8');
    await page.click('#run');
    assert.equal(
      await waitState(page, ['done', 'error']),
      'done',
      await page.locator('#error').textContent(),
    );
    const q = await downloadResult(page, 'conv1d_m5.opt.onnx', { dir: join(artifacts, 'options') });
    if (pkg) {
      const viaNode = await pkg.optimize(await readFile(sample), { quantize: 'int8', quantFormat: 'qdq' });
      assert.ok(
        Buffer.from(viaNode.model).equals(await readFile(q)),
        'quantized: page output == node package output',
      );
      assert.ok(
        viaNode.report.passes.some((p) => p.pass === 'quantize-weights' && p.changed),
        'weights were quantized',
      );
    }
  });

  test('every schema option is a control or decided by the page; a rendered one goes from the URL to optimize()', async (t) => {
    if (!pkg) return t.skip('the onnxfold package is not importable');
    const schema = await pkg.optionSchema();
    const page = await openPage(t);
    const controls = new Set(
      await page.locator('#options [data-option]').evaluateAll((els) => els.map((e) => e.dataset.option)),
    );
    for (const o of schema) {
      const decided = Object.hasOwn(PAGE_DECIDED_OPTIONS, o.name);
      assert.ok(
        controls.has(o.name) !== decided,
        `${o.name}: ${decided ? 'decided by the page but also a control' : 'neither a control nor in PAGE_DECIDED_OPTIONS'}`,
      );
    }
    for (const name of Object.keys(PAGE_DECIDED_OPTIONS))
      assert.ok(
        schema.some((o) => o.name === name),
        `${name} is an option`,
      );
    // Rendered by type: an integer's default as placeholder, a boolean checked per default.
    assert.equal(
      await page.getAttribute('#opt-maxIterations', 'placeholder'),
      String(schema.find((o) => o.name === 'maxIterations').default),
    );
    assert.equal(
      await page.isChecked('#opt-quantSymmetric'),
      schema.find((o) => o.name === 'quantSymmetric').default,
    );

    // From the URL to the optimize call, and back into the URL as it changes.
    await page.goto(`${server.url}?maxIterations=3&quantBlockSize=64&quantSymmetric=0`);
    await waitState(page, ['ready'], 60_000);
    assert.equal(await page.inputValue('#opt-maxIterations'), '3');
    await page.click('#sample');
    assert.equal(await waitState(page, ['ready', 'error']), 'ready');
    await page.click('#run');
    assert.equal(
      await waitState(page, ['done', 'error']),
      'done',
      await page.locator('#error').textContent(),
    );
    const sent = JSON.parse(await page.evaluate(() => document.body.dataset.runOptions));
    assert.equal(sent.maxIterations, 3);
    assert.equal(sent.quantBlockSize, 64);
    assert.equal(sent.quantSymmetric, false);
    assert.ok(!('foldDequantizeWeights' in sent), 'an untouched field leaves the default');
    await page.click('#all-options summary');
    await page.fill('#opt-maxIterations', '');
    await page.fill('#opt-memoryLimit', '1000000000');
    await page.check('#opt-verify');
    assert.match(page.url(), /[?&]memoryLimit=1000000000(&|$)/);
    assert.match(page.url(), /[?&]verify=1(&|$)/);
    assert.doesNotMatch(page.url(), /maxIterations/);
  });

  test('module tree of the optimized model, as the package gives it', async (t) => {
    const page = await openPage(t);
    await page.click('#sample');
    assert.equal(await waitState(page, ['ready', 'error']), 'ready');
    await page.click('#run');
    assert.equal(
      await waitState(page, ['done', 'error']),
      'done',
      await page.locator('#error').textContent(),
    );
    const out = await downloadResult(page, 'conv1d_m5.opt.onnx', { dir: join(artifacts, 'options') });
    if (!pkg) {
      t.skip('the onnxfold package does not load in node');
      return;
    }
    await checkModuleTree(page, await readFile(out));
  });

  test('split constants: prep and main models, as the package gives them', async (t) => {
    const page = await openPage(t);
    await page.click('#sample');
    assert.equal(await waitState(page, ['ready', 'error']), 'ready');
    await page.locator('#split-box summary').click();
    await page.click('#split');
    const state = await waitState(page, ['done', 'error']);
    let expected = null;
    let expectedError = null;
    if (pkg) {
      try {
        expected = await pkg.splitConstants(await readFile(sample));
      } catch (e) {
        expectedError = e.message;
      }
    }
    if (state === 'error') {
      const shown = await page.locator('#error .error-message').textContent();
      assert.fail(`split constants failed in the page: ${shown} (package: ${expectedError})`);
    }
    assert.equal(expectedError, null);
    const prep = await downloadResult(page, 'conv1d_m5.prep.onnx', { selector: '#download-prep' });
    const main = await downloadResult(page, 'conv1d_m5.main.onnx', { selector: '#download-main' });
    assert.match(await page.locator('#split-result').textContent(), /prep \d+ \+ main \d+/);
    if (expected) {
      assert.ok(Buffer.from(expected.prep).equals(await readFile(prep)), 'prep == package output');
      assert.ok(Buffer.from(expected.main).equals(await readFile(main)), 'main == package output');
    }
    // main runs standalone (its inputs from prep carry the computed values as initializers).
    await assertEquivalent(sample, main);
  });

  test('variants: transformers.js file names, byte-identical to the package, fp32 equivalent', async (t) => {
    const page = await openPage(t);
    await page.click('#sample');
    assert.equal(await waitState(page, ['ready', 'error']), 'ready');
    await page.locator('#variants-box summary').click();
    const dtypes = await page
      .locator('#variant-dtypes input[name=variant]')
      .evaluateAll((cs) => cs.map((c) => c.value));
    assert.deepEqual(
      dtypes.slice(0, 2),
      ['fp32', 'fp16'],
      "the choices come from the package's variant table",
    );
    await page.click('#variants');
    assert.equal(
      await waitState(page, ['done', 'error']),
      'done',
      await page.locator('#error').textContent(),
    );
    assert.match(await page.locator('#variants-table').textContent(), /fp16\s*model_fp16\.onnx/);
    // Each variant's time, the sum of its report's timing_ms.
    const times = await page.locator('#variants-table tbody tr td:nth-child(5)').allTextContents();
    assert.ok(
      times.length > 0 && times.every((ms) => /^[\d.]+ (ms|s)$/.test(ms)),
      `variant times: ${times.join(', ')}`,
    );
    // Check accuracy: each variant against the loaded model in the verify worker (onnxruntime-web).
    await page.click('#variants-accuracy');
    await page.waitForFunction(
      () => ['done', 'error', 'cancelled'].includes(document.body.dataset.variantsAccuracy),
      null,
      { timeout: 120_000 },
    );
    assert.equal(
      await page.evaluate(() => document.body.dataset.variantsAccuracy),
      'done',
      await page.locator('#variants-accuracy-status').textContent(),
    );
    const accuracy = await page.locator('#variants-table tbody tr[data-dtype]').evaluateAll((trs) =>
      trs.map((tr) => ({
        dtype: tr.dataset.dtype,
        cosine: Number(tr.dataset.cosine),
        relRange: Number(tr.dataset.relRange),
        shown: [...tr.children].slice(-3).map((td) => td.textContent),
      })),
    );
    const row = Object.fromEntries(accuracy.map((a) => [a.dtype, a]));
    t.diagnostic(
      `accuracy in the page: ${accuracy.map((a) => `${a.dtype} ${a.shown.join(' / ')}`).join(', ')}`,
    );
    assert.ok(row.fp32.cosine >= 0.999999 && row.fp32.relRange <= 1e-4, `fp32: ${JSON.stringify(row.fp32)}`);
    assert.match(row.fp32.shown[0], /^(1\.000000|0\.99999\d)$/, 'the fp32 row shows a cosine of ~1');
    // The lower-precision variants are measured, not copied from fp32: not exact, but close.
    for (const dtype of ['fp16', 'int8']) {
      assert.ok(
        row[dtype].relRange > 0 && row[dtype].cosine >= 0.99 && row[dtype].cosine < 1,
        `${dtype}: ${JSON.stringify(row[dtype])}`,
      );
    }
    await page.locator('#variants-box').screenshot({ path: join(artifacts, 'variants-accuracy.png') });
    const dir = join(artifacts, 'variants');
    await mkdir(dir, { recursive: true });
    const fp32 = await downloadResult(page, 'model.onnx', { selector: '#download-variant-0', dir });
    const fp16 = await downloadResult(page, 'model_fp16.onnx', { selector: '#download-variant-1', dir });
    if (pkg) {
      const expected = await pkg.variants(await readFile(sample), { dtypes });
      assert.ok(
        Buffer.from(expected.files['model.onnx']).equals(await readFile(fp32)),
        'fp32 == package output',
      );
      assert.ok(
        Buffer.from(expected.files['model_fp16.onnx']).equals(await readFile(fp16)),
        'fp16 == package output',
      );
    }
    await assertEquivalent(sample, fp32);
  });

  // An LLM-shaped decoder (152 MB of weights in llm.onnx.data) picked with its data file: the
  // Worker reads the File range by range, so the wasm heap stays far below the weights' size;
  // the result downloads as the model and its own data file, equivalent, and byte-identical to
  // the node package's optimizeFile.
  test('a model with external data: heap far below its weights, downloads equivalent', async (t) => {
    const makeLlm = join(shared, 'tools', 'make_llm.py');
    if (!existsSync(makeLlm)) {
      if (process.env.CI) assert.fail(`${makeLlm} missing`);
      t.skip(`${makeLlm} missing`);
      return;
    }
    const dir = join(artifacts, 'llm');
    await mkdir(join(dir, 'out'), { recursive: true });
    const model = join(dir, 'llm.onnx');
    execFileSync(
      '/usr/bin/python3',
      [
        makeLlm,
        '--layers',
        '4',
        '--hidden',
        '768',
        '--heads',
        '12',
        '--kv-heads',
        '6',
        '--ffn',
        '2048',
        '--vocab',
        '8000',
        '--out',
        model,
      ],
      { stdio: 'ignore' },
    );
    const weights = (await stat(`${model}.data`)).size;
    const page = await openPage(t);
    assert.equal(await upload(page, [model, `${model}.data`], 'llm.onnx'), 'ready');
    assert.match(await page.locator('#model-info').textContent(), /external data: llm\.onnx\.data/);
    const started = Date.now();
    await page.click('#run');
    assert.equal(
      await waitState(page, ['done', 'error']),
      'done',
      await page.locator('#error').textContent(),
    );
    t.diagnostic(`page: ${weights} B of weights optimized in ${Date.now() - started} ms`);
    const heap = Number(await page.evaluate(() => document.body.dataset.peakHeap));
    assert.ok(heap > 0 && heap < weights / 3, `peak heap ${heap} B for ${weights} B of weights`);
    const out = await downloadResult(page, 'llm.opt.onnx', { dir: join(dir, 'out') });
    await downloadResult(page, 'llm.opt.onnx.data', { selector: '#download-ext-0', dir: join(dir, 'out') });
    await assertEquivalent(model, out);
    if (pkg) {
      const viaNode = join(dir, 'node', 'llm.opt.onnx');
      await mkdir(dirname(viaNode), { recursive: true });
      await pkg.optimizeFile(model, viaNode);
      assert.ok((await readFile(viaNode)).equals(await readFile(out)), 'page == node: model');
      assert.ok(
        (await readFile(`${viaNode}.data`)).equals(await readFile(`${out}.data`)),
        'page == node: data',
      );
    }

    // float16: every weight is computed, and goes to the browser's storage, not the tab's memory
    // (a 1B decoder's 2.2 GB of float16 weights crashed the tab when held). The run replaces the
    // previous result's file.
    await page.check('#float16');
    await page.click('#run');
    assert.equal(
      await waitState(page, ['done', 'error']),
      'done',
      await page.locator('#error').textContent(),
    );
    const half = join(dir, 'out16');
    const out16 = await downloadResult(page, 'llm.opt.onnx', { dir: half });
    await downloadResult(page, 'llm.opt.onnx.data', { selector: '#download-ext-0', dir: half });
    const data16 = (await stat(`${out16}.data`)).size;
    const spilled = Number(await page.evaluate(() => document.body.dataset.spillBytes));
    assert.ok(
      data16 > weights / 2.1 && spilled >= data16,
      `${spilled} B in storage for ${data16} B of float16 data`,
    );
    assert.match(await page.locator('#summary').textContent(), /of result in the browser's storage/);
    const stored = await page.evaluate(async () => {
      const root = await (await navigator.storage.getDirectory()).getDirectoryHandle('onnxfold-results');
      const files = [];
      for await (const [tab, h] of root.entries()) {
        for await (const [kind, k] of h.entries())
          for await (const name of k.keys()) files.push(`${tab}/${kind}/${name}`);
      }
      return files;
    });
    assert.equal(stored.length, 1, `one stored result, the latest: ${stored.join(', ')}`);
    if (pkg) {
      const viaNode = join(dir, 'node16', 'llm.opt.onnx');
      await mkdir(dirname(viaNode), { recursive: true });
      await pkg.optimizeFile(model, viaNode, { float16: true });
      assert.ok((await readFile(viaNode)).equals(await readFile(out16)), 'page == node: float16 model');
      assert.ok(
        (await readFile(`${viaNode}.data`)).equals(await readFile(`${out16}.data`)),
        'page == node: float16 data',
      );
    }
  });

  // Results of tabs that are gone (their Web Lock released) are removed when a page starts; an
  // open tab's are kept.
  test("stored results of closed tabs are removed, an open tab's kept", async (t) => {
    const first = await openPage(t);
    await first.click('#sample');
    assert.equal(await waitState(first, ['ready', 'error']), 'ready');
    await first.click('#run');
    assert.equal(
      await waitState(first, ['done', 'error']),
      'done',
      await first.locator('#error').textContent(),
    );
    const listTabs = async (page) =>
      page.evaluate(async () => {
        const root = await (
          await navigator.storage.getDirectory()
        ).getDirectoryHandle('onnxfold-results', { create: true });
        const tabs = [];
        for await (const name of root.keys()) tabs.push(name);
        return tabs.sort();
      });
    const live = await listTabs(first);
    assert.ok(live.length >= 1, 'the run stored its result');
    await first.evaluate(async () => {
      const root = await (await navigator.storage.getDirectory()).getDirectoryHandle('onnxfold-results');
      const gone = await root.getDirectoryHandle('closed-tab', { create: true });
      await (
        await gone.getFileHandle('onnxfold-old.bin', { create: true })
      )
        .createWritable()
        .then((w) => w.close());
    });
    // A second tab of the same origin (same context: same storage) starts and cleans up.
    const second = await first.context().newPage();
    await second.goto(server.url);
    await waitState(second, ['ready'], 60_000);
    await second.waitForFunction(
      async () => {
        const root = await (await navigator.storage.getDirectory()).getDirectoryHandle('onnxfold-results');
        for await (const name of root.keys()) if (name === 'closed-tab') return false;
        return true;
      },
      null,
      { timeout: 10_000 },
    );
    const after = await listTabs(second);
    for (const tab of live) assert.ok(after.includes(tab), `the open tab's folder ${tab} is kept`);
    await second.close();
  });

  test('no uncaught page errors, no request leaves localhost', () => {
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(foreignRequests, []);
  });
});

// End-to-end test of the page's graph view (build/web, made by scripts/build-web): playwright-core
// drives Debian's Chromium against a localhost server. For mobilenet_v2 and minibert (shared
// models) it optimizes, opens the graph view, checks that elk (graph-layout-worker.js) was not
// fetched before, that "before" marks the nodes the optimizer removed, that "after" renders, that
// clicking a node (and Enter on one) shows its details, and that "By module" shows module boxes.
// Screenshots: build/test-artifacts/graph-<model>-{before,after,modules}.png.
//
//   scripts/build-web && node --test tests/browser/
//
// Without Chromium, the built page or the shared models the tests skip, except under CI, where they fail.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { serveStatic } from '../../web/serve.mjs';
import { artifacts, launchChromium, prerequisites, shared, webDir } from './harness.mjs';

const models = ['mobilenet_v2.op13.nofold.onnx', 'minibert.op14.nofold.onnx'].map((m) =>
  join(shared, 'models', m),
);
const LAYOUT = 'graph-layout-worker.js';
const { playwright, skipReason } = await prerequisites('graph view', { files: [LAYOUT], also: models });

describe('web page: graph view (Chromium)', { skip: skipReason }, () => {
  let server;
  let browser;

  before(async () => {
    await mkdir(artifacts, { recursive: true });
    server = await serveStatic({ root: webDir });
    browser = await launchChromium(playwright);
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  const waitState = (page, states, timeout = 120_000) =>
    page.waitForFunction((s) => s.includes(document.body.dataset.state), states, { timeout });

  for (const model of models) {
    const short = model.split('/').pop().split('.')[0];
    test(`${short}: before marks removed nodes, after renders, details on click and Enter`, async (t) => {
      const context = await browser.newContext({ viewport: { width: 1200, height: 1400 } });
      t.after(() => context.close());
      const page = await context.newPage();
      const errors = [];
      const fetched = [];
      page.on('pageerror', (e) => errors.push(e.message));
      page.on('request', (r) => fetched.push(new URL(r.url()).pathname.slice(1)));
      await page.goto(server.url);
      await waitState(page, ['ready']);
      await page.setInputFiles('#file', model);
      await waitState(page, ['ready', 'error']);
      await page.click('#run');
      await waitState(page, ['done', 'error']);
      assert.equal(
        await page.evaluate(() => document.body.dataset.state),
        'done',
        await page.locator('#error').textContent(),
      );
      assert.ok(!fetched.includes(LAYOUT), `${LAYOUT} fetched before the graph view was opened`);

      await page.click('#graph-view > summary');
      await page.waitForSelector('#graph-view .gnode.op', { timeout: 120_000 });
      assert.ok(fetched.includes(LAYOUT), `${LAYOUT} not fetched when the view opened`);
      const removed = await page.locator('#graph-view .gnode.removed').count();
      const all = await page.locator('#graph-view .gnode.op').count();
      t.diagnostic(
        `before: ${all} nodes, ${removed} removed; ${await page.locator('#graph-status').textContent()}`,
      );
      assert.ok(removed > 0, 'no removed node marked');
      assert.ok(removed < all);
      await page.locator('#graph-view').screenshot({ path: join(artifacts, `graph-${short}-before.png`) });

      // Click a kept node (focusing it brings it into sight): its details, with types.
      const kept = page.locator('#graph-view .gnode.op:not(.removed)').first();
      await kept.focus();
      await kept.click();
      const details = await page.locator('#graph-details').textContent();
      assert.match(details, /kept|rewritten by the optimizer/);
      assert.match(details, /Inputs/);
      assert.match(details, /float32\[|int64\[/);

      // Zoom buttons change the view's transform.
      const t0 = await page.locator('#graph-view g.viewport').getAttribute('transform');
      await page.click('#graph-zoom-in');
      assert.notEqual(await page.locator('#graph-view g.viewport').getAttribute('transform'), t0);

      // After: fewer nodes; Enter on a node shows its details.
      await page.check('input[name="graph-side"][value="after"]');
      await page.waitForFunction(
        (n) =>
          document.querySelectorAll('#graph-view .gnode.op').length !== n &&
          /^After/.test(document.querySelector('#graph-status').textContent),
        all,
        { timeout: 120_000 },
      );
      const afterCount = await page.locator('#graph-view .gnode.op').count();
      const added = await page.locator('#graph-view .gnode.added').count();
      t.diagnostic(`after: ${afterCount} nodes, ${added} new`);
      assert.equal(afterCount, all - removed + added);
      // Conv nodes that took in their BatchNormalization keep their names and read new weights.
      const rewritten = await page.locator('#graph-view .gnode.rewritten').count();
      t.diagnostic(`after: ${rewritten} rewritten in place`);
      if (short.startsWith('mobilenet')) assert.ok(rewritten > 0, 'no fused Conv marked as rewritten');
      await page.locator('#graph-view .gnode.op').first().focus();
      await page.keyboard.press('Enter');
      assert.match(await page.locator('#graph-details').textContent(), /Outputs/);
      await page.locator('#graph-view').screenshot({ path: join(artifacts, `graph-${short}-after.png`) });

      // By module: collapsible boxes with node counts.
      await page.check('#graph-by-module');
      await page.waitForSelector('#graph-view details.gmod');
      assert.match(
        await page.locator('#graph-view details.gmod > summary').first().textContent(),
        /\d+ nodes?/,
      );
      await page.locator('#graph-view').screenshot({ path: join(artifacts, `graph-${short}-modules.png`) });
      assert.deepEqual(errors, []);
    });
  }
});

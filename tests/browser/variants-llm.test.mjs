// tests/node/variants-llm.test.mjs in onnxruntime-web (wasm provider, one thread) in headless
// Chromium: every variant the npm package's variantsFile writes of the 4-layer, hidden-768
// decoder (vocab 32,000; 310 MB fp32) loads and runs on the same seeded prompt, with the same
// rules against the original run in onnxruntime-node with its optimizations off: fp32 within the
// oracle's tolerance, fp16 (and q4f16 of q4) within 1e-2 of the range, int8/q8/q4/q4f16 within
// logits.mjs's LOGIT_BOUNDS. The repository root is served (onnxruntime-web from node_modules, the
// variants from build/).
//
//   node --test tests/browser/variants-llm.test.mjs
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { serveStatic } from '../../web/serve.mjs';
import { launchChromium, prerequisites, repoRoot } from './harness.mjs';
import { runInPage, servedModel, servedUrl, unpack } from './ort-web.mjs';
import { dist, havePythonOnnx, makeLlm, python } from '../node/env.mjs';
import { compareTensors } from 'onnxfold/accuracy';
import { DECODER_768, PROMPT, assertVariantLogits, logitsTensor, promptIds } from '../node/logits.mjs';

const ORT_WEB = join(repoRoot, 'node_modules', 'onnxruntime-web', 'dist', 'ort.wasm.min.mjs');

const { playwright, skipReason } = await prerequisites('browser llm variants', {
  page: false,
  also: [
    ['onnxruntime-web (npm ci)', existsSync(ORT_WEB)],
    [`the wasm build (${dist})`, existsSync(dist)],
    [`${python} with onnx, or ${makeLlm}`, havePythonOnnx() && existsSync(makeLlm)],
  ],
});

describe('variants of the hidden-768 decoder in onnxruntime-web', { skip: skipReason }, () => {
  let tmp;
  let server;
  let browser;
  let variants;
  let expected;
  const prompt = promptIds({ ...PROMPT, vocab: DECODER_768.vocab });
  before(async () => {
    mkdirSync(join(repoRoot, 'build'), { recursive: true });
    tmp = mkdtempSync(join(repoRoot, 'build', 'browser-variants-llm-'));
    const input = join(tmp, 'decoder.onnx');
    execFileSync(python, [makeLlm, ...DECODER_768.args, '--out', input], { stdio: 'ignore' });
    const { variantsFile } = await import('onnxfold');
    ({ variants } = await variantsFile(input, join(tmp, 'out'), { name: 'model' }));
    const { default: ort } = await import('onnxruntime-node');
    const { unoptimizedSession } = await import('../node/oracle.mjs');
    const session = await unoptimizedSession(input);
    expected = (await session.run({ input_ids: new ort.Tensor(prompt.type, prompt.data, prompt.dims) }))
      .logits;
    await session.release();
    server = await serveStatic({ root: repoRoot });
    browser = await launchChromium(playwright);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test('every variant loads and runs; fp32 and fp16 within tolerance, the quantized ones within their bounds', async (t) => {
    const out = join(tmp, 'out');
    const names = readdirSync(out);
    const models = Object.fromEntries(variants.map((v) => [v.dtype, servedModel(out, v.file, names)]));
    const inputs = {
      input_ids: { type: prompt.type, data: Array.from(prompt.data, String), dims: prompt.dims },
    };
    const page = await browser.newPage();
    let web;
    try {
      page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
      await page.goto(new URL('/web/serve.mjs', server.url).href); // any page of the served origin
      web = await page.evaluate(runInPage, { ortUrl: servedUrl(ORT_WEB), models, inputs, packed: true });
    } finally {
      await page.close();
    }
    const logits = {};
    const rows = {};
    for (const { dtype } of variants) {
      assert.ok(web[dtype] && !web[dtype].error, `${dtype}: ORT-web failed: ${web[dtype]?.error}`);
      const o = web[dtype].outputs.logits;
      assert.ok(o, `${dtype}: no logits`);
      assert.equal(o.type, 'float32', `${dtype}: logits stay float32`);
      assert.deepEqual(o.dims, expected.dims, `${dtype}: logits keep their shape`);
      logits[dtype] = logitsTensor(unpack(o.packed), o.dims);
      rows[dtype] = compareTensors('logits', expected, logits[dtype]);
      assert.ok(Number.isFinite(rows[dtype].cosine), `${dtype}: logits not finite`);
      t.diagnostic(
        `${dtype.padEnd(5)} load ${web[dtype].loadMs.toFixed(0).padStart(5)} ms  run ${web[dtype].runMs.toFixed(0).padStart(4)} ms  ` +
          `cosine ${rows[dtype].cosine.toFixed(6)}  argmax ${rows[dtype].argmax.toFixed(3)}  |diff|/range ${rows[dtype].relRange.toExponential(2)}`,
      );
    }
    const fp32 = compareTensors('logits', expected, logits.fp32, { rtol: 1e-3, atol: 1e-4 });
    assert.ok(
      !fp32.error && fp32.mismatches === 0,
      `fp32: ${fp32.error ?? `${fp32.mismatches}/${fp32.size} logits differ, max abs ${fp32.maxAbsDiff}`}`,
    );
    assertVariantLogits(rows, logits.q4, logits.q4f16);
  });
});

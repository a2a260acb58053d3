// Every variant `onnxfold variants` writes (fp32, fp16, int8, q8, q4, q4f16; src/api/variants.cpp)
// loads and runs in onnxruntime-web (wasm provider, one thread) in headless Chromium, as issue 23
// asks. The decoder is tests/node/variants.test.mjs's small make_llm one, then every shared float
// model (../shared/models). Each variant's outputs
// must be finite; fp32's must equal onnxruntime-node's on the same inputs (the oracle's seeded
// inputs, which are the page's: verify.test.mjs checks that). The repository root is served, so
// the page reads onnxruntime-web from node_modules (as bench/runtime/measure-web.mjs does) and the
// variants from build/tmp.
//
//   node --test tests/browser/variants.test.mjs
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { serveStatic } from '../../web/serve.mjs';
import { launchChromium, prerequisites, repoRoot } from './harness.mjs';
import { runInPage, servedModel, servedUrl } from './ort-web.mjs';
import { cli, haveCli, havePythonOnnx, makeLlm, makeSmallDecoder, modelsDir, python } from '../node/env.mjs';

const ORT_WEB = join(repoRoot, 'node_modules', 'onnxruntime-web', 'dist', 'ort.wasm.min.mjs');
const DTYPES = {
  fp32: 'model.onnx',
  fp16: 'model_fp16.onnx',
  int8: 'model_int8.onnx',
  q8: 'model_quantized.onnx',
  q4: 'model_q4.onnx',
  q4f16: 'model_q4f16.onnx',
};
const SEED = 3;

// No built page (build/web): the repository root is served.
const { playwright, skipReason } = await prerequisites('browser variants', {
  page: false,
  also: [
    ['onnxruntime-web (npm ci)', existsSync(ORT_WEB)],
    [`the native CLI (${cli})`, haveCli],
    [`${python} with onnx, or ${makeLlm}`, havePythonOnnx() && existsSync(makeLlm)],
  ],
});

describe('variants in onnxruntime-web', { skip: skipReason }, () => {
  let tmp;
  let server;
  let browser;
  before(async () => {
    mkdirSync(join(repoRoot, 'build'), { recursive: true });
    tmp = mkdtempSync(join(repoRoot, 'build', 'browser-variants-'));
    const input = join(tmp, 'decoder.onnx');
    makeSmallDecoder(input);
    execFileSync(cli, ['variants', input, '--out', join(tmp, 'out'), '--name', 'model'], { stdio: 'ignore' });
    server = await serveStatic({ root: repoRoot });
    browser = await launchChromium(playwright);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test('every variant loads and runs; outputs finite, fp32 equal to onnxruntime-node', async () => {
    const out = join(tmp, 'out');
    const models = Object.fromEntries(
      Object.entries(DTYPES).map(([d, f]) => [d, servedModel(out, f, readdirSync(out))]),
    );
    const page = await browser.newPage();
    let web;
    try {
      page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
      await page.goto(new URL('/web/serve.mjs', server.url).href); // any page of the served origin
      web = await page.evaluate(runInPage, { ortUrl: servedUrl(ORT_WEB), models, seed: SEED });
    } finally {
      await page.close();
    }
    for (const dtype of Object.keys(DTYPES)) {
      assert.ok(web[dtype] && !web[dtype].error, `${dtype}: ORT-web failed: ${web[dtype]?.error}`);
      assert.ok(Object.keys(web[dtype].outputs).length > 0, `${dtype}: no outputs`);
      for (const [name, o] of Object.entries(web[dtype].outputs)) {
        assert.ok(o.data.length > 0, `${dtype}: output '${name}' is empty`);
        const bad = o.data.findIndex((v) => !Number.isFinite(v));
        assert.equal(bad, -1, `${dtype}: output '${name}' [${o.dims}] has ${o.data[bad]} at ${bad}`);
      }
    }
    // fp32 against onnxruntime-node on the same (oracle) inputs.
    const { default: ort } = await import('onnxruntime-node');
    const { makeInputs, compareTensors } = await import('../node/oracle.mjs');
    const session = await ort.InferenceSession.create(join(tmp, 'out', DTYPES.fp32), {
      executionProviders: ['cpu'],
    });
    try {
      const expected = await session.run(makeInputs(session, { seed: SEED }));
      assert.deepEqual(Object.keys(web.fp32.outputs).sort(), Object.keys(expected).sort());
      for (const [name, e] of Object.entries(expected)) {
        const w = web.fp32.outputs[name];
        const actual = new ort.Tensor(w.type, Float32Array.from(w.data), w.dims);
        const r = compareTensors(name, e, actual, { rtol: 1e-3, atol: 1e-4 });
        assert.ok(
          !r.error && r.mismatches === 0,
          `fp32 output '${name}': ${r.error ?? `${r.mismatches}/${r.size} differ, max abs ${r.maxAbsDiff}`}`,
        );
      }
    } finally {
      await session.release();
    }
  });
  // The shared float models too (tests/node/variants.test.mjs runs them in onnxruntime-node):
  // each variant loads and runs, outputs finite, fp32 equal to onnxruntime-node's.
  test('every variant of every shared float model loads and runs', async () => {
    const { default: ort } = await import('onnxruntime-node');
    const { makeInputs, compareTensors } = await import('../node/oracle.mjs');
    const names = readdirSync(modelsDir)
      .filter((f) => f.endsWith('.onnx') && !f.includes('.qdq_'))
      .sort();
    assert.ok(names.length >= 5, `shared models missing from ${modelsDir}`);
    const page = await browser.newPage();
    try {
      page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
      await page.goto(new URL('/web/serve.mjs', server.url).href);
      for (const name of names) {
        const out = join(tmp, name.replace(/\.onnx$/, ''));
        execFileSync(cli, ['variants', join(modelsDir, name), '--out', out, '--name', 'model'], {
          stdio: 'ignore',
        });
        const files = readdirSync(out);
        const models = Object.fromEntries(
          Object.entries(DTYPES).map(([d, f]) => [d, servedModel(out, f, files)]),
        );
        const web = await page.evaluate(runInPage, { ortUrl: servedUrl(ORT_WEB), models, seed: SEED });
        for (const dtype of Object.keys(DTYPES)) {
          assert.ok(
            web[dtype] && !web[dtype].error,
            `${name} ${dtype}: ORT-web failed: ${web[dtype]?.error}`,
          );
          for (const [o, t] of Object.entries(web[dtype].outputs)) {
            const bad = t.data.findIndex((v) => !Number.isFinite(v));
            assert.equal(bad, -1, `${name} ${dtype}: output '${o}' has ${t.data[bad]} at ${bad}`);
          }
        }
        // Training-mode Dropout (mobilenet_v3_small.train) is random: its values differ by design.
        if (name.includes('.train')) continue;
        const session = await ort.InferenceSession.create(join(out, DTYPES.fp32), {
          executionProviders: ['cpu'],
        });
        try {
          const expected = await session.run(makeInputs(session, { seed: SEED }));
          for (const [o, e] of Object.entries(expected)) {
            const w = web.fp32.outputs[o];
            const r = compareTensors(o, e, new ort.Tensor(w.type, Float32Array.from(w.data), w.dims), {
              rtol: 1e-3,
              atol: 1e-4,
            });
            assert.ok(
              !r.error && r.mismatches === 0,
              `${name} fp32 output '${o}': ${r.error ?? `${r.mismatches}/${r.size} differ, max abs ${r.maxAbsDiff}`}`,
            );
          }
        } finally {
          await session.release();
        }
      }
    } finally {
      await page.close();
    }
  });
});

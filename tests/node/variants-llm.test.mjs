// Issue 23's decoder of realistic width: make_llm.py's 4 layers of hidden 768 (12 heads, FFN 2048)
// with Llama's vocabulary of 32,000 (310 MB of fp32 weights in external data). Every variant the
// npm package's variantsFile writes (fp32, fp16, int8, q8, q4, q4f16) must load and run in
// onnxruntime-node at its default settings (as an app runs it) on a seeded prompt of ids spread
// over the vocabulary (4 x 32 tokens), against the original run with ORT's optimizations off:
//  - fp32 equivalent: |diff| <= 1e-4 + 1e-3 |original| (the oracle's tolerance) at every logit;
//  - fp16 within 1e-2 of the logits' range (float16.test.mjs's rule), and so is q4f16 of q4;
//  - int8, q8, q4, q4f16 judged on the logits: cosine, top-1 (argmax) agreement per position and
//    max |diff| / range within LOGIT_BOUNDS (logits.mjs: measured, and checked against variants
//    broken on purpose).
// tests/browser/variants-llm.test.mjs runs the same variants in onnxruntime-web.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ort from 'onnxruntime-node';

import { dist, havePythonOnnx, makeLlm, need, python } from './env.mjs';
import { compareTensors } from 'onnxfold/accuracy';
import { DECODER_768, PROMPT, assertVariantLogits, promptIds } from './logits.mjs';
import { unoptimizedSession } from './oracle.mjs';

const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-variants-llm-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

test('variants of a 4-layer, hidden-768 decoder: all run in onnxruntime-node, each within its bound', async (t) => {
  if (
    !need(t, existsSync(dist), `${dist} not built`) ||
    !need(t, havePythonOnnx() && existsSync(makeLlm), `${python} with onnx, or ${makeLlm}, missing`)
  )
    return;
  const { variantsFile } = await import('onnxfold');
  const clock = { start: performance.now() };
  const input = join(tmp, 'decoder.onnx');
  execFileSync(python, [makeLlm, ...DECODER_768.args, '--out', input], { stdio: 'ignore' });
  clock.made = performance.now();
  const out = join(tmp, 'variants');
  const { variants } = await variantsFile(input, out, { name: 'model' });
  clock.variants = performance.now();
  assert.deepEqual(
    variants.map((v) => v.dtype),
    ['fp32', 'fp16', 'int8', 'q8', 'q4', 'q4f16'],
  );
  assert.ok(
    readdirSync(out).includes('model_q4.onnx_data'),
    'the weights stay in external data, named as transformers.js reads them',
  );

  const prompt = promptIds({ ...PROMPT, vocab: DECODER_768.vocab });
  const feeds = { input_ids: new ort.Tensor(prompt.type, prompt.data, prompt.dims) };
  const reference = await unoptimizedSession(input);
  const expected = (await reference.run(feeds)).logits;
  await reference.release();
  assert.deepEqual(expected.dims, [...prompt.dims, DECODER_768.vocab]);

  const logits = {};
  const rows = [];
  for (const v of variants) {
    const t0 = performance.now();
    const session = await ort.InferenceSession.create(join(out, v.file), {
      executionProviders: ['cpu'],
      logSeverityLevel: 3,
    });
    const t1 = performance.now();
    const got = (await session.run(feeds)).logits;
    const t2 = performance.now();
    await session.release();
    assert.equal(got.type, 'float32', `${v.dtype}: logits stay float32`);
    assert.deepEqual(got.dims, expected.dims, `${v.dtype}: logits keep their shape`);
    const m = compareTensors('logits', expected, got);
    assert.ok(Number.isFinite(m.cosine), `${v.dtype}: logits not finite`);
    logits[v.dtype] = got;
    rows.push({ dtype: v.dtype, bytes: v.bytes, loadMs: t1 - t0, runMs: t2 - t1, ...m });
  }
  clock.ort = performance.now();
  for (const r of rows) {
    t.diagnostic(
      `${r.dtype.padEnd(5)} ${(r.bytes / 2 ** 20).toFixed(1).padStart(6)} MiB  load ${r.loadMs.toFixed(0).padStart(5)} ms  ` +
        `run ${r.runMs.toFixed(0).padStart(4)} ms  cosine ${r.cosine.toFixed(6)}  argmax ${r.argmax.toFixed(3)}  |diff|/range ${r.relRange.toExponential(2)}`,
    );
  }
  t.diagnostic(
    `make_llm ${((clock.made - clock.start) / 1e3).toFixed(1)} s, variantsFile ${((clock.variants - clock.made) / 1e3).toFixed(1)} s, ` +
      `onnxruntime-node ${((clock.ort - clock.variants) / 1e3).toFixed(1)} s`,
  );

  const fp32 = compareTensors('logits', expected, logits.fp32, { rtol: 1e-3, atol: 1e-4 });
  assert.ok(
    !fp32.error && fp32.mismatches === 0,
    `fp32: ${fp32.error ?? `${fp32.mismatches}/${fp32.size} logits differ, max abs ${fp32.maxAbsDiff}`}`,
  );
  const byDtype = Object.fromEntries(rows.map((r) => [r.dtype, r]));
  assertVariantLogits(byDtype, logits.q4, logits.q4f16);
});

// The differential fuzzer's CI budget (tests/fuzz/differential): a fixed range of seeds, each
// model optimized by the npm package (default, float16) and split by splitConstants, then run
// in ONNX Runtime against the original on the same seeded inputs. Any finding fails the test;
// the first five are minimized and written to build/test-artifacts/differential/.
// Every committed regression (tests/fuzz/differential/regressions/*.onnx, fixed bugs) is
// replayed and must give no finding. Open findings (tests/fuzz/differential/findings/) are not
// required to pass, but still to be detected (which tests the checker): they become regressions
// once fixed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { dist, need, repoRoot } from './env.mjs';

const SEED = 1;
// About a minute on one core here (35 models/s); ONNXFOLD_DIFF_FUZZ_COUNT changes it, run.mjs
// is for campaigns.
const COUNT = Number(process.env.ONNXFOLD_DIFF_FUZZ_COUNT ?? 2500);
const regressions = join(repoRoot, 'tests', 'fuzz', 'differential', 'regressions');
const artifacts = join(repoRoot, 'build', 'test-artifacts', 'differential');
const wasmMissing = `the wasm build is missing at ${dist} (cmake --preset wasm && cmake --build --preset wasm)`;

test(`differential fuzz: seeds ${SEED}..${SEED + COUNT - 1} give no finding`, { timeout: 15 * 60e3 }, async (t) => {
  if (!need(t, existsSync(dist), wasmMissing)) return;
  const { runCampaign } = await import('../fuzz/differential/campaign.mjs');
  const stats = await runCampaign({ seed: SEED, count: COUNT, findingsDir: artifacts, maxShrinks: 5 });
  const refused = Object.entries(stats.refused).map(([m, n]) => `${m} ${n}`).join(', ') || 'none';
  t.diagnostic(`compared ${stats.compared}, skipped ${stats.skipped}, refused ${refused}, ` +
    `${stats.rate.toFixed(1)} models/s`);
  // The generator makes models ORT runs: many skips would make this test check little.
  assert.ok(stats.skipped <= COUNT * 0.05, `${stats.skipped} of ${COUNT} models skipped: ${JSON.stringify(stats.skipReasons)}`);
  const lines = stats.findings.slice(0, 20).map((f) => `seed ${f.seed} (opset ${f.opset}) ${f.mode}/${f.kind}: ` +
    `${f.message} [${f.minimizeChecks ? 'minimized to ' : ''}${f.nodes} nodes: ${f.ops.join(' ')}]`);
  if (stats.findings.length > 20) lines.push(`... and ${stats.findings.length - 20} more`);
  assert.equal(stats.findings.length, 0, `findings (minimized models in ${artifacts}):\n${lines.join('\n')}`);
});

test('differential fuzz: committed regressions give no finding', async (t) => {
  if (!need(t, existsSync(dist), wasmMissing)) return;
  const files = existsSync(regressions) ? readdirSync(regressions).filter((f) => f.endsWith('.onnx')).sort() : [];
  if (!files.length) {
    t.diagnostic('no regression committed yet');
    return;
  }
  const { replay } = await import('../fuzz/differential/campaign.mjs');
  for (const f of files) {
    const r = await replay(join(regressions, f));
    assert.equal(r.status, 'ok', `${f}: ${r.note}`);
    assert.deepEqual(r.findings, [], `${f}: ${r.findings.map((x) => `${x.mode}/${x.kind}: ${x.message}`).join('; ')}`);
  }
  t.diagnostic(`${files.length} regression model(s) replayed`);
});

// The checker's own test: every open finding must still be seen (a mismatch, a result ORT
// refuses...). One that is not is either fixed (move it to regressions/) or missed by a broken
// checker; either way someone should look.
test('differential fuzz: open findings are still detected', async (t) => {
  if (!need(t, existsSync(dist), wasmMissing)) return;
  const dir = join(repoRoot, 'tests', 'fuzz', 'differential', 'findings');
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.onnx')).sort() : [];
  const { replay } = await import('../fuzz/differential/campaign.mjs');
  for (const f of files) {
    const r = await replay(join(dir, f));
    const want = `${r.meta.mode}/${r.meta.kind}`;
    assert.ok(r.findings.some((x) => `${x.mode}/${x.kind}` === want),
      `${f}: no ${want} finding any more (fixed? move it to regressions/): ${r.status} ${r.note}`);
  }
  t.diagnostic(`${files.length} open finding(s) still detected`);
});

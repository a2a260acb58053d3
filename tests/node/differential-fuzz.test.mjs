// The differential fuzzer's CI budget (tests/fuzz/differential): a fixed range of seeds, each
// model optimized by the npm package (default, float16, outline, inline) and split by
// splitConstants, then run in ONNX Runtime against the original on the same seeded inputs; and a
// fixed range of QDQ models (gen-qdq.mjs) in the default pipeline and the three quant finalize
// modes, compared within one quantization step (check.mjs). Any finding fails the test; the
// first five are minimized and written to build/test-artifacts/differential/.
// Every committed regression (tests/fuzz/differential/regressions/*.onnx, fixed bugs) is
// replayed and must give no finding. Open findings (tests/fuzz/differential/findings/) are not
// required to pass, but still to be detected (which tests the checker): they become regressions
// once fixed. The checker's own rules (the QDQ tolerance, the conditioning check) are tested on
// results made wrong on purpose.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { buildModel } from './onnx-builder.mjs';
import { dist, need, repoRoot } from './env.mjs';

const SEED = 1;
// About a minute on one core here (35 models/s; 22 with a fuzz campaign sharing the cores);
// ONNXFOLD_DIFF_FUZZ_COUNT changes it, run.mjs is for campaigns.
const COUNT = Number(process.env.ONNXFOLD_DIFF_FUZZ_COUNT ?? 2500);
// QDQ models: four modes each and a second ORT reference, about 20 models/s here (8 s).
const QDQ_SEED = 1;
const QDQ_COUNT = Number(process.env.ONNXFOLD_DIFF_FUZZ_QDQ_COUNT ?? 150);
const regressions = join(repoRoot, 'tests', 'fuzz', 'differential', 'regressions');
const artifacts = join(repoRoot, 'build', 'test-artifacts', 'differential');
const wasmMissing = `the wasm build is missing at ${dist} (cmake --preset wasm && cmake --build --preset wasm)`;

function findingLines(stats) {
  const lines = stats.findings
    .slice(0, 20)
    .map(
      (f) =>
        `seed ${f.seed} (opset ${f.opset}) ${f.mode}/${f.kind}: ` +
        `${f.message} [${f.minimizeChecks ? 'minimized to ' : ''}${f.nodes} nodes: ${f.ops.join(' ')}]`,
    );
  if (stats.findings.length > 20) lines.push(`... and ${stats.findings.length - 20} more`);
  return lines;
}

test(
  `differential fuzz: seeds ${SEED}..${SEED + COUNT - 1} give no finding`,
  { timeout: 15 * 60e3 },
  async (t) => {
    if (!need(t, existsSync(dist), wasmMissing)) return;
    const { runCampaign } = await import('../fuzz/differential/campaign.mjs');
    const { MODES } = await import('../fuzz/differential/check.mjs');
    const stats = await runCampaign({
      seed: SEED,
      count: COUNT,
      modes: MODES,
      findingsDir: artifacts,
      maxShrinks: 5,
    });
    const refused =
      Object.entries(stats.refused)
        .map(([m, n]) => `${m} ${n}`)
        .join(', ') || 'none';
    t.diagnostic(
      `compared ${stats.compared}, skipped ${stats.skipped}, refused ${refused}, ` +
        `ill-conditioned ${stats.illConditioned.length}, ${stats.rate.toFixed(1)} models/s`,
    );
    // The generator makes models ORT runs: many skips would make this test check little.
    assert.ok(
      stats.skipped <= COUNT * 0.05,
      `${stats.skipped} of ${COUNT} models skipped: ${JSON.stringify(stats.skipReasons)}`,
    );
    assert.equal(
      stats.findings.length,
      0,
      `findings (minimized models in ${artifacts}):\n${findingLines(stats).join('\n')}`,
    );
  },
);

test(
  `differential fuzz: QDQ seeds ${QDQ_SEED}..${QDQ_SEED + QDQ_COUNT - 1} in the quant modes give no finding`,
  { timeout: 10 * 60e3 },
  async (t) => {
    if (!need(t, existsSync(dist), wasmMissing)) return;
    const { runCampaign } = await import('../fuzz/differential/campaign.mjs');
    const { QDQ_MODES } = await import('../fuzz/differential/check.mjs');
    const stats = await runCampaign({
      seed: QDQ_SEED,
      count: QDQ_COUNT,
      qdq: 1,
      modes: QDQ_MODES,
      findingsDir: artifacts,
      maxShrinks: 5,
    });
    const q = stats.qdq;
    const refused =
      Object.entries(q.refused)
        .map(([m, n]) => `${m} ${n}`)
        .join(', ') || 'none';
    const clamped = q.clamped / Math.max(1, q.elements);
    t.diagnostic(
      `QDQ models compared ${q.compared}, skipped ${q.skipped}, refused ${refused}, ` +
        `output elements at the clamp ${(100 * clamped).toFixed(1)} %, ORT 'all' failed on ${q.allFailed}, ` +
        `ill-conditioned ${stats.illConditioned.length}, ${stats.rate.toFixed(1)} models/s`,
    );
    assert.equal(q.models, QDQ_COUNT);
    assert.ok(
      q.skipped <= QDQ_COUNT * 0.05,
      `${q.skipped} of ${QDQ_COUNT} QDQ models skipped: ${JSON.stringify(stats.skipReasons)}`,
    );
    // Calibrated scales: most output elements inside the integer range, or the comparison within
    // one step says little.
    assert.ok(clamped < 0.35, `${(100 * clamped).toFixed(1)} % of the QDQ output elements are at the clamp`);
    assert.equal(
      stats.findings.length,
      0,
      `findings (minimized models in ${artifacts}):\n${findingLines(stats).join('\n')}`,
    );
  },
);

test('differential fuzz: committed regressions give no finding', async (t) => {
  if (!need(t, existsSync(dist), wasmMissing)) return;
  const files = existsSync(regressions)
    ? readdirSync(regressions)
        .filter((f) => f.endsWith('.onnx'))
        .sort()
    : [];
  if (!files.length) {
    t.diagnostic('no regression committed yet');
    return;
  }
  const { replay } = await import('../fuzz/differential/campaign.mjs');
  for (const f of files) {
    const r = await replay(join(regressions, f));
    assert.equal(r.status, 'ok', `${f}: ${r.note}`);
    assert.deepEqual(
      r.findings,
      [],
      `${f}: ${r.findings.map((x) => `${x.mode}/${x.kind}: ${x.message}`).join('; ')}`,
    );
    // A finding closed as ill-conditioned must still be seen as one (the checker's rule).
    if (r.meta.status?.startsWith('fixed: ill-conditioned')) {
      assert.ok(
        r.illConditioned.some((x) => x.mode === r.meta.mode),
        `${f}: no ${r.meta.mode} mismatch left to explain`,
      );
    }
  }
  t.diagnostic(`${files.length} regression model(s) replayed`);
});

// The checker's own test: every open finding must still be seen (a mismatch, a result ORT
// refuses...). One that is not is either fixed (move it to regressions/) or missed by a broken
// checker; either way someone should look.
test('differential fuzz: open findings are still detected', async (t) => {
  if (!need(t, existsSync(dist), wasmMissing)) return;
  const dir = join(repoRoot, 'tests', 'fuzz', 'differential', 'findings');
  const files = existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.onnx'))
        .sort()
    : [];
  const { replay } = await import('../fuzz/differential/campaign.mjs');
  for (const f of files) {
    const r = await replay(join(dir, f));
    const want = `${r.meta.mode}/${r.meta.kind}`;
    assert.ok(
      r.findings.some((x) => `${x.mode}/${x.kind}` === want),
      `${f}: no ${want} finding any more (fixed? move it to regressions/): ${r.status} ${r.note}`,
    );
  }
  t.diagnostic(`${files.length} open finding(s) still detected`);
});

// ---------------------------------------------------------------- the checker's rules

// x -> Q/DQ (0.01, 128) -> Relu -> Q/DQ (0.004, zero point `zp`, its own DQ zero point `dqZp`) -> y
function qdqModel({ zp = 0, dqZp = zp, yScale = 0.004 } = {}) {
  const u8 = (v) => ({ type: 'uint8', dims: [], data: Uint8Array.from([v]) });
  return buildModel({
    opset: 13,
    inputs: [{ name: 'x', shape: [4, 16] }],
    outputs: [{ name: 'y' }],
    initializers: [
      { name: 's1', dims: [], data: [0.01] },
      { name: 'z1', ...u8(128) },
      { name: 's2', dims: [], data: [yScale] },
      { name: 'z2', ...u8(zp) },
      { name: 's3', dims: [], data: [0.004] },
      { name: 'z3', ...u8(dqZp) },
    ],
    nodes: [
      { op: 'QuantizeLinear', inputs: ['x', 's1', 'z1'], outputs: ['q1'] },
      { op: 'DequantizeLinear', inputs: ['q1', 's1', 'z1'], outputs: ['d1'] },
      { op: 'Relu', inputs: ['d1'], outputs: ['r'] },
      { op: 'QuantizeLinear', inputs: ['r', 's2', 'z2'], outputs: ['q2'] },
      { op: 'DequantizeLinear', inputs: ['q2', 's3', 'z3'], outputs: ['y'] },
    ],
  });
}

test('differential fuzz checker: a QDQ result passes within one output step, not beyond', async (t) => {
  if (!need(t, existsSync(dist), wasmMissing)) return;
  const { checkModel } = await import('../fuzz/differential/check.mjs');
  const { closeAll } = await import('../fuzz/differential/ort-all.mjs');
  const as = (bytes) => async () => ({ bytes });
  const original = qdqModel();
  const options = { quant: true, modes: ['quant-qoperator'] };
  try {
    // Requantizing with a scale 1e-4 larger moves elements by at most one step: no finding.
    const near = await checkModel(original, {
      ...options,
      transform: as(qdqModel({ yScale: 0.004 * (1 + 1e-4) })),
    });
    assert.equal(near.status, 'ok');
    assert.deepEqual(near.findings, []);
    assert.ok(near.quant.elements > 0 && near.quant.clamped < near.quant.elements);
    // A zero point off by 2 in the output DQ: every element two steps away, a finding (not
    // excused as ill-conditioned: the original barely moves when its constants do).
    const off = await checkModel(original, { ...options, transform: as(qdqModel({ dqZp: 2 })) });
    assert.equal(off.findings.length, 1, JSON.stringify(off));
    assert.equal(off.findings[0].kind, 'mismatch');
    assert.match(off.findings[0].message, /2\.00 steps of 0\.004/);
    assert.deepEqual(off.illConditioned, []);
  } finally {
    closeAll();
  }
});

// x -> Relu -> int8 Q (step 0.0049, zero point `zp`) -> DQ (zero point 0) -> uint8 Q (step
// 0.0030) -> y: one int8 step is 1.6 output steps.
function requantModel(zp = 0) {
  return buildModel({
    opset: 13,
    inputs: [{ name: 'x', shape: [4, 16] }],
    outputs: [{ name: 'y', type: 'uint8' }],
    initializers: [
      { name: 's1', dims: [], data: [0.0049] },
      { name: 'z1', type: 'int8', dims: [], data: Int8Array.from([zp]) },
      { name: 'z0', type: 'int8', dims: [], data: Int8Array.from([0]) },
      { name: 's2', dims: [], data: [0.003] },
      { name: 'z2', type: 'uint8', dims: [], data: Uint8Array.from([0]) },
    ],
    nodes: [
      { op: 'Relu', inputs: ['x'], outputs: ['r'] },
      { op: 'QuantizeLinear', inputs: ['r', 's1', 'z1'], outputs: ['q1'] },
      { op: 'DequantizeLinear', inputs: ['q1', 's1', 'z0'], outputs: ['d1'] },
      { op: 'QuantizeLinear', inputs: ['d1', 's2', 'z2'], outputs: ['y'] },
    ],
  });
}

test('differential fuzz checker: a tie upstream may move a QDQ output by more than its own step', async (t) => {
  if (!need(t, existsSync(dist), wasmMissing)) return;
  const { checkModel } = await import('../fuzz/differential/check.mjs');
  const { closeAll } = await import('../fuzz/differential/ort-all.mjs');
  const as = (bytes) => async () => ({ bytes });
  const options = { quant: true, modes: ['quant-qoperator'] };
  try {
    // Every int8 value one step up (as if each were a tie rounded the other way): up to two
    // uint8 steps, allowed.
    const one = await checkModel(requantModel(), { ...options, transform: as(requantModel(1)) });
    assert.deepEqual(one.findings, [], JSON.stringify(one.findings));
    // Three int8 steps are five uint8 steps: a finding.
    const three = await checkModel(requantModel(), { ...options, transform: as(requantModel(3)) });
    assert.equal(three.findings.length, 1, JSON.stringify(three));
    assert.match(three.findings[0].message, /allowed: a tie upstream/);
  } finally {
    closeAll();
  }
});

// y = Cos(prod * x0) + x: ill-conditioned in its constant (prod about 6e4), well-conditioned in x.
function cosModel(scale) {
  return buildModel({
    opset: 13,
    inputs: [{ name: 'x', shape: [8] }],
    outputs: [{ name: 'y' }],
    initializers: [{ name: 'k', dims: [], data: [61972.28125 * scale] }],
    nodes: [
      { op: 'Mul', inputs: ['x', 'k'], outputs: ['p'] },
      { op: 'Cos', inputs: ['p'], outputs: ['c'] },
      { op: 'Add', inputs: ['c', 'x'], outputs: ['y'] },
    ],
  });
}

test("differential fuzz checker: a mismatch the original's own conditioning explains is not a finding", async (t) => {
  if (!need(t, existsSync(dist), wasmMissing)) return;
  const { checkModel } = await import('../fuzz/differential/check.mjs');
  const as = (bytes) => async () => ({ bytes });
  const original = cosModel(1);
  const options = { modes: ['default'] };
  // The constant one float32 ulp (2^-8 at 6e4) away: Cos moves by up to about 0.004 * |x|.
  const ulp = await checkModel(original, { ...options, transform: as(cosModel(1 + 2 ** -24)) });
  assert.deepEqual(ulp.findings, [], JSON.stringify(ulp.findings));
  assert.equal(ulp.illConditioned.length, 1);
  assert.match(ulp.illConditioned[0].message, /the original itself moves by/);
  // A thousand ulps away: beyond what one ulp of the constant does, a finding.
  const far = await checkModel(original, { ...options, transform: as(cosModel(1 + 1000 * 2 ** -24)) });
  assert.equal(far.findings.length, 1, JSON.stringify(far));
  assert.deepEqual(far.illConditioned, []);
});

// x -> five Sigmoids -> InstanceNormalization (epsilon 1e-9, bias `bias`) -> y: the Sigmoids
// converge, so the three values normalized are nearly equal and their float16 rounding (steps of
// 0.0005) moves the output by a fifth of its range, while the original barely moves when its
// inputs and constants do (the Sigmoids damp the inputs). `stored`: every value rounded to
// float16 and back (Cast pairs), as a float16 conversion stores it (ONNX Runtime's CPU runs most
// float16 ops in float32 between Casts it inserts, so a float16 model rounds only there).
function convergingNormModel({ bias = 0, stored = false } = {}) {
  const nodes = [];
  let v = 'x';
  const round = () => {
    if (!stored) return;
    nodes.push(
      { op: 'Cast', inputs: [v], outputs: [`${v}_h`], attrs: { to: 10 } },
      { op: 'Cast', inputs: [`${v}_h`], outputs: [`${v}_r`], attrs: { to: 1 } },
    );
    v = `${v}_r`;
  };
  round();
  for (let i = 0; i < 5; i++) {
    nodes.push({ op: 'Sigmoid', inputs: [v], outputs: [`s${i}`] });
    v = `s${i}`;
    round();
  }
  nodes.push({
    op: 'InstanceNormalization',
    inputs: [v, 'scale', 'b'],
    outputs: [stored ? 'n' : 'y'],
    attrs: { epsilon: 1e-9 },
  });
  if (stored) {
    v = 'n';
    round();
    nodes.push({ op: 'Identity', inputs: [v], outputs: ['y'] });
  }
  return buildModel({
    opset: 13,
    inputs: [{ name: 'x', shape: [1, 1, 3] }],
    outputs: [{ name: 'y' }],
    initializers: [
      { name: 'scale', dims: [1], data: [1] },
      { name: 'b', dims: [1], data: [bias] },
    ],
    nodes,
  });
}

test('differential fuzz checker: float16 precision the ideal float16 conversion also loses is not a finding', async (t) => {
  if (!need(t, existsSync(dist), wasmMissing)) return;
  const { checkModel } = await import('../fuzz/differential/check.mjs');
  const { float16Reference, roundToHalf } = await import('../fuzz/differential/float16-reference.mjs');
  // Round to nearest, ties to even, subnormals and overflow.
  assert.equal(roundToHalf(1 + 2 ** -11), 1);
  assert.equal(roundToHalf(1 + 3 * 2 ** -11), 1 + 2 ** -9);
  assert.equal(roundToHalf(-0.1), -0.0999755859375);
  assert.equal(roundToHalf(65519), 65504);
  assert.equal(roundToHalf(65520), -roundToHalf(-65520));
  assert.equal(roundToHalf(65520), Infinity);
  assert.equal(roundToHalf(2 ** -25), 0);
  assert.equal(roundToHalf(3 * 2 ** -25), 2 ** -23);
  const original = convergingNormModel();
  // The reference: a Cast to float16 and back after each of the six float32 node outputs.
  const ref = await float16Reference(original);
  assert.equal(Buffer.from(ref.bytes).toString('latin1').match(/Cast/g).length, 12);
  const options = { modes: ['float16'] };
  const as = (bytes) => async () => ({ bytes });
  // Every value stored in float16: off by a fifth of the output's range, as the reference is.
  const stored = await checkModel(original, {
    ...options,
    transform: as(convergingNormModel({ stored: true })),
  });
  assert.deepEqual(stored.findings, [], JSON.stringify(stored.findings));
  assert.equal(stored.illConditioned.length, 1, JSON.stringify(stored));
  assert.match(stored.illConditioned[0].message, /every float32 value stored in float16/);
  // A wrong bias (0.5): as far from the reference as from the original, a finding.
  const wrong = await checkModel(original, {
    ...options,
    transform: as(convergingNormModel({ bias: 0.5, stored: true })),
  });
  assert.equal(wrong.findings.length, 1, JSON.stringify(wrong));
  assert.deepEqual(wrong.illConditioned, []);
});

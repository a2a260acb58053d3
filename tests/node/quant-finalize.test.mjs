// Quantization finalize (onnxfold optimize --quant MODE) on QDQ models: the
// shared mobilenet_v2 QDQ pair and small fixtures built here (Gemm + MatMul, a
// per-tensor Conv with Relu and MaxPool, Relu/Clip + Concat between Q/DQ).
// Every finalized model must load in onnxruntime-node and agree with ORT
// running the QDQ original at graphOptimizationLevel 'all' (which fuses QDQ
// itself) within one quantization step of the output scale.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import ort from 'onnxruntime-node';

import { buildModel, readModel } from './onnx-builder.mjs';
import { cli, cliMissing, haveCli, modelsDir, need, run } from './env.mjs';
import { makeInputs, mulberry32 } from './oracle.mjs';

const MODES = ['qoperator', 'integer', 'qdq-clean'];
const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-quant-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

/** Runs the CLI in `mode`; returns the output path and the parsed report. */
async function finalize(input, mode, tag) {
  const output = join(tmp, `${tag}.${mode}.onnx`);
  const report = `${output}.json`;
  await run(cli, ['optimize', input, '-o', output, '--quant', mode, '--verify', '-q', '--report', report]);
  const r = JSON.parse(readFileSync(report, 'utf8'));
  assert.deepEqual(r.warnings, [], `warnings: ${r.warnings.join('; ')}`);
  return { output, report: r };
}

async function session(path, graphOptimizationLevel) {
  return ort.InferenceSession.create(path, {
    executionProviders: ['cpu'],
    graphOptimizationLevel,
    logSeverityLevel: 3,
  });
}

/**
 * Outputs of the QDQ original under ORT 'all' (`expected`) and with its optimizations off
 * (`disabled`), and of each candidate (run as written), on one seeded input. Two references:
 * ORT's integer kernels (what 'all' fuses the QDQ into) round some ties otherwise than its float
 * ones, and on x86 CPUs without VNNI its own fusion can saturate a uint8 x int8 product (18
 * output steps off on gemm-no-bias with ORT 1.30 on AVX2), where the float QDQ is right.
 */
async function runAll(original, candidates, { seed = 1, dimValue = 2 } = {}) {
  const ref = await session(original, 'all');
  const feeds = makeInputs(ref, { seed, dimValue });
  const expected = await ref.run(feeds);
  const off = await session(original, 'disabled');
  const disabled = await off.run(feeds);
  const results = [];
  for (const c of candidates) {
    const s = await session(c, 'disabled');
    results.push(await s.run(feeds));
    await s.release?.();
  }
  await ref.release?.();
  await off.release?.();
  return { names: Object.keys(expected), expected, disabled, results };
}

/** Largest |a - e| over all outputs, e the nearer of the references at each element. */
function maxAbsDiff(references, actual) {
  let m = 0;
  for (const name of Object.keys(references[0])) {
    const a = actual[name].data;
    for (const r of references) assert.equal(a.length, r[name].data.length, `output ${name} size`);
    for (let i = 0; i < a.length; i++)
      m = Math.max(m, Math.min(...references.map((r) => Math.abs(a[i] - r[name].data[i]))));
  }
  return m;
}

function histogram(model) {
  const h = {};
  for (const n of model.nodes) h[n.op] = (h[n.op] ?? 0) + 1;
  return h;
}

const hex = (raw) => Buffer.from(raw ?? new Uint8Array()).toString('hex');
/** The initializers' contents (type, dims, bytes) as a sorted list, names ignored. */
const contents = (model) => model.initializers.map((t) => `${t.type}[${t.dims}]:${hex(t.raw)}`).sort();

// ---------------------------------------------------------------- mobilenet_v2 QDQ pair

const mobilenet = (v) => join(modelsDir, `mobilenet_v2.qdq_w8pc_${v}.onnx`);
const haveMobilenet = existsSync(mobilenet('fp32w')) && existsSync(mobilenet('int8w'));
const readyMobilenet = (t) =>
  need(t, haveCli, cliMissing) && need(t, haveMobilenet, `the QDQ sample models are not in ${modelsDir}`);
const finalized = {}; // `${variant}.${mode}` -> output path

for (const variant of ['fp32w', 'int8w']) {
  test(`mobilenet_v2 ${variant}: every mode agrees with ORT (at 'all' or optimizations off) on the QDQ original within one output step`, async (t) => {
    if (!readyMobilenet(t)) return;
    const paths = [];
    for (const mode of MODES) {
      const { output, report } = await finalize(mobilenet(variant), mode, `mobilenet.${variant}`);
      finalized[`${variant}.${mode}`] = output;
      paths.push(output);
      t.diagnostic(
        `${mode}: ${report.before.nodes} -> ${report.after.nodes} nodes, ` +
          `${statSync(mobilenet(variant)).size} -> ${statSync(output).size} bytes, ` +
          `ops ${JSON.stringify(report.after.op_histogram)}`,
      );
    }
    for (const seed of [1, 2]) {
      const { expected, disabled, results } = await runAll(mobilenet(variant), paths, { seed });
      // The logits are not quantized in the model: their step is the one an 8-bit min/max
      // quantization of the reference logits has.
      const e = expected.output.data;
      let lo = Infinity;
      let hi = -Infinity;
      for (const x of e) {
        lo = Math.min(lo, x);
        hi = Math.max(hi, x);
      }
      const step = (hi - lo) / 255;
      MODES.forEach((mode, k) => {
        const d = maxAbsDiff([expected, disabled], results[k]);
        t.diagnostic(
          `seed ${seed} ${mode}: max |diff| ${d.toExponential(3)} = ${(d / step).toFixed(3)} output steps (step ${step.toExponential(3)})`,
        );
        assert.ok(d <= step, `${mode}: max |diff| ${d} is more than one output step ${step}`);
      });
    }
  });
}

test('mobilenet_v2 fp32w qoperator: weights quantized once, every Conv integer, under 4.5 MB', async (t) => {
  if (!readyMobilenet(t)) return;
  const path =
    finalized['fp32w.qoperator'] ??
    (await finalize(mobilenet('fp32w'), 'qoperator', 'mobilenet.fp32w')).output;
  const before = readModel(readFileSync(mobilenet('fp32w')));
  const after = readModel(readFileSync(path));
  const inits = new Set(after.initializers.map((t) => t.name));
  const weightQ = after.nodes.filter((n) => n.op === 'QuantizeLinear' && inits.has(n.inputs[0]));
  assert.deepEqual(weightQ, [], 'QuantizeLinear of a weight is left');
  const h = histogram(after);
  const convs = histogram(before).Conv;
  assert.equal(h.Conv, undefined, 'a float Conv is left');
  // A Conv whose output the QDQ model quantizes is a QLinearConv; the last one feeds
  // Clip -> GlobalAveragePool in float (no output scale), so it is a ConvInteger.
  assert.equal((h.QLinearConv ?? 0) + (h.ConvInteger ?? 0), convs);
  assert.ok(h.QLinearConv >= convs - 1, `QLinearConv ${h.QLinearConv} of ${convs}`);
  for (const n of after.nodes)
    assert.ok(n.domain === '' || n.domain === 'ai.onnx', `${n.op} in domain ${n.domain}`);
  assert.equal(after.opsets[''], before.opsets[''], 'opset unchanged');
  const size = statSync(path).size;
  assert.ok(size < 4.5e6, `${size} bytes`);
  // The int8 weights are 8-bit initializers now, in the activations' signedness (uint8: quant.h
  // paramsIn).
  assert.ok(after.initializers.filter((t) => t.type === 'uint8' && t.dims.length === 4).length >= convs);
});

test('mobilenet_v2 fp32w and int8w finalize to the same weights, byte for byte', async (t) => {
  if (!readyMobilenet(t)) return;
  for (const mode of MODES) {
    const a =
      finalized[`fp32w.${mode}`] ?? (await finalize(mobilenet('fp32w'), mode, 'mobilenet.fp32w')).output;
    const b =
      finalized[`int8w.${mode}`] ?? (await finalize(mobilenet('int8w'), mode, 'mobilenet.int8w')).output;
    const ma = readModel(readFileSync(a));
    const mb = readModel(readFileSync(b));
    const ca = contents(ma);
    const cb = contents(mb);
    assert.equal(ca.length, cb.length, `${mode}: initializer count`);
    const diff = ca.filter((x, i) => x !== cb[i]);
    assert.equal(diff.length, 0, `${mode}: ${diff.length} initializers differ`);
    assert.deepEqual(histogram(ma), histogram(mb), `${mode}: ops differ`);
  }
});

// ---------------------------------------------------------------- fixtures

/** Quantizes per tensor (one scale) or per row (axis 0) into symmetric int8 scales. */
function weight(rand, dims, perChannel) {
  const n = dims.reduce((a, b) => a * b, 1);
  const data = Float32Array.from({ length: n }, () => rand() - 0.5);
  const rows = perChannel ? dims[0] : 1;
  const per = n / rows;
  const scales = [];
  for (let r = 0; r < rows; r++) {
    let m = 0;
    for (let i = r * per; i < (r + 1) * per; i++) m = Math.max(m, Math.abs(data[i]));
    scales.push(m / 127);
  }
  return { data, scales };
}

/** Adds initializers and Q -> DQ nodes for `x`; returns the DQ output name. */
function qdq(g, x, scale, zp, { type = 'uint8', axis, prefix = x } = {}) {
  const vec = Array.isArray(scale);
  const dims = vec ? [scale.length] : [];
  const Ctor = type === 'uint8' ? Uint8Array : Int8Array;
  g.initializers.push({ name: `${prefix}_s`, dims, data: Float32Array.from(vec ? scale : [scale]) });
  g.initializers.push({ name: `${prefix}_z`, type, dims, data: Ctor.from(vec ? zp : [zp]) });
  const attrs = axis === undefined ? {} : { axis };
  g.nodes.push({
    op: 'QuantizeLinear',
    inputs: [x, `${prefix}_s`, `${prefix}_z`],
    outputs: [`${prefix}_q`],
    attrs,
  });
  g.nodes.push({
    op: 'DequantizeLinear',
    inputs: [`${prefix}_q`, `${prefix}_s`, `${prefix}_z`],
    outputs: [`${prefix}_dq`],
    attrs,
  });
  return `${prefix}_dq`;
}

function addWeight(g, rand, name, dims, perChannel) {
  const w = weight(rand, dims, perChannel);
  g.initializers.push({ name, dims, data: w.data });
  return qdq(g, name, perChannel ? w.scales : w.scales[0], perChannel ? w.scales.map(() => 0) : 0, {
    type: 'int8',
    axis: perChannel ? 0 : undefined,
  });
}

function addBias(g, rand, name, n) {
  g.initializers.push({
    name,
    dims: [n],
    data: Float32Array.from({ length: n }, () => (rand() - 0.5) * 0.2),
  });
  return name;
}

const fixtures = {
  // Gemm (transB, per-channel weight, float bias) -> Q/DQ -> MatMul (per-tensor) -> Q/DQ.
  'gemm-matmul': () => {
    const rand = mulberry32(11);
    const g = { nodes: [], initializers: [] };
    const a = qdq(g, 'a', 0.008, 128);
    const w1 = addWeight(g, rand, 'w1', [8, 16], true);
    g.nodes.push({
      op: 'Gemm',
      inputs: [a, w1, addBias(g, rand, 'b1', 8)],
      outputs: ['h'],
      attrs: { transB: 1 },
    });
    const h = qdq(g, 'h', 0.04, 128);
    const w2 = addWeight(g, rand, 'w2', [8, 4], false);
    g.nodes.push({ op: 'MatMul', inputs: [h, w2], outputs: ['m'] });
    const y = qdq(g, 'm', 0.04, 128);
    g.nodes.push({ op: 'Identity', inputs: [y], outputs: ['y'] });
    return {
      ...g,
      inputs: [{ name: 'a', shape: [3, 16] }],
      outputs: [{ name: 'y' }],
      step: 0.04,
      expect: { qoperator: ['MatMulInteger', 'QLinearMatMul'], integer: ['MatMulInteger'] },
      absent: { qoperator: ['Gemm', 'MatMul'], integer: ['Gemm', 'MatMul'] },
    };
  },
  // A bias-free Gemm (transB, per-row weight) between Q/DQ: QLinearMatMul with the weight transposed.
  'gemm-no-bias': () => {
    const rand = mulberry32(14);
    const g = { nodes: [], initializers: [] };
    const a = qdq(g, 'a', 0.008, 128);
    const w = addWeight(g, rand, 'w', [5, 16], true);
    g.nodes.push({ op: 'Gemm', inputs: [a, w], outputs: ['h'], attrs: { transB: 1 } });
    const h = qdq(g, 'h', 0.03, 128);
    g.nodes.push({ op: 'Identity', inputs: [h], outputs: ['y'] });
    return {
      ...g,
      inputs: [{ name: 'a', shape: [4, 16] }],
      outputs: [{ name: 'y' }],
      step: 0.03,
      expect: { qoperator: ['QLinearMatMul'], integer: ['MatMulInteger'] },
      absent: { qoperator: ['Gemm'], integer: ['Gemm'] },
    };
  },
  // Per-tensor Conv + bias -> Relu -> Q(zero point 0) -> MaxPool -> Reshape between equal Q/DQ.
  'conv-per-tensor': () => {
    const rand = mulberry32(12);
    const g = { nodes: [], initializers: [] };
    const x = qdq(g, 'x', 0.008, 128);
    const w = addWeight(g, rand, 'w', [4, 3, 3, 3], false);
    g.nodes.push({
      op: 'Conv',
      inputs: [x, w, addBias(g, rand, 'b', 4)],
      outputs: ['c'],
      attrs: { pads: [1, 1, 1, 1] },
    });
    g.nodes.push({ op: 'Relu', inputs: ['c'], outputs: ['r'] });
    const r = qdq(g, 'r', 0.02, 0);
    g.nodes.push({
      op: 'MaxPool',
      inputs: [r],
      outputs: ['p'],
      attrs: { kernel_shape: [2, 2], strides: [2, 2] },
    });
    const p = qdq(g, 'p', 0.02, 0);
    g.initializers.push({ name: 'shape', type: 'int64', dims: [2], data: BigInt64Array.from([1n, -1n]) });
    g.nodes.push({ op: 'Reshape', inputs: [p, 'shape'], outputs: ['f'] });
    const f = qdq(g, 'f', 0.02, 0);
    g.nodes.push({ op: 'Identity', inputs: [f], outputs: ['y'] });
    return {
      ...g,
      inputs: [{ name: 'x', shape: [1, 3, 8, 8] }],
      outputs: [{ name: 'y' }],
      step: 0.02,
      expect: { qoperator: ['QLinearConv', 'MaxPool', 'Reshape'], integer: ['ConvInteger', 'MaxPool'] },
      absent: { qoperator: ['Relu', 'Conv'], integer: ['Relu', 'Conv'] },
    };
  },
  // Two per-channel Convs, one with Relu, one with Clip(0, 6) whose upper bound is inside the
  // quantized range (an integer Clip), concatenated between Q/DQ of equal parameters.
  'relu-concat': () => {
    const rand = mulberry32(13);
    const g = { nodes: [], initializers: [] };
    const x = qdq(g, 'x', 0.008, 128);
    const wa = addWeight(g, rand, 'wa', [3, 2, 3, 3], true);
    g.nodes.push({
      op: 'Conv',
      inputs: [x, wa, addBias(g, rand, 'ba', 3)],
      outputs: ['ca'],
      attrs: { pads: [1, 1, 1, 1] },
    });
    g.nodes.push({ op: 'Relu', inputs: ['ca'], outputs: ['ra'] });
    const ra = qdq(g, 'ra', 0.03, 0);
    const wb = addWeight(g, rand, 'wb', [3, 2, 1, 1], true);
    g.nodes.push({ op: 'Conv', inputs: [x, wb], outputs: ['cb'] });
    g.initializers.push({ name: 'lo', dims: [], data: Float32Array.from([0]) });
    g.initializers.push({ name: 'hi', dims: [], data: Float32Array.from([0.3]) });
    g.nodes.push({ op: 'Clip', inputs: ['cb', 'lo', 'hi'], outputs: ['rb'] });
    const rb = qdq(g, 'rb', 0.03, 0);
    g.nodes.push({ op: 'Concat', inputs: [ra, rb], outputs: ['cat'], attrs: { axis: 1 } });
    const cat = qdq(g, 'cat', 0.03, 0);
    g.nodes.push({ op: 'Flatten', inputs: [cat], outputs: ['fl'], attrs: { axis: 1 } });
    const fl = qdq(g, 'fl', 0.03, 0);
    g.nodes.push({ op: 'Identity', inputs: [fl], outputs: ['y'] });
    return {
      ...g,
      inputs: [{ name: 'x', shape: [2, 2, 6, 6] }],
      outputs: [{ name: 'y' }],
      step: 0.03,
      expect: {
        qoperator: ['QLinearConv', 'Concat', 'Flatten', 'Clip'],
        integer: ['ConvInteger', 'Concat', 'Clip'],
      },
      absent: { qoperator: ['Relu', 'Conv'], integer: ['Relu', 'Conv'] },
    };
  },
};

for (const [name, make] of Object.entries(fixtures)) {
  test(`fixture ${name}: every mode agrees with ORT (at 'all' or optimizations off) within one output step`, async (t) => {
    if (!need(t, haveCli, cliMissing)) return;
    const f = make();
    const path = join(tmp, `${name}.onnx`);
    writeFileSync(
      path,
      buildModel({
        opset: 13,
        inputs: f.inputs,
        outputs: f.outputs,
        initializers: f.initializers,
        nodes: f.nodes,
      }),
    );
    const paths = [];
    for (const mode of MODES) {
      const { output } = await finalize(path, mode, name);
      paths.push(output);
      const m = readModel(readFileSync(output));
      const h = histogram(m);
      t.diagnostic(`${mode}: ${JSON.stringify(h)}`);
      const inits = new Set(m.initializers.map((x) => x.name));
      assert.ok(
        !m.nodes.some((n) => n.op === 'QuantizeLinear' && inits.has(n.inputs[0])),
        `${mode}: weight QuantizeLinear left`,
      );
      for (const op of f.expect[mode] ?? [])
        assert.ok(h[op] > 0, `${mode}: no ${op} in ${JSON.stringify(h)}`);
      for (const op of f.absent?.[mode] ?? []) assert.equal(h[op], undefined, `${mode}: ${op} left`);
      // Integer data movement: the op's input is an 8-bit tensor (no DequantizeLinear before it).
      if (mode !== 'qdq-clean') {
        const producers = new Map(m.nodes.flatMap((n) => n.outputs.map((o) => [o, n.op])));
        for (const n of m.nodes.filter((x) => ['MaxPool', 'Concat', 'Reshape', 'Flatten'].includes(x.op))) {
          assert.notEqual(
            producers.get(n.inputs[0]),
            'DequantizeLinear',
            `${mode}: ${n.op} still runs in float`,
          );
        }
      }
    }
    for (const seed of [1, 2, 3]) {
      const { expected, disabled, results } = await runAll(path, paths, { seed });
      MODES.forEach((mode, k) => {
        const d = maxAbsDiff([expected, disabled], results[k]);
        t.diagnostic(
          `seed ${seed} ${mode}: max |diff| ${d.toExponential(3)} = ${(d / f.step).toFixed(3)} output steps`,
        );
        assert.ok(
          d <= f.step * (1 + 1e-6),
          `${mode}: max |diff| ${d} is more than one output step ${f.step}`,
        );
      });
    }
  });
}

test('unknown --quant mode: clear error naming the valid modes, no output', async (t) => {
  if (!need(t, haveCli, cliMissing)) return;
  const path = join(tmp, 'unknown-mode.onnx');
  writeFileSync(path, buildModel(fixtures['gemm-matmul']()));
  const out = join(tmp, 'unknown-mode.out.onnx');
  await assert.rejects(run(cli, ['optimize', path, '-o', out, '--quant', 'qlinear']), (e) => {
    assert.equal(e.code, 1);
    assert.match(e.stderr, /unknown mode 'qlinear' \(valid modes: qoperator, integer, qdq-clean\)/);
    return true;
  });
  assert.ok(!existsSync(out));
});

// Cross-build determinism: the wasm package (dist/) and the native CLI (build/native/onnxfold, or
// ONNXFOLD_CLI) give byte-identical outputs for every shared model with the default pipeline, and
// for folds of the C library's functions (Cos, Exp, Softmax, ...: glibc natively, musl in wasm).
// On a difference the message names the first differing byte and the initializer or node around it.
// Skips with a reason when a build or the models are missing; fails instead when CI is set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli, dist, modelsDir, need } from './env.mjs';
import { buildModel, readModel } from './onnx-builder.mjs';

// Printable strings around `offset` (tensor and node names are stored as plain text nearby).
function context(bytes, offset) {
  const from = Math.max(0, offset - 200);
  const text = Buffer.from(bytes.subarray(from, Math.min(bytes.length, offset + 50))).toString('latin1');
  const names = text.match(/[\x20-\x7e]{4,}/g) || [];
  return names.slice(-4).join(' | ');
}

// 65,536 float32 values over [-lo, hi], evenly spaced, every one a different rounding case.
function spread(n, lo, hi) {
  return Float32Array.from({ length: n }, (_, i) => lo + ((hi - lo) * i) / (n - 1));
}

function compareBytes(what, native, wasm) {
  if (Buffer.compare(native, wasm) === 0) return;
  let i = 0;
  while (i < native.length && i < wasm.length && native[i] === wasm[i]) i++;
  assert.fail(
    `${what}: native ${native.length} bytes, wasm ${wasm.length} bytes, first difference at byte ${i} ` +
      `(near: ${context(native, i)})`,
  );
}

const models = existsSync(modelsDir)
  ? readdirSync(modelsDir)
      .filter((f) => f.endsWith('.onnx'))
      .sort()
  : [];

test('wasm and native outputs are byte-identical on every shared model', async (t) => {
  if (
    !need(
      t,
      existsSync(dist),
      `${dist} not built (cmake --preset wasm && cmake --build --preset wasm --target onnxfold_wasm)`,
    )
  )
    return;
  if (!need(t, existsSync(cli), `${cli} not built (cmake --preset native && cmake --build --preset native)`))
    return;
  if (!need(t, models.length > 0, `no models in ${modelsDir} (set ONNXFOLD_SHARED)`)) return;
  const { optimize } = await import('onnxfold');
  const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-det-'));
  try {
    for (const name of models) {
      await t.test(name, async () => {
        const out = join(tmp, name);
        execFileSync(cli, ['optimize', join(modelsDir, name), '-o', out, '-q'], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        const native = readFileSync(out);
        const { model: wasm } = await optimize(readFileSync(join(modelsDir, name)));
        compareBytes(name, native, wasm);
      });
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('folded math functions are byte-identical in wasm and natively', async (t) => {
  if (
    !need(
      t,
      existsSync(dist),
      `${dist} not built (cmake --preset wasm && cmake --build --preset wasm --target onnxfold_wasm)`,
    )
  )
    return;
  if (!need(t, existsSync(cli), `${cli} not built (cmake --preset native && cmake --build --preset native)`))
    return;
  const { optimize } = await import('onnxfold');
  const n = 1 << 16;
  // Each op reads the input that suits its domain: wide (rotary angles), moderate, or [-1, 1].
  const ops = {
    wide: ['Cos', 'Sin', 'Tan'],
    mid: [
      'Exp',
      'Tanh',
      'Erf',
      'Sinh',
      'Cosh',
      'Atan',
      'Asinh',
      'Sigmoid',
      'Softplus',
      'Elu',
      'Selu',
      'Mish',
      'Softmax',
      'LogSoftmax',
    ],
    unit: ['Asin', 'Acos', 'Atanh'],
    pos: ['Log', 'Acosh', 'Sqrt'],
  };
  const initializers = [
    { name: 'wide', type: 'float32', dims: [n], data: spread(n, -140000, 140000) },
    { name: 'mid', type: 'float32', dims: [n], data: spread(n, -30, 30) },
    { name: 'unit', type: 'float32', dims: [n], data: spread(n, -0.999, 0.999) },
    { name: 'pos', type: 'float32', dims: [n], data: spread(n, 1.001, 5000) },
  ];
  const nodes = [];
  for (const [input, list] of Object.entries(ops)) {
    for (const op of list) nodes.push({ op, inputs: [input], outputs: [`${op}_y`] });
  }
  nodes.push({ op: 'Pow', inputs: ['pos', 'mid'], outputs: ['Pow_y'] });
  const outputs = nodes.map((x) => ({ name: x.outputs[0], type: 'float32', shape: [n] }));
  const bytes = buildModel({ opset: 18, outputs, initializers, nodes });
  const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-det-math-'));
  try {
    const input = join(tmp, 'math.onnx');
    const out = join(tmp, 'math.opt.onnx');
    writeFileSync(input, bytes);
    const big = ['--size-budget', String(1 << 30)];
    execFileSync(cli, ['optimize', input, '-o', out, '-q', ...big], { stdio: ['ignore', 'ignore', 'pipe'] });
    const native = readFileSync(out);
    const { model: wasm } = await optimize(bytes, { sizeBudget: 1 << 30 });
    assert.equal(readModel(native).nodes.length, 0, 'every op folded');
    compareBytes('math.onnx', native, wasm);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

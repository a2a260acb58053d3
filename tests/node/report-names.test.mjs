// One spelling per report field: the aliases removed before 1.0 (CHANGELOG.md) must not come
// back, neither from parseReport (js/index.js) nor from the C++ report (api/summary.cpp, read
// here as optimizeFile's report file and the native CLI's --report). Walks whole reports of real
// runs, so an alias added under any key fails. Skips without the wasm build (CLI part: without
// the native build).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli, cliMissing, dist, haveCli, need, run } from './env.mjs';

// Removed names and their one spelling.
const REMOVED = {
  millis: 'passes[].ms',
  nodes_before: 'passes[].nodes[0]',
  nodes_after: 'passes[].nodes[1]',
  initializers_before: 'passes[].initializers[0]',
  initializers_after: 'passes[].initializers[1]',
  bytes_before: 'passes[].initializer_bytes[0]',
  bytes_after: 'passes[].initializer_bytes[1]',
  op_type: 'not_folded[].op',
  optimize_ms: 'timing_ms.optimize',
  read_ms: 'timing_ms.read',
  write_ms: 'timing_ms.write',
};
// host.read_ms / host.write_ms are the JS host's own figures (host.read, host.output), not aliases.
const ALLOWED = new Set(['host.read_ms', 'host.write_ms']);

function forbiddenKeys(value, path = '') {
  if (value === null || typeof value !== 'object') return [];
  const found = [];
  for (const [k, v] of Object.entries(value)) {
    const at = Array.isArray(value) ? `${path}[]` : path ? `${path}.${k}` : k;
    const key = Array.isArray(value) ? null : k;
    if (key !== null && Object.hasOwn(REMOVED, key) && !ALLOWED.has(at))
      found.push(`${at} (use ${REMOVED[key]})`);
    found.push(...forbiddenKeys(v, at));
  }
  return [...new Set(found)];
}

function checkReport(report, what) {
  assert.deepEqual(forbiddenKeys(report), [], `${what}: removed alias names`);
  // ...and the one spelling is there.
  assert.deepEqual(Object.keys(report.timing_ms), ['read', 'optimize', 'write'], `${what}: timing_ms`);
  assert.ok(report.passes.length > 0, `${what}: passes`);
  for (const p of report.passes) {
    assert.equal(typeof p.ms, 'number', `${what}: ${p.pass} ms`);
    for (const k of ['nodes', 'initializers', 'initializer_bytes']) {
      assert.ok(Array.isArray(p[k]) && p[k].length === 2, `${what}: ${p.pass} ${k}`);
    }
  }
  assert.ok(report.not_folded.length > 0, `${what}: the model leaves a node not folded`);
  for (const n of report.not_folded) assert.equal(typeof n.op, 'string', `${what}: not_folded op`);
}

// A constant Expand to 4096 floats: over a 1 KiB size budget it stays (a not_folded entry).
async function model() {
  const { buildModel } = await import('./onnx-builder.mjs');
  return buildModel({
    inputs: [{ name: 'X', type: 'float32', shape: [4096] }],
    outputs: [{ name: 'Y', type: 'float32', shape: [4096] }],
    initializers: [
      { name: 'C', type: 'float32', dims: [1], data: Float32Array.of(2) },
      { name: 'S', type: 'int64', dims: [1], data: BigInt64Array.of(4096n) },
    ],
    nodes: [
      { op: 'Expand', inputs: ['C', 'S'], outputs: ['E'] },
      { op: 'Mul', inputs: ['X', 'E'], outputs: ['Y'] },
    ],
  });
}
const options = { sizeBudget: 1024 };

test('test helper: forbiddenKeys finds the removed names anywhere but host', () => {
  const report = {
    host: { read_ms: 1, write_ms: 1 },
    read_ms: 1,
    passes: [{ millis: 1 }],
    not_folded: [{ op_type: 'A' }],
  };
  assert.deepEqual(forbiddenKeys(report).sort(), [
    'not_folded[].op_type (use not_folded[].op)',
    'passes[].millis (use passes[].ms)',
    'read_ms (use timing_ms.read)',
  ]);
});

test("the package's reports (optimize, optimizeFile and its report file) use one spelling per field", async (t) => {
  if (!need(t, existsSync(dist), `${dist} not built`)) return;
  const { optimize, optimizeFile } = await import('onnxfold');
  const bytes = await model();
  const { report } = await optimize(bytes, options);
  checkReport(report, 'optimize');
  assert.ok(report.host && typeof report.host.read_ms === 'number', 'host.read_ms is kept');

  const dir = mkdtempSync(join(tmpdir(), 'onnxfold-report-names-'));
  try {
    writeFileSync(join(dir, 'in.onnx'), bytes);
    const r = await optimizeFile(join(dir, 'in.onnx'), join(dir, 'out.onnx'), {
      ...options,
      report: join(dir, 'r.json'),
    });
    checkReport(r.report, 'optimizeFile');
    checkReport(JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8')), 'optimizeFile report file (C++ JSON)');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the native CLI's --report uses one spelling per field", async (t) => {
  if (!need(t, haveCli, cliMissing)) return;
  const dir = mkdtempSync(join(tmpdir(), 'onnxfold-report-names-'));
  try {
    writeFileSync(join(dir, 'in.onnx'), await model());
    await run(cli, [
      'optimize',
      join(dir, 'in.onnx'),
      '-o',
      join(dir, 'out.onnx'),
      '--size-budget',
      '1024',
      '--report',
      join(dir, 'r.json'),
      '--quiet',
    ]);
    checkReport(JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8')), 'CLI --report');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

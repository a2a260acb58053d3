// The report's per-phase profile: `io` (C++ side: source reads, sink writes) and `host` (JS layer:
// module load, the wasm call, host.read / host.output) add up with the report's byte counts, and
// their keys are the ones index.d.ts declares. Skips without the wasm build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dist, need, repoRoot } from './env.mjs';

// The keys of `field: { ... }` inside `export interface Report`, as index.d.ts declares them.
function nestedKeys(dts, field) {
  const report = dts.slice(dts.indexOf('export interface Report {'));
  const start = report.search(new RegExp(`^  ${field}\\??: \\{`, 'm'));
  assert.ok(start >= 0, `index.d.ts Report has no '${field}'`);
  const body = report.slice(start, report.indexOf('\n  };', start));
  return new Set([...body.matchAll(/^    (\w+): /gm)].map((m) => m[1]));
}

test('the report profiles I/O and the host calls consistently with its byte counts', async (t) => {
  if (!need(t, existsSync(dist), `${dist} not built`)) return;
  const { optimize } = await import('onnxfold');
  const { buildModel } = await import('./onnx-builder.mjs');
  const data = Float32Array.from({ length: 4096 }, (_, i) => i % 7);
  const bytes = buildModel({
    inputs: [{ name: 'X', type: 'float32', shape: [4096] }],
    outputs: [{ name: 'Y', type: 'float32', shape: [4096] }],
    initializers: [
      { name: 'C', type: 'float32', dims: [4096], data },
      { name: 'D', type: 'float32', dims: [4096], data },
    ],
    nodes: [
      { op: 'Neg', inputs: ['C'], outputs: ['N'] },
      { op: 'Add', inputs: ['X', 'N'], outputs: ['S'] },
      { op: 'Mul', inputs: ['S', 'D'], outputs: ['Y'] },
    ],
  });
  const { report, model, externalData } = await optimize(bytes, { externalDataThreshold: 1024 });
  const dts = readFileSync(join(repoRoot, 'js', 'index.d.ts'), 'utf8');
  for (const field of ['io', 'host']) {
    assert.deepEqual(new Set(Object.keys(report[field])), nestedKeys(dts, field), `report.${field} keys`);
    for (const [k, v] of Object.entries(report[field]))
      assert.ok(Number.isFinite(v) && v >= 0, `${field}.${k} = ${v}`);
  }
  const written = report.output_bytes + report.external_bytes;
  assert.ok(report.external_bytes > 0, 'the weights went to external data');
  assert.equal(written, model.length + Object.values(externalData).reduce((n, d) => n + d.length, 0));
  assert.equal(report.io.sink_write_bytes, written, 'every output byte passed through the timed sinks');
  assert.equal(report.host.write_bytes + report.host.copy_bytes, written, 'and through host.output');
  assert.ok(
    report.host.read_bytes >= report.input_bytes && report.host.reads >= 1,
    'the model was read through host.read',
  );
  assert.ok(report.io.write_source_read_ms <= report.io.source_read_ms);
  const stages = report.timing_ms.read + report.timing_ms.optimize + report.timing_ms.write;
  assert.ok(
    report.host.call_ms + 1 >= stages,
    `the wasm call (${report.host.call_ms} ms) holds the stages (${stages} ms)`,
  );
  assert.ok(report.host.compile_ms > 0 && report.host.instantiate_ms > 0, 'the module load was timed');
});

// The options are defined once (src/api/options.cpp): the CLI's flags, the npm package's option
// names and js/index.d.ts must all say the same. Skips without the builds; fails in CI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli, dist, haveCli, need, repoRoot, run } from './env.mjs';

const TS_TYPES = {
  integer: /^number$/,
  boolean: /^boolean$/,
  string: /^(string|QuantMode|QuantizeMode|QuantFormat)$/,
  'string[]': /^string\[\]$/,
  object: /^Record<string, /,
};

test('every option of the schema is in index.d.ts with its type, and nothing else is', async (t) => {
  if (!need(t, existsSync(dist), `${dist} not built`)) return;
  const { optionSchema } = await import('onnxfold');
  const schema = await optionSchema();
  assert.ok(schema.length >= 10);
  const dts = readFileSync(join(repoRoot, 'js', 'index.d.ts'), 'utf8');
  const body = dts.slice(
    dts.indexOf('export interface OptimizeOptions {'),
    dts.indexOf('export interface InspectOptions'),
  );
  const declared = new Map([...body.matchAll(/^  (\w+)\?: ([^;]+);/gm)].map((m) => [m[1], m[2].trim()]));
  for (const o of schema) {
    assert.ok(declared.has(o.name), `index.d.ts OptimizeOptions lacks '${o.name}'`);
    assert.match(declared.get(o.name), TS_TYPES[o.type], `${o.name}: ${o.type}`);
  }
  // The JS layer's own options, as js/options.js lists them (JS_OPTIONS), not restated here.
  const listed = /const JS_OPTIONS = \[([^\]]*)\]/.exec(
    readFileSync(join(repoRoot, 'js', 'options.js'), 'utf8'),
  );
  assert.ok(listed, 'js/options.js defines JS_OPTIONS');
  const jsOnly = [...listed[1].matchAll(/'(\w+)'/g)].map((m) => m[1]);
  assert.ok(jsOnly.includes('signal'), `JS_OPTIONS read: ${jsOnly}`);
  for (const name of declared.keys()) {
    assert.ok(
      schema.some((o) => o.name === name) || jsOnly.includes(name),
      `index.d.ts declares '${name}', which is no option`,
    );
  }
});

test("graph()'s options are the table's graph part, declared in index.d.ts and checked before any read", async (t) => {
  if (!need(t, existsSync(dist), `${dist} not built`)) return;
  const { graph, graphOptionSchema } = await import('onnxfold');
  const schema = await graphOptionSchema();
  assert.deepEqual(
    schema.map((o) => [o.name, o.type, o.default]),
    [
      ['nodeLimit', 'integer', 5000],
      ['modulesOnly', 'boolean', false],
    ],
  );
  const dts = readFileSync(join(repoRoot, 'js', 'index.d.ts'), 'utf8');
  const start = dts.indexOf('export interface GraphOptions extends InspectOptions {');
  const body = dts.slice(start, dts.indexOf('\n}\n', start));
  const declared = new Map([...body.matchAll(/^  (\w+)\?: ([^;]+);/gm)].map((m) => [m[1], m[2].trim()]));
  assert.deepEqual([...declared.keys()].sort(), schema.map((o) => o.name).sort());
  for (const o of schema) assert.match(declared.get(o.name), TS_TYPES[o.type], o.name);
  // A misspelt name is a TypeError before the model is read (the bytes are not a model); a
  // wrong type is the table's error.
  await assert.rejects(
    graph(new Uint8Array(4), { nodelimit: 10 }),
    (e) =>
      e instanceof TypeError &&
      /graph: unknown option 'nodelimit' \(known: nodeLimit, modulesOnly, externalData/.test(e.message),
  );
  await assert.rejects(
    graph(new Uint8Array(4), { nodeLimit: -1 }),
    /nodeLimit: expected a non-negative integer/,
  );
});

test('every option of the schema is a CLI flag of optimize', async (t) => {
  if (!need(t, existsSync(dist), `${dist} not built`) || !need(t, haveCli, `${cli} not built`)) return;
  const { optionSchema } = await import('onnxfold');
  const { stdout } = await run(cli, ['optimize', '--help']);
  for (const o of await optionSchema())
    assert.ok(stdout.includes(o.flag), `onnxfold optimize --help lacks ${o.flag}`);
  // A bad value is refused with the flag's name and exit status 2.
  await assert.rejects(
    run(cli, ['optimize', 'x.onnx', '-o', 'y.onnx', '--size-budget', 'big']),
    (e) => e.code === 2 && /--size-budget expects an integer/.test(e.stderr),
  );
});

// The reports too: every key optimize and splitConstants return is declared in index.d.ts, and
// every key declared as always present is there (the C++ side writes them: Report::toJson in
// src/api/summary.cpp, SplitReport::toJson in src/api/split_constants.cpp).
function declaredKeys(dts, name) {
  const start = dts.indexOf(`export interface ${name} {`);
  assert.ok(start >= 0, `index.d.ts has no interface ${name}`);
  const body = dts.slice(start, dts.indexOf('\n}\n', start));
  const keys = new Map();
  for (const m of body.matchAll(/^  (\w+)(\??): /gm)) keys.set(m[1], m[2] !== '?');
  return keys;
}

function assertMatches(actual, declared, what) {
  for (const key of Object.keys(actual))
    assert.ok(declared.has(key), `${what}: '${key}' is not declared in index.d.ts`);
  for (const [key, required] of declared) {
    if (required) assert.ok(key in actual, `${what}: '${key}' is declared but missing`);
  }
}

test('optimize and splitConstants reports match their index.d.ts interfaces', async (t) => {
  if (!need(t, existsSync(dist), `${dist} not built`)) return;
  const { optimize, splitConstants, graph } = await import('onnxfold');
  const { buildModel } = await import('./onnx-builder.mjs');
  const bytes = buildModel({
    inputs: [{ name: 'X', type: 'float32', shape: [3] }],
    outputs: [{ name: 'Y', type: 'float32', shape: [3] }],
    initializers: [{ name: 'C', type: 'float32', dims: [3], data: Float32Array.from([1, 2, 3]) }],
    nodes: [
      { op: 'Neg', inputs: ['C'], outputs: ['N'] },
      { op: 'Add', inputs: ['X', 'N'], outputs: ['Y'] },
    ],
  });
  const dts = readFileSync(join(repoRoot, 'js', 'index.d.ts'), 'utf8');
  const { report } = await optimize(bytes);
  assertMatches(report, declaredKeys(dts, 'Report'), 'Report');
  assert.ok(report.passes.length > 0);
  for (const p of report.passes) assertMatches(p, declaredKeys(dts, 'PassRun'), 'PassRun');
  assertMatches(report.before, declaredKeys(dts, 'ModelSummary'), 'ModelSummary');
  const split = await splitConstants(bytes);
  assertMatches(split.report, declaredKeys(dts, 'SplitReport'), 'SplitReport');
  const view = await graph(bytes);
  assertMatches(view, declaredKeys(dts, 'GraphView'), 'GraphView');
  for (const n of view.nodes) assertMatches(n, declaredKeys(dts, 'GraphNode'), 'GraphNode');
  for (const m of view.modules) assertMatches(m, declaredKeys(dts, 'GraphModule'), 'GraphModule');
  const coarse = await graph(bytes, { modulesOnly: true });
  assert.equal(coarse.level, 'modules');
  assert.equal(coarse.nodes, undefined);
});

test("each option's schema default is what leaving it out gives, and an enumeration refuses other values", async (t) => {
  if (!need(t, existsSync(dist), `${dist} not built`)) return;
  const { optimize, optionSchema } = await import('onnxfold');
  const model = readFileSync(join(repoRoot, 'examples', 'conv1d_m5.onnx'));
  const bytes = async (options) => Buffer.from((await optimize(model, options)).model);
  const plain = await bytes({});
  for (const o of await optionSchema()) {
    // `passes: []` asks for the default pipeline, as leaving it out does.
    assert.ok(
      plain.equals(await bytes({ [o.name]: o.default })),
      `${o.name}: ${JSON.stringify(o.default)} is not its default`,
    );
    for (const v of o.values) assert.equal(typeof v, 'string', o.name);
    if (o.values.length) {
      await assert.rejects(optimize(model, { [o.name]: 'no-such-value' }), new RegExp(`${o.name}`), o.name);
    }
  }
});

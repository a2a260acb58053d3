// Unflatten through the native CLI, checked by the ONNX Runtime oracle:
// `tree` recovers the module hierarchy, outline-functions turns repeated blocks
// into one local function called many times (ORT must load and run it, and it
// must compute the same), inline-functions undoes it, and split-constants gives
// prep + main models that, chained in ORT, compute what the original does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import ort from 'onnxruntime-node';
import { cli, cliMissing, haveCli, modelsDir, need, run } from './env.mjs';
import { assertEquivalent, compareTensors, makeInputs } from './oracle.mjs';

const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-unflatten-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

const model = (name) => join(modelsDir, name);
const ready = (t, name) =>
  need(t, haveCli, cliMissing) && need(t, existsSync(model(name)), `${model(name)} is missing`);

async function cliJson(args) {
  const { stdout } = await run(cli, args, { maxBuffer: 64 << 20 });
  return JSON.parse(stdout);
}

async function outline(name, extra = []) {
  const out = join(tmp, name.replace(/\.onnx$/, '.outlined.onnx'));
  await run(cli, [
    'optimize',
    model(name),
    '-o',
    out,
    '--passes',
    'outline-functions',
    '--verify',
    '-q',
    ...extra,
  ]);
  const info = await cliJson(['info', out, '--json']);
  const calls = Object.entries(info.op_histogram).filter(([op]) => op.startsWith('onnxfold.modules::'));
  return { out, info, calls: Object.fromEntries(calls) };
}

const MINIBERT = 'minibert.op14.nofold.onnx';

test('tree: minibert shows its 4 encoder layers', async (t) => {
  if (!ready(t, MINIBERT)) return;
  const tree = await cliJson(['tree', model(MINIBERT), '--json']);
  const enc = tree.children.find((c) => c.path === '/enc');
  assert.ok(enc, 'module /enc');
  assert.deepEqual(
    enc.children.map((c) => c.path),
    [0, 1, 2, 3].map((i) => `/enc/layers.${i}`),
  );
  for (const layer of enc.children) {
    assert.equal(layer.nodes, enc.children[0].nodes, `${layer.path} has as many nodes as layer 0`);
    assert.ok(layer.param_bytes > 0 && layer.ops.MatMul > 0, `${layer.path} has weights and MatMuls`);
    assert.ok(
      layer.children.some((c) => c.name === 'self_attn'),
      `${layer.path}/self_attn`,
    );
  }
  assert.equal(tree.nodes, (await cliJson(['info', model(MINIBERT), '--json'])).nodes);
  const { stdout } = await run(cli, ['tree', model(MINIBERT), '--depth', '2']);
  assert.match(stdout, /^ {4}\/enc\/layers\.3 {2}\d+ nodes/m);
  assert.doesNotMatch(stdout, /self_attn/, "--depth 2 stops above the layers' children");
});

test("optimize --report carries the input's module tree (3 levels)", async (t) => {
  if (!ready(t, MINIBERT)) return;
  const report = join(tmp, 'minibert.report.json');
  await run(cli, [
    'optimize',
    model(MINIBERT),
    '-o',
    join(tmp, 'minibert.opt.onnx'),
    '--report',
    report,
    '-q',
  ]);
  const { modules } = JSON.parse(readFileSync(report, 'utf8'));
  const tree = await cliJson(['tree', model(MINIBERT), '--json']);
  assert.equal(modules.nodes, tree.nodes);
  const enc = modules.children.find((c) => c.path === '/enc');
  assert.deepEqual(
    enc.children.map((c) => c.path),
    [0, 1, 2, 3].map((i) => `/enc/layers.${i}`),
  );
  assert.ok(enc.children[0].children.length > 0, 'third level present');
  assert.ok(
    enc.children[0].children.every((c) => (c.children ?? []).length === 0),
    'nothing below level 3',
  );
});

test('outline: minibert layers become one function called 4 times, equivalent; inline undoes it', async (t) => {
  if (!ready(t, MINIBERT)) return;
  const { out, info, calls } = await outline(MINIBERT);
  assert.equal(info.functions, 1);
  assert.deepEqual(Object.values(calls), [4]);
  assert.ok(info.opsets['onnxfold.modules'] >= 1, 'the model imports the function domain');
  await assertEquivalent(model(MINIBERT), out);

  const back = join(tmp, 'minibert.inlined.onnx');
  await run(cli, ['optimize', out, '-o', back, '--passes', 'inline-functions', '--verify', '-q']);
  const backInfo = await cliJson(['info', back, '--json']);
  const origInfo = await cliJson(['info', model(MINIBERT), '--json']);
  assert.equal(backInfo.functions, 0);
  assert.deepEqual(backInfo.op_histogram, origInfo.op_histogram);
  assert.equal(backInfo.opsets['onnxfold.modules'], undefined);
  await assertEquivalent(model(MINIBERT), back);
  // The tree comes back too: the inlined nodes get their module paths again.
  assert.deepEqual(
    await cliJson(['tree', back, '--json']),
    await cliJson(['tree', model(MINIBERT), '--json']),
  );
});

for (const name of ['shufflenet_v2_x1_0.op17.nofold.onnx', 'mobilenet_v2.op13.nofold.onnx']) {
  test(`outline: ${name} blocks become deduplicated functions, equivalent`, async (t) => {
    if (!ready(t, name)) return;
    const { out, info, calls } = await outline(name);
    const counts = Object.values(calls);
    assert.ok(info.functions >= 1, 'at least one function');
    assert.equal(counts.length, info.functions, 'every function is called');
    assert.ok(
      counts.every((k) => k >= 2),
      `every function is called at least twice: ${JSON.stringify(calls)}`,
    );
    assert.ok(
      info.nodes < (await cliJson(['info', model(name), '--json'])).nodes / 2,
      'far fewer top-level nodes',
    );
    await assertEquivalent(model(name), out);
    const back = join(tmp, name.replace(/\.onnx$/, '.inlined.onnx'));
    await run(cli, ['optimize', out, '-o', back, '--passes', 'inline-functions', '-q']);
    await assertEquivalent(model(name), back);
  });
}

test('outline: depth 1 makes every top-level module a call, still equivalent', async (t) => {
  if (!ready(t, MINIBERT)) return;
  const { out, info, calls } = await outline(MINIBERT, ['--extra', 'outline-functions.depth=1']);
  const tree = await cliJson(['tree', model(MINIBERT), '--json']);
  const total = Object.values(calls).reduce((a, b) => a + b, 0);
  assert.equal(total, tree.children.length, 'one call per top-level module');
  assert.ok(info.functions < total, 'the one-node Gather modules share a body');
  await assertEquivalent(model(MINIBERT), out);
  // A bad setting fails the run before any pass (it is not a skipped pass), and writes nothing.
  await assert.rejects(
    run(cli, [
      'optimize',
      model(MINIBERT),
      '-o',
      join(tmp, 'bad.onnx'),
      '--passes',
      'outline-functions',
      '--extra',
      'outline-functions.depth=deep',
      '-q',
    ]),
    (e) => e.code === 1 && /error: .*outline-functions\.depth.*'deep'/.test(e.stderr),
  );
  await assert.rejects(
    run(cli, [
      'optimize',
      model(MINIBERT),
      '-o',
      join(tmp, 'bad.onnx'),
      '--extra',
      'outline-functions.deep=1',
      '-q',
    ]),
    (e) => e.code === 1 && /pass 'outline-functions' has no setting 'deep'/.test(e.stderr),
  );
  assert.ok(!existsSync(join(tmp, 'bad.onnx')));
});

for (const name of [MINIBERT, 'mobilenet_v2.op13.nofold.onnx']) {
  test(`outline nested: ${name} gets functions calling functions, equivalent; inline undoes it`, async (t) => {
    if (!ready(t, name)) return;
    const out = join(tmp, name.replace(/\.onnx$/, '.nested.onnx'));
    await run(cli, [
      'optimize',
      model(name),
      '-o',
      out,
      '--passes',
      'outline-functions',
      '--extra',
      'outline-functions.nested=1',
      '--verify',
      '-q',
    ]);
    const flat = await outline(name);
    const info = await cliJson(['info', out, '--json']);
    assert.ok(info.functions > flat.info.functions, 'nesting adds functions inside the bodies');
    await assertEquivalent(model(name), out);
    const back = join(tmp, name.replace(/\.onnx$/, '.nested.inlined.onnx'));
    await run(cli, ['optimize', out, '-o', back, '--passes', 'inline-functions', '--verify', '-q']);
    assert.deepEqual(
      (await cliJson(['info', back, '--json'])).op_histogram,
      (await cliJson(['info', model(name), '--json'])).op_histogram,
    );
    await assertEquivalent(model(name), back);
  });
}

// Runs prep (no inputs: its weights are initializers), then main with prep's outputs fed
// by name, and compares main's outputs with the original's on the same random inputs.
async function chainPrepMain(original, prep, main) {
  const opts = { executionProviders: ['cpu'], graphOptimizationLevel: 'disabled', logSeverityLevel: 3 };
  const orig = await ort.InferenceSession.create(original, opts);
  const p = await ort.InferenceSession.create(prep, opts);
  const m = await ort.InferenceSession.create(main, opts);
  try {
    const feeds = makeInputs(orig, { seed: 7 });
    const expected = await orig.run(feeds);
    assert.deepEqual(p.inputNames, [], 'prep needs no inputs');
    const values = await p.run({});
    assert.ok(p.outputNames.length > 0);
    const mainFeeds = { ...feeds };
    for (const n of p.outputNames) mainFeeds[n] = values[n];
    const actual = await m.run(mainFeeds);
    assert.deepEqual(m.outputNames, orig.outputNames);
    for (const n of orig.outputNames) {
      const c = compareTensors(n, expected[n], actual[n]);
      assert.ok(!c.error && !c.mismatches, `${n}: ${c.error ?? `${c.mismatches} mismatches`}`);
    }
    return p.outputNames.length;
  } finally {
    await orig.release?.();
    await p.release?.();
    await m.release?.();
  }
}

for (const name of ['mobilenet_v2.op13.nofold.onnx', MINIBERT]) {
  test(`split-constants: ${name} prep then main equals the original`, async (t) => {
    if (!ready(t, name)) return;
    const prep = join(tmp, name.replace(/\.onnx$/, '.prep.onnx'));
    const main = join(tmp, name.replace(/\.onnx$/, '.main.onnx'));
    const before = readFileSync(model(name));
    const report = await cliJson(['split-constants', model(name), '--prep', prep, '--main', main, '--json']);
    assert.ok(readFileSync(model(name)).equals(before), 'the input was not modified');
    assert.equal(report.values.length, await chainPrepMain(model(name), prep, main));
    assert.ok(report.main_nodes < report.original_nodes);
    // main alone (its inputs backed by the computed initializers) is equivalent too.
    await assertEquivalent(model(name), main);
  });
}

test('split-constants refuses to overwrite its input and writes nothing on failure', async (t) => {
  if (!ready(t, MINIBERT)) return;
  const main = join(tmp, 'never.onnx');
  await assert.rejects(
    run(cli, ['split-constants', model(MINIBERT), '--prep', model(MINIBERT), '--main', main]),
    (e) => {
      assert.equal(e.code, 1);
      assert.match(e.stderr, /never overwrites its input/);
      return true;
    },
  );
  assert.ok(!existsSync(main));
});

// The npm package's JS API (js/index.js over dist/onnxfold.{mjs,wasm}): every input type, options,
// progress, cancellation, errors (real Errors, module usable afterwards), external data in and out,
// inspect/passes/version. Outputs are checked with the ONNX Runtime oracle (tests/node/oracle.mjs).
// Skips with a reason when dist/ is not built; fails instead when CI is set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { cli, dist, modelsDir, need } from './env.mjs';

const smallModel = join(modelsDir, 'conv1d_m5.op14.nofold.onnx');

const haveDist = (t) =>
  need(
    t,
    existsSync(dist),
    `${dist} not built (cmake --preset wasm && cmake --build --preset wasm --target onnxfold_wasm)`,
  );
const haveModels = (t) =>
  need(t, existsSync(smallModel), `${smallModel} missing (shared models; set ONNXFOLD_SHARED)`);

const api = () => import('onnxfold');
const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-api-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

// Results are Blobs when an input was a Blob (parts that refer to the input), else Uint8Arrays.
const bytesOf = async (b) => (b instanceof Blob ? new Uint8Array(await b.arrayBuffer()) : b);

async function equivalent(origBytes, optBytes, name, extra = {}) {
  const { compareModels } = await import('./oracle.mjs');
  optBytes = await bytesOf(optBytes);
  for (const k of Object.keys(extra)) extra[k] = await bytesOf(extra[k]);
  const dir = mkdtempSync(join(tmp, name + '-'));
  const a = join(dir, 'orig.onnx');
  const b = join(dir, 'opt.onnx');
  writeFileSync(a, origBytes);
  writeFileSync(b, optBytes);
  for (const [location, data] of Object.entries(extra)) writeFileSync(join(dir, location), data);
  const r = await compareModels(a, b);
  assert.ok(r.equivalent ?? r.ok ?? true, `not equivalent: ${JSON.stringify(r).slice(0, 500)}`);
  return r;
}

test('version and passes', async (t) => {
  if (!haveDist(t)) return;
  const { version, passes } = await api();
  assert.match(await version(), /^\d+\.\d+\.\d+/);
  const p = await passes();
  assert.ok(Array.isArray(p.available) && p.available.includes('fold-constants'));
  assert.ok(p.default.length > 0 && p.default.every((name) => p.available.includes(name)));
});

test('optimize: every input type gives the same model, equivalent to the original', async (t) => {
  if (!haveDist(t) || !haveModels(t)) return;
  const { optimize } = await api();
  const bytes = readFileSync(smallModel);
  const u8 = new Uint8Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  const shifted = new Uint8Array(u8.length + 3); // a view that does not start its buffer
  shifted.set(u8, 3);
  const inputs = {
    Buffer: bytes,
    Uint8Array: u8,
    ArrayBuffer: u8.buffer,
    'offset view': shifted.subarray(3),
    DataView: new DataView(shifted.buffer, 3, u8.length),
    Blob: new Blob([u8.subarray(0, 1000), u8.subarray(1000)]),
  };
  let first;
  for (const [kind, input] of Object.entries(inputs)) {
    const r = await optimize(input);
    const { externalData, report } = r;
    assert.ok(kind === 'Blob' ? r.model instanceof Blob : r.model instanceof Uint8Array, kind);
    const model = await bytesOf(r.model);
    assert.deepEqual(externalData, {}, kind);
    if (first === undefined) {
      first = model;
      assert.ok(report.after.nodes < report.before.nodes, 'the default pipeline removes nodes');
      assert.equal(report.after.op_histogram.BatchNormalization, undefined);
      assert.equal(report.input_bytes, u8.length);
      assert.equal(report.output_bytes, model.length);
      assert.ok(report.passes.length > 0 && typeof report.passes[0].ms === 'number');
      // One way of counting: the first pass starts where the summary ends, the last ends there.
      assert.equal(report.passes[0].nodes[0], report.before.nodes);
      assert.equal(report.passes.at(-1).nodes[1], report.after.nodes);
      assert.ok(Array.isArray(report.not_folded) && report.not_folded.every((n) => n.op && n.reason));
      await equivalent(u8, model, 'types');
    } else {
      assert.deepEqual(model, first, `${kind} gives the same bytes`);
    }
  }
  assert.deepEqual(u8, new Uint8Array(readFileSync(smallModel)), 'the input is not modified');
});

test('optimize: options reach the pipeline', async (t) => {
  if (!haveDist(t) || !haveModels(t)) return;
  const { optimize, OnnxfoldError } = await api();
  const bytes = readFileSync(smallModel);
  const { report } = await optimize(bytes, {
    passes: ['eliminate-identity', 'dce'],
    maxIterations: 1,
    verify: true,
  });
  assert.deepEqual([...new Set(report.passes.map((p) => p.pass))], ['eliminate-identity', 'dce']);
  assert.equal(report.after.op_histogram.Identity, undefined);
  assert.ok(report.after.op_histogram.BatchNormalization > 0, 'no folding ran');
  // A zero size budget keeps folds that add bytes from happening.
  const tight = await optimize(bytes, {
    sizeBudget: 0,
    constructorBudget: 0,
    preserve: ['*'],
    extra: { 'convert-float16.block': 'Exp' },
  });
  assert.ok(tight.report.after.nodes > 0);
  // --extra settings are checked before the run: a key no pass reads is an error, not ignored.
  await assert.rejects(
    optimize(bytes, { extra: { 'cse.enabled': '1' } }),
    (e) => e instanceof OnnxfoldError && /pass 'cse' has no setting 'enabled'/.test(e.message),
  );

  await assert.rejects(
    optimize(bytes, { passes: ['no-such-pass'] }),
    (e) => e instanceof OnnxfoldError && e instanceof Error && /no-such-pass/.test(e.message),
  );
  await assert.rejects(
    optimize(bytes, { sizeBudgett: 1 }),
    (e) => e instanceof TypeError && /sizeBudgett/.test(e.message),
  );
  await assert.rejects(
    optimize(bytes, { sizeBudget: 'big' }),
    (e) => e instanceof OnnxfoldError && /sizeBudget/.test(e.message),
  );
  await assert.rejects(
    optimize(bytes, { quant: 'no-such-mode' }),
    (e) => e instanceof OnnxfoldError && /quant/.test(e.message),
  );
  await assert.rejects(optimize(bytes, { onProgress: 3 }), TypeError);
  await assert.rejects(optimize(42), (e) => e instanceof TypeError && /Uint8Array/.test(e.message));
  // In node a string is a file path.
  await assert.rejects(
    optimize(join(tmp, 'no-such.onnx')),
    (e) => e instanceof OnnxfoldError && /no-such\.onnx/.test(e.message),
  );
  await assert.rejects(optimize(bytes, { output: 'file' }), TypeError);
});

test('optimize: onProgress goes forward from read to write', async (t) => {
  if (!haveDist(t) || !haveModels(t)) return;
  const { optimize } = await api();
  const seen = [];
  await optimize(readFileSync(smallModel), { onProgress: (p) => seen.push(p) });
  assert.ok(seen.length >= 5, `called ${seen.length} times`);
  for (let i = 1; i < seen.length; i++)
    assert.ok(seen[i].fraction >= seen[i - 1].fraction, `fraction decreased at ${i}`);
  assert.ok(
    seen.some((p) => p.fraction > 0 && p.fraction < 1),
    'intermediate fractions',
  );
  assert.equal(seen[0].stage, 'read');
  assert.equal(seen.at(-1).stage, 'write');
  assert.equal(seen.at(-1).fraction, 1);
  assert.ok(seen.some((p) => p.stage === 'optimize' && p.pass === 'fold-constants'));
});

test('optimize: AbortSignal cancels, and the module keeps working', async (t) => {
  if (!haveDist(t) || !haveModels(t)) return;
  const { optimize } = await api();
  const bytes = readFileSync(smallModel);
  await assert.rejects(
    optimize(bytes, { signal: AbortSignal.abort() }),
    (e) => e.name === 'AbortError' && e instanceof Error,
  );

  const controller = new AbortController();
  let passesSeen = 0;
  await assert.rejects(
    optimize(bytes, {
      signal: controller.signal,
      onProgress: (p) => {
        if (p.stage === 'optimize' && ++passesSeen === 2) controller.abort();
      },
    }),
    (e) => e.name === 'AbortError',
  );
  assert.equal(passesSeen, 2, 'no pass started after the abort');

  // An exception in onProgress stops the job and is what the call rejects with.
  const boom = new Error('boom');
  await assert.rejects(
    optimize(bytes, {
      onProgress: () => {
        throw boom;
      },
    }),
    (e) => e === boom,
  );

  const { report } = await optimize(bytes);
  assert.ok(report.after.nodes > 0);
});

test('errors are real Errors with useful messages; the module works afterwards', async (t) => {
  if (!haveDist(t) || !haveModels(t)) return;
  const { optimize, inspect, OnnxfoldError } = await api();
  const good = readFileSync(smallModel);
  const bad = [
    [new Uint8Array([1, 2, 3, 4]), /field|ModelProto|truncated|end of/i],
    [good.subarray(0, good.length - 100), /truncated|end|length|ModelProto|field/i],
    [new Uint8Array(0), /graph|empty|ModelProto/i],
  ];
  for (const [bytes, pattern] of bad) {
    await assert.rejects(optimize(bytes), (e) => {
      assert.ok(e instanceof OnnxfoldError && e instanceof Error, `${e}`);
      assert.match(e.message, pattern);
      assert.ok(e.message.startsWith('optimize: '));
      return true;
    });
    await assert.rejects(inspect(bytes), OnnxfoldError);
  }
  // A Blob too large for JS memory where it cannot be read range by range: says what to do.
  class HugeBlob extends Blob {
    get size() {
      return 5 * 2 ** 30;
    }
  }
  await assert.rejects(
    optimize(new HugeBlob([good])),
    (e) => e instanceof OnnxfoldError && /Worker|file path/.test(e.message),
  );
  // Without FileReaderSync (node, a page's main thread) a Blob is read into JS memory first: one
  // too large for that says what to do instead.
  await assert.rejects(
    optimize(good, { externalData: { 'w.bin': new HugeBlob([]) } }),
    (e) => e instanceof OnnxfoldError && /w\.bin/.test(e.message) && /Worker|file path/.test(e.message),
  );
  const { model } = await optimize(good);
  assert.ok(model.length > 0);
  assert.equal((await inspect(good)).nodes, 22);
});

test('inspect: summary of bytes and Blobs', async (t) => {
  if (!haveDist(t) || !haveModels(t)) return;
  const { inspect } = await api();
  const bytes = readFileSync(smallModel);
  const s = await inspect(new Blob([bytes]));
  assert.equal(s.nodes, 22);
  assert.equal(s.op_histogram.BatchNormalization, 4);
  assert.deepEqual(
    s.inputs.map((i) => i.name),
    ['waveform'],
  );
  assert.deepEqual(await inspect(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)), s);
});

test('external data: written out, read back from buffers and Blobs, and from files', async (t) => {
  if (!haveDist(t) || !haveModels(t)) return;
  const { optimize, optimizeFile, inspect, OnnxfoldError } = await api();
  const orig = readFileSync(smallModel);
  const inline = (await optimize(orig)).model;

  // Out: tensors >= 1 KiB go to 'weights.bin'.
  const ext = await optimize(orig, { externalDataThreshold: 1024, externalDataLocation: 'weights.bin' });
  assert.deepEqual(Object.keys(ext.externalData), ['weights.bin']);
  assert.ok(ext.externalData['weights.bin'].length > 50_000);
  assert.ok(ext.model.length < 10_000, `model is ${ext.model.length} bytes without its weights`);
  assert.equal(ext.report.external_bytes, ext.externalData['weights.bin'].length);
  assert.ok((await inspect(ext.model, { externalData: ext.externalData })).external_initializers > 0);
  await equivalent(orig, ext.model, 'ext-out', ext.externalData);

  // In: the same weights as a Uint8Array, an ArrayBuffer or a Blob; inline output again.
  for (const data of [
    ext.externalData['weights.bin'],
    ext.externalData['weights.bin'].slice().buffer,
    new Blob([ext.externalData['weights.bin']]),
  ]) {
    const back = await optimize(ext.model, {
      externalData: { 'weights.bin': data },
      externalDataThreshold: 1 << 30,
      externalDataLocation: 'unused.bin',
    });
    assert.deepEqual(back.externalData, {});
    assert.deepEqual(await bytesOf(back.model), inline, 'round trip gives the inline result');
  }
  // Missing file: the error names the location.
  await assert.rejects(
    optimize(ext.model),
    (e) => e instanceof OnnxfoldError && /weights\.bin/.test(e.message) && /external/.test(e.message),
  );
  await assert.rejects(
    optimize(ext.model, { externalData: { 'other.bin': new Uint8Array(4) } }),
    /weights\.bin.*other\.bin|other\.bin/,
  );
  // External input, no name given for the output's external data: it keeps its weights
  // external under the default name.
  const dflt = await optimize(ext.model, { externalData: ext.externalData });
  assert.deepEqual(Object.keys(dflt.externalData), ['model.onnx.data']);
  await equivalent(orig, dflt.model, 'ext-default-name', dflt.externalData);

  // Files (node): external data is read from the model's folder and written beside the output.
  const dir = mkdtempSync(join(tmp, 'files-'));
  writeFileSync(join(dir, 'm.onnx'), ext.model);
  writeFileSync(join(dir, 'weights.bin'), ext.externalData['weights.bin']);
  const r = await optimizeFile(join(dir, 'm.onnx'), join(dir, 'out.onnx'), {
    externalDataLocation: 'out.bin',
  });
  assert.deepEqual(r.outputs, [join(dir, 'out.onnx'), join(dir, 'out.bin')]);
  await equivalent(orig, readFileSync(join(dir, 'out.onnx')), 'ext-files', {
    'out.bin': readFileSync(join(dir, 'out.bin')),
  });
  await assert.rejects(
    optimizeFile(join(dir, 'm.onnx'), join(dir, 'm.onnx')),
    /output '.*m\.onnx' is the input model; onnxfold never overwrites its input/,
  );
  await assert.rejects(
    optimizeFile(join(dir, 'missing.onnx'), join(dir, 'x.onnx')),
    (e) => e instanceof Error && /missing\.onnx/.test(e.message),
  );
});

test('external data made by the native CLI (--external-data-threshold) is read from buffers', async (t) => {
  if (!haveDist(t) || !haveModels(t)) return;
  if (!need(t, existsSync(cli), `${cli} not built (cmake --preset native && cmake --build --preset native)`))
    return;
  const { optimize } = await api();
  const dir = mkdtempSync(join(tmp, 'cli-'));
  execFileSync(cli, [
    'optimize',
    smallModel,
    '-o',
    join(dir, 'm.onnx'),
    '--passes',
    'dce',
    '--external-data-threshold',
    '256',
    '--external-data-location',
    'm.data',
    '-q',
  ]);
  const model = readFileSync(join(dir, 'm.onnx'));
  const { model: out, report } = await optimize(model, {
    externalData: { 'm.data': new Blob([readFileSync(join(dir, 'm.data'))]) },
    externalDataThreshold: 256,
    externalDataLocation: 'o.data',
  });
  assert.ok(report.before.external_initializers > 0);
  assert.ok(report.after.external_initializers > 0 || report.external_bytes > 0);
  const res = await optimize(await bytesOf(out), {
    externalData: (
      await optimize(model, {
        externalData: { 'm.data': readFileSync(join(dir, 'm.data')) },
        externalDataThreshold: 256,
        externalDataLocation: 'o.data',
      })
    ).externalData,
    externalDataThreshold: 1 << 30,
    externalDataLocation: 'x',
  });
  await equivalent(readFileSync(smallModel), res.model, 'cli-ext');
});

test('moduleTree, graph and splitConstants: typed results, or a clear error when not in this build', async (t) => {
  if (!haveDist(t) || !haveModels(t)) return;
  const { moduleTree, splitConstants, OnnxfoldError } = await api();
  const bytes = readFileSync(smallModel);
  try {
    const tree = await moduleTree(new Blob([bytes]));
    assert.equal(tree.path, '');
    assert.equal(tree.nodes, 22);
    assert.ok(Array.isArray(tree.children));
  } catch (e) {
    assert.ok(e instanceof OnnxfoldError && /not available in this build/.test(e.message), String(e));
  }
  // graph: the nodes for display, or only modules above nodeLimit.
  const { graph } = await api();
  const view = await graph(bytes);
  assert.equal(view.level, 'nodes');
  assert.equal(view.nodes.length, view.nodes_total);
  assert.ok(view.nodes.every((n) => typeof n.id === 'string' && typeof n.op === 'string'));
  assert.equal((await graph(bytes, { nodeLimit: 1 })).level, 'modules');
  await assert.rejects(graph(bytes, { nodeLimit: 'many' }), /nodeLimit/);
  try {
    const r = await splitConstants(bytes);
    assert.ok(r.prep instanceof Uint8Array && r.main instanceof Uint8Array);
  } catch (e) {
    assert.ok(
      e instanceof OnnxfoldError && /not available in this build|splitConstants/.test(e.message),
      String(e),
    );
  }
});

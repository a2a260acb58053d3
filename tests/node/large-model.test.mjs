// Weights outside the wasm heap (issue: LLM-sized models in the browser and in node). A Llama-shaped
// decoder with external data, made by ../shared/tools/make_llm.py, is optimized by the npm package:
// - with a memory limit several times smaller than its weights, in a fresh process (the heap only
//   grows, so a fresh instance's heap size is this run's peak): the report's peak heap stays under
//   the limit and the result is equivalent under the ONNX Runtime oracle;
// - to two outputs in one folder: each gets its own data file, both load and are equivalent;
// - with a per-file limit: chunked data files, equivalent; and never over the input's data;
// - from Blobs (output as a Blob of parts) and byte-identical to the native CLI.
// Skips with a reason when dist/, the CLI or Debian's python3-onnx is missing; fails in CI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  openAsBlob,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli, dist, haveCli, havePythonOnnx, makeLlm, need, python, repoRoot, run } from './env.mjs';
import { assertEquivalent } from './oracle.mjs';

const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-large-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

function ready(t) {
  return (
    need(t, existsSync(dist), `${dist} not built (cmake --preset wasm && cmake --build --preset wasm)`) &&
    need(t, existsSync(makeLlm), `${makeLlm} missing (shared tools; set ONNXFOLD_SHARED)`) &&
    need(t, havePythonOnnx(), 'Debian python3-onnx / python3-numpy not installed (scripts/bootstrap)')
  );
}

// 4 layers, hidden 768, vocab 8000: 152 MB of float32 weights in llm.onnx.data.
let made;
function llm() {
  if (made) return made;
  const dir = join(tmp, 'in');
  execFileSync('mkdir', ['-p', dir]);
  const model = join(dir, 'llm.onnx');
  execFileSync(
    python,
    [
      makeLlm,
      '--layers',
      '4',
      '--hidden',
      '768',
      '--heads',
      '12',
      '--kv-heads',
      '6',
      '--ffn',
      '2048',
      '--vocab',
      '8000',
      '--out',
      model,
    ],
    { stdio: 'ignore' },
  );
  made = { dir, model, data: `${model}.data`, dataBytes: statSync(`${model}.data`).size };
  return made;
}

const LIMIT = 40 << 20;

test('a model 3.5x the memory limit: peak heap under the limit, equivalent', async (t) => {
  if (!ready(t)) return;
  const { model, dataBytes } = llm();
  assert.ok(dataBytes > 3.5 * LIMIT, `weights ${dataBytes} B vs limit ${LIMIT} B`);
  const out = join(tmp, 'capped.onnx');
  // A fresh process: its module's heap is this run's alone.
  const script = `import { optimizeFile } from 'onnxfold';
    const { report, outputs } = await optimizeFile(${JSON.stringify(model)}, ${JSON.stringify(out)}, { memoryLimit: ${LIMIT} });
    console.log(JSON.stringify({ memory: report.memory, outputs }));`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: repoRoot });
  const { memory, outputs } = JSON.parse(stdout);
  assert.ok(
    memory.peak_heap_bytes > 0 && memory.peak_heap_bytes <= LIMIT,
    `peak heap ${memory.peak_heap_bytes} B, limit ${LIMIT} B`,
  );
  assert.ok(
    memory.source_bytes_read < dataBytes / 10,
    `read ${memory.source_bytes_read} of ${dataBytes} weight bytes`,
  );
  assert.deepEqual(outputs, [out, `${out}.data`]);
  await assertEquivalent(model, out);
});

test('the same model under a limit it cannot meet fails with a clear error and writes nothing', async (t) => {
  if (!ready(t)) return;
  const { model } = llm();
  const out = join(tmp, 'too-small.onnx');
  const script = `import { optimizeFile } from 'onnxfold';
    try { await optimizeFile(${JSON.stringify(model)}, ${JSON.stringify(out)}, { memoryLimit: 1 << 20 }); console.log('no error'); }
    catch (e) { console.log(e.name + ': ' + e.message); }`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: repoRoot });
  assert.match(stdout, /OnnxfoldError: .*memory limit of 1 MiB/);
  assert.ok(!existsSync(out) && !existsSync(`${out}.data`));
});

test('two outputs in one folder keep their own data files; both equivalent', async (t) => {
  if (!ready(t)) return;
  const { optimizeFile } = await import('onnxfold');
  const { model } = llm();
  const dir = mkdtempSync(join(tmp, 'two-'));
  const a = join(dir, 'a.onnx');
  const b = join(dir, 'b.onnx');
  const ra = await optimizeFile(model, a);
  const rb = await optimizeFile(model, b, { passes: ['fold-constants', 'dce'] });
  assert.deepEqual(ra.outputs, [a, `${a}.data`]);
  assert.deepEqual(rb.outputs, [b, `${b}.data`]);
  assert.deepEqual(ra.report.external_files, ['a.onnx.data']);
  await assertEquivalent(model, a);
  await assertEquivalent(model, b);
});

test('externalDataFileLimit splits the data into numbered files; equivalent', async (t) => {
  if (!ready(t)) return;
  const { optimizeFile } = await import('onnxfold');
  const { model, dataBytes } = llm();
  const dir = mkdtempSync(join(tmp, 'chunks-'));
  const out = join(dir, 'm.onnx');
  const limit = 48 << 20;
  const { report, outputs } = await optimizeFile(model, out, { externalDataFileLimit: limit });
  const n = Math.ceil(dataBytes / limit);
  assert.ok(report.external_files.length >= n, JSON.stringify(report.external_files));
  assert.deepEqual(report.external_files.slice(0, 3), ['m.onnx.data', 'm.onnx.data.1', 'm.onnx.data.2']);
  assert.equal(outputs.length, 1 + report.external_files.length);
  for (const f of outputs.slice(1)) {
    // A file passes the limit only when one tensor alone does (the largest here is 24 MB).
    assert.ok(statSync(f).size <= limit, `${f}: ${statSync(f).size} B`);
  }
  await assertEquivalent(model, out);
});

test('an output never replaces the input or its data file', async (t) => {
  if (!ready(t)) return;
  const { optimizeFile } = await import('onnxfold');
  const { dir, model, data } = llm();
  const before = statSync(data).mtimeMs;
  await assert.rejects(optimizeFile(model, model), /is the input model; onnxfold never overwrites its input/);
  await assert.rejects(
    optimizeFile(model, join(dir, 'other.onnx'), { externalDataLocation: 'llm.onnx.data' }),
    /external-data output '.*llm\.onnx\.data' is the input's external-data file/,
  );
  assert.equal(statSync(data).mtimeMs, before);
  assert.ok(!existsSync(join(dir, 'other.onnx')));
});

test('a FIFO or a symlink out of the folder as external data is refused, not waited on', async (t) => {
  if (!ready(t)) return;
  const { optimizeFile } = await import('onnxfold');
  const { model } = llm();
  for (const kind of ['fifo', 'symlink']) {
    const dir = mkdtempSync(join(tmp, `${kind}-`));
    writeFileSync(join(dir, 'm.onnx'), readFileSync(model));
    if (kind === 'fifo') execFileSync('mkfifo', [join(dir, 'llm.onnx.data')]);
    else symlinkSync(`${model}.data`, join(dir, 'llm.onnx.data'));
    await assert.rejects(
      optimizeFile(join(dir, 'm.onnx'), join(dir, 'o.onnx')),
      kind === 'fifo' ? /not a regular file/ : /outside the model's folder/,
    );
    if (haveCli) {
      assert.throws(
        () =>
          execFileSync(cli, ['optimize', join(dir, 'm.onnx'), '-o', join(dir, 'c.onnx')], {
            stdio: 'pipe',
            timeout: 20_000,
          }),
        (e) =>
          e.status === 1 &&
          (kind === 'fifo' ? /not a regular file/ : /outside the model's folder/).test(String(e.stderr)),
      );
    }
    assert.ok(!existsSync(join(dir, 'o.onnx')) && !existsSync(join(dir, 'c.onnx')));
  }
});

test('reuseInputData: an output beside the input refers to its data file; equivalent', async (t) => {
  if (!ready(t)) return;
  const { optimizeFile } = await import('onnxfold');
  const { dir, model } = llm();
  const out = join(dir, 'reused.onnx');
  const { report, outputs } = await optimizeFile(model, out, { reuseInputData: true });
  // Its own data file holds only what folding made (the rotary tables the growth budget took);
  // every unchanged weight stays in the input's.
  assert.deepEqual(outputs, [out, `${out}.data`]);
  const own = statSync(`${out}.data`).size;
  assert.ok(own > 0 && own < 0.05 * statSync(`${model}.data`).size, `own data ${own} bytes`);
  assert.deepEqual(report.depends_on, ['llm.onnx.data']);
  assert.ok(report.warnings.some((w) => /llm\.onnx\.data/.test(w)));
  assert.ok(statSync(out).size < 1 << 20);
  await assertEquivalent(model, out);
  await assert.rejects(
    optimizeFile(model, join(tmp, 'elsewhere.onnx'), { reuseInputData: true }),
    /input's folder/,
  );
});

test('Blob sources give a Blob result; byte-identical to optimizeFile and the native CLI', async (t) => {
  if (!ready(t)) return;
  const { optimize, optimizeFile } = await import('onnxfold');
  const { model, data } = llm();
  const dir = mkdtempSync(join(tmp, 'blob-'));
  const r = await optimize(await openAsBlob(model), {
    externalData: { 'llm.onnx.data': await openAsBlob(data) },
    externalDataLocation: 'out.onnx.data',
  });
  assert.ok(r.model instanceof Blob && r.externalData['out.onnx.data'] instanceof Blob);
  writeFileSync(join(dir, 'out.onnx'), new Uint8Array(await r.model.arrayBuffer()));
  writeFileSync(
    join(dir, 'out.onnx.data'),
    new Uint8Array(await r.externalData['out.onnx.data'].arrayBuffer()),
  );
  await assertEquivalent(model, join(dir, 'out.onnx'));

  const viaFile = join(dir, 'f', 'out.onnx');
  execFileSync('mkdir', ['-p', join(dir, 'f')]);
  await optimizeFile(model, viaFile);
  assert.ok(
    readFileSync(viaFile).equals(readFileSync(join(dir, 'out.onnx'))),
    'optimize(Blob) vs optimizeFile: model',
  );
  assert.ok(readFileSync(`${viaFile}.data`).equals(readFileSync(join(dir, 'out.onnx.data'))), 'data');
  if (!need(t, haveCli, `the native CLI is not built at ${cli}`)) return;
  const native = join(dir, 'n', 'out.onnx');
  execFileSync('mkdir', ['-p', join(dir, 'n')]);
  execFileSync(cli, ['optimize', model, '-o', native, '-q']);
  assert.ok(readFileSync(native).equals(readFileSync(viaFile)), 'native CLI vs node: model');
  assert.ok(
    readFileSync(`${native}.data`).equals(readFileSync(`${viaFile}.data`)),
    'native CLI vs node: data',
  );
});

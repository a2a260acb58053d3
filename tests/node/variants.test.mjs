// The variants transformers.js loads (api/variants.cpp), made three ways from a small decoder:
// the native CLI's `variants`, the npm package's variantsFile() and `npx onnxfold variants`
// (bin/onnxfold.mjs over the wasm module). The three must write the same bytes under
// transformers.js's names, every variant must load and run in onnxruntime-node, fp32 compute the
// original's function and fp16 stay within 1e-2 of each output's range (as float16.test.mjs). Also the bin's other
// commands against the native CLI's, and external data named as transformers.js reads it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  cli,
  cliMissing,
  dist,
  haveCli,
  havePythonOnnx,
  makeLlm,
  makeSmallDecoder,
  modelsDir,
  need,
  python,
  repoRoot,
  run,
} from './env.mjs';
import { assertEquivalent, compareByRange } from './oracle.mjs';

const bin = join(repoRoot, 'bin', 'onnxfold.mjs');
const model = join(modelsDir, 'squeezenet1_1.op13.initin.onnx');
const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-variants-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

const ready = (t) =>
  need(t, existsSync(dist), `${dist} not built`) &&
  need(t, haveCli, cliMissing) &&
  need(t, existsSync(model), `${model} missing`);
const files = (dir) => readdirSync(dir).sort();

// A small Llama-shaped decoder: MatMul weights for q8/q4, as in the models transformers.js runs.
function decoder() {
  const path = join(tmp, 'decoder.onnx');
  if (!existsSync(path)) {
    makeSmallDecoder(path);
  }
  return path;
}

test('variants: native CLI, npm variantsFile and npx onnxfold write the same files, which ORT runs', async (t) => {
  if (
    !ready(t) ||
    !need(t, havePythonOnnx() && existsSync(makeLlm), `${python} with onnx, or ${makeLlm}, missing`)
  )
    return;
  const { variantsFile, variantSchema } = await import('onnxfold');
  const input = decoder();
  const native = join(tmp, 'native');
  const npm = join(tmp, 'npm');
  const npx = join(tmp, 'npx');
  const { stdout } = await run(cli, ['variants', input, '--out', native, '--name', 'model']);
  const expected = {
    fp32: 'model.onnx',
    fp16: 'model_fp16.onnx',
    int8: 'model_int8.onnx',
    q8: 'model_quantized.onnx',
    q4: 'model_q4.onnx',
    q4f16: 'model_q4f16.onnx',
  };
  assert.deepEqual(Object.fromEntries((await variantSchema()).map((v) => [v.dtype, v.file])), expected);
  for (const [dtype, file] of Object.entries(expected))
    assert.match(stdout, new RegExp(`^${dtype} +${file.replace('.', '\\.')} +\\d+`, 'm'));
  const result = await variantsFile(input, npm, { name: 'model' });
  assert.deepEqual(
    result.variants.map((v) => [v.dtype, v.file]),
    Object.entries(expected),
  );
  await run(process.execPath, [
    bin,
    'variants',
    input,
    '--out',
    npx,
    '--name',
    'model',
    '--dtypes',
    Object.keys(expected).join(','),
  ]);
  // make_llm keeps its weights in a data file, so each variant does too, named as transformers.js reads it.
  assert.deepEqual(
    files(native),
    Object.values(expected)
      .flatMap((f) => [f, `${f}_data`])
      .sort(),
  );
  for (const dir of [npm, npx]) {
    assert.deepEqual(files(dir), files(native));
    for (const f of files(native)) {
      assert.ok(
        readFileSync(join(dir, f)).equals(readFileSync(join(native, f))),
        `${dir}/${f} differs from the native CLI's`,
      );
    }
  }
  // One read for all: each variant is what its own optimize run writes (README's "made with").
  const own = join(tmp, 'own');
  await run('mkdir', ['-p', own]);
  for (const [file, flags] of [
    ['model_fp16.onnx', ['--float16']],
    ['model_q4f16.onnx', ['--float16', '--quantize', 'int4', '--quant-format', 'ort']],
  ]) {
    await run(cli, [
      'optimize',
      input,
      '-o',
      join(own, file),
      ...flags,
      '--external-data-location',
      `${file}_data`,
      '--external-data-file-limit',
      '2000000000',
      '--external-data-chunk-separator',
      '_',
    ]);
    for (const f of [file, `${file}_data`])
      assert.ok(readFileSync(join(own, f)).equals(readFileSync(join(native, f))), `${f}: not optimize's`);
  }
  // In memory, variants() makes the same files, and onProgress names the variant being made.
  const { variants } = await import('onnxfold');
  const seen = new Set();
  const mem = await variants(readFileSync(input), {
    name: 'model',
    externalData: { 'decoder.onnx.data': readFileSync(`${input}.data`) },
    onProgress: (p) => seen.add(p.variant ?? ''),
  });
  assert.deepEqual(Object.keys(mem.files).sort(), files(native));
  for (const f of files(native))
    assert.ok(Buffer.from(mem.files[f]).equals(readFileSync(join(native, f))), `variants(): ${f} differs`);
  assert.deepEqual([...seen], ['', ...Object.keys(expected)]);
  assert.ok(mem.variants.every((v) => v.report.shared_ms > 0));
  const bytes = Object.fromEntries(result.variants.map((v) => [v.dtype, v.bytes]));
  assert.equal(
    bytes.fp32,
    statSync(join(npm, 'model.onnx')).size + statSync(join(npm, 'model.onnx_data')).size,
  );
  for (const d of ['fp16', 'int8', 'q8'])
    assert.ok(bytes[d] < 0.6 * bytes.fp32, `${d}: ${bytes[d]} of ${bytes.fp32} bytes`);
  for (const d of ['q4', 'q4f16'])
    assert.ok(bytes[d] < 0.4 * bytes.fp32, `${d}: ${bytes[d]} of ${bytes.fp32} bytes`);
  await assertEquivalent(input, join(native, 'model.onnx'));
  // Every variant loads and runs in ORT; fp16 is within float16's error (float16.test.mjs). The
  // quantized ones' accuracy per mode is quantize.test.mjs's; here only a bound that a broken
  // variant (a wrong weight layout, garbage scales) would pass by far.
  for (const [dtype, file] of Object.entries(expected).slice(1)) {
    for (const o of await compareByRange(input, join(native, file))) {
      if (o.nondeterministic) continue;
      assert.ok(
        o.rel <= (dtype === 'fp16' ? 1e-2 : 0.5),
        `${dtype}: output '${o.name}' is off by ${o.rel} of its range`,
      );
    }
  }
});

test('variants: a dtype, a name or a folder that cannot be used is refused, and nothing overwrites the input', async (t) => {
  if (!ready(t)) return;
  const { variants } = await import('onnxfold');
  await assert.rejects(
    run(cli, ['variants', model, '--out', join(tmp, 'bad'), '--dtypes', 'fp32,q9']),
    (e) => e.code === 1 && /unknown dtype 'q9' \(known: fp32, fp16/.test(e.stderr),
  );
  assert.ok(!existsSync(join(tmp, 'bad', 'model.onnx')), 'nothing is written when the plan is refused');
  await assert.rejects(variants(new Uint8Array(8), { dtypes: ['fp32', 'fp32'] }), /dtype 'fp32' given twice/);
  await assert.rejects(
    variants(new Uint8Array(8), { name: '../model' }),
    /must be a file name without a folder/,
  );
  await assert.rejects(variants(new Uint8Array(8), { dtypes: 'fp16' }), TypeError);
  // The input is the fp32 variant's file name in the output folder: refused before any work,
  // input untouched.
  const dir = join(tmp, 'same');
  rmSync(dir, { recursive: true, force: true });
  await run('mkdir', ['-p', dir]);
  const input = join(dir, 'model.onnx');
  copyFileSync(model, input);
  const before = readFileSync(input);
  await assert.rejects(
    run(process.execPath, [bin, 'variants', input, '--out', dir]),
    (e) =>
      e.code === 1 &&
      /variant fp32 output '.*model\.onnx' is the input model; .*never overwrites its input/.test(e.stderr),
  );
  assert.ok(readFileSync(input).equals(before));
});

test('external data can be named as transformers.js reads it: <file>_data, <file>_data_1, ...', async (t) => {
  if (!ready(t)) return;
  const { optimize } = await import('onnxfold');
  const { externalData } = await optimize(readFileSync(model), {
    externalDataThreshold: 1024,
    externalDataLocation: 'model.onnx_data',
    externalDataFileLimit: 1 << 20,
    externalDataChunkSeparator: '_',
  });
  const names = Object.keys(externalData).sort();
  assert.ok(names.length >= 3, `several files: ${names}`);
  assert.deepEqual(
    names,
    ['model.onnx_data', ...names.slice(1).map((_, i) => `model.onnx_data_${i + 1}`)].sort(),
  );
  await assert.rejects(
    optimize(readFileSync(model), { externalDataChunkSeparator: '-' }),
    /externalDataChunkSeparator: expected '.' or '_'/,
  );
});

test('npx onnxfold: optimize writes what the native CLI writes; check, info and flags as the CLI', async (t) => {
  if (!ready(t)) return;
  const nativeOut = join(tmp, 'cli.onnx');
  const binOut = join(tmp, 'bin.onnx');
  const report = join(tmp, 'bin.json');
  await run(cli, ['optimize', model, '-o', nativeOut, '-q', '--size-budget', '0']);
  const { stdout } = await run(process.execPath, [
    bin,
    'optimize',
    model,
    '-o',
    binOut,
    '--size-budget',
    '0',
    '--report',
    report,
  ]);
  assert.match(stdout, /bin\.onnx: \d+ -> \d+ nodes/);
  assert.ok(readFileSync(binOut).equals(readFileSync(nativeOut)), 'the same bytes as the native CLI');
  assert.ok(Array.isArray(JSON.parse(readFileSync(report, 'utf8')).passes), 'the JSON report is written');
  // The report path may not be a file the call reads.
  const copy = join(tmp, 'input-copy.onnx');
  copyFileSync(model, copy);
  await assert.rejects(
    run(process.execPath, [bin, 'optimize', copy, '-o', join(tmp, 'x.onnx'), '--report', copy]),
    (e) => e.code === 1 && /report '.*input-copy\.onnx' is the input model/.test(e.stderr),
  );
  assert.ok(readFileSync(copy).equals(readFileSync(model)));
  // Flags: a bad value and an unknown flag are usage errors (2), as in the native CLI.
  await assert.rejects(
    run(process.execPath, [bin, 'optimize', model, '-o', binOut, '--size-budget', 'big']),
    (e) => e.code === 2 && /--size-budget expects an integer/.test(e.stderr),
  );
  await assert.rejects(
    run(process.execPath, [bin, 'optimize', model, '-o', binOut, '--no-such-flag']),
    (e) => e.code === 2 && /no-such-flag/.test(e.stderr),
  );
  // check and info: an invalid model exits 1 with the validator's message.
  const bad = join(tmp, 'bad.onnx');
  writeFileSync(bad, Buffer.from([0x08, 0x07, 0x3a, 0x02, 0x0a, 0x00]));
  const { stdout: ok } = await run(process.execPath, [bin, 'check', model]);
  assert.match(ok, /: valid/);
  await assert.rejects(
    run(process.execPath, [bin, 'check', bad]),
    (e) => e.code === 1 && /onnxfold: error: /.test(e.stderr),
  );
  const { stdout: info } = await run(process.execPath, [bin, 'info', model, '--json']);
  const { stdout: nativeInfo } = await run(cli, ['info', model, '--json']);
  assert.deepEqual(JSON.parse(info), JSON.parse(nativeInfo));
  const { stdout: text } = await run(process.execPath, [bin, 'info', model]);
  assert.equal(text, (await run(cli, ['info', model])).stdout);
});

// Every variant of every shared float model (the QDQ ones are quantized already) loads and runs
// in ORT. Largest |diff| relative to each output's range, measured 2026-11-26: fp32 <= 5e-7,
// fp16 <= 8.2e-4, int8 <= 1.6e-2 and q8 <= 1.2e-2 (minibert), q4 and q4f16 <= 5.7e-2 (minibert);
// the bounds below leave room but not for a wrong weight layout or scale (errors of the range's
// order). Per-mode cosine and argmax are quantize.test.mjs's.
const BOUND = { fp16: 1e-2, int8: 5e-2, q8: 5e-2, q4: 0.15, q4f16: 0.15 };

test('variants: every variant of every shared float model loads and runs in ORT, within its bound', async (t) => {
  if (!ready(t)) return;
  const { variantSchema } = await import('onnxfold');
  const schema = await variantSchema();
  const models = readdirSync(modelsDir)
    .filter((f) => f.endsWith('.onnx') && !f.includes('.qdq_'))
    .sort();
  assert.ok(models.length >= 8, `shared float models: ${models}`);
  const worst = {};
  for (const m of models) {
    const input = join(modelsDir, m);
    const dir = join(tmp, 'all', m);
    await run(cli, ['variants', input, '--out', dir, '--name', 'model']);
    await assertEquivalent(input, join(dir, 'model.onnx'));
    for (const { dtype, file } of schema.slice(1)) {
      for (const o of await compareByRange(input, join(dir, file))) {
        if (o.nondeterministic) continue;
        worst[dtype] = Math.max(worst[dtype] ?? 0, o.rel);
        assert.ok(o.rel <= BOUND[dtype], `${m} ${dtype}: output '${o.name}' is off by ${o.rel} of its range`);
      }
    }
  }
  t.diagnostic(`worst |diff| / range: ${JSON.stringify(worst)}`);
});

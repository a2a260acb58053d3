// Nothing lost: optimizeFile (npm) and the CLI never write over a file the run reads (the model,
// its external-data files), never write two outputs to one file, and a refused or failed run
// leaves the folder exactly as it was (same files, bytes and modification times, no temporaries).
// The rule is WritePlan natively (src/api/file_io.h) and writePlan in js/outputs.js.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

import { cli, cliMissing, dist, haveCli, need } from './env.mjs';
import { buildModel } from './onnx-builder.mjs';

const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-file-safety-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

// y<i> = Add(x, w<i>): three different float[16] weights, external in `data` at offsets 0, 64,
// 128 (64 bytes: tensors under that stay inline in onnxfold's output).
function model(data = 'm.onnx.data') {
  const weights = [0, 1, 2].map((i) => ({
    name: `w${i}`,
    dims: [16],
    external: { location: data, offset: 64 * i, length: 64 },
  }));
  return buildModel({
    inputs: [{ name: 'x', shape: [16] }],
    outputs: weights.map((w) => ({ name: `y${w.name}`, shape: [16] })),
    initializers: weights,
    nodes: weights.map((w) => ({ op: 'Add', inputs: ['x', w.name], outputs: [`y${w.name}`] })),
  });
}

let count = 0;
function folder(data = 'm.onnx.data') {
  const dir = join(tmp, `case-${count++}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'm.onnx'), model(data));
  writeFileSync(join(dir, data), new Uint8Array(Float32Array.from({ length: 48 }, (_, i) => i + 1).buffer));
  return dir;
}

// Every entry under `dir` with its bytes and modification time (in nanoseconds).
function snapshot(dir, sub = '') {
  const out = {};
  for (const name of readdirSync(join(dir, sub)).sort()) {
    const rel = join(sub, name);
    const st = statSync(join(dir, rel), { bigint: true });
    if (st.isDirectory()) Object.assign(out, { [rel]: 'dir' }, snapshot(dir, rel));
    else out[rel] = `${readFileSync(join(dir, rel)).toString('hex')}@${st.mtimeNs}`;
  }
  return out;
}

const ready = (t) => need(t, existsSync(dist), `the wasm build is missing at ${dist}`);

// optimizeFile rejects with an OnnxfoldError of one line matching `pattern`, and `dir` is as it was.
async function refused(dir, run, pattern) {
  const { OnnxfoldError } = await import('../../js/index.js');
  const before = snapshot(dir);
  await assert.rejects(run, (e) => {
    assert.ok(e instanceof OnnxfoldError, `${e && e.name}: ${e && e.message}`);
    assert.match(e.message, pattern);
    assert.ok(!e.message.includes('\n'), e.message);
    return true;
  });
  assert.deepEqual(snapshot(dir), before, 'a file was replaced or left behind');
}

// The CLI exits 1 with one error line matching `pattern`, and `dir` is as it was.
function cliRefused(dir, args, pattern) {
  const before = snapshot(dir);
  const r = spawnSync(cli, args, { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 1, `${args.join(' ')}: ${r.stderr}`);
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0], pattern);
  assert.deepEqual(snapshot(dir), before, `${args.join(' ')}: a file was replaced or left behind`);
}

test('npm: an output naming the input or its external-data file is refused', async (t) => {
  if (!ready(t)) return;
  const { optimizeFile } = await import('../../js/index.js');
  const dir = folder();
  for (const reuseInputData of [false, true]) {
    await refused(
      dir,
      optimizeFile(join(dir, 'm.onnx'), join(dir, 'm.onnx.data'), { reuseInputData }),
      /^optimizeFile: output '.*\/m\.onnx\.data' is the input's external-data file; onnxfold never overwrites its input$/,
    );
  }
  await refused(
    dir,
    optimizeFile(join(dir, 'm.onnx'), join(dir, 'm.onnx')),
    /output '.*\/m\.onnx' is the input model/,
  );
  await refused(
    dir,
    optimizeFile(join(dir, 'm.onnx'), join(dir, 'o.onnx'), {
      externalDataThreshold: 0,
      externalDataLocation: 'm.onnx.data',
    }),
    /external-data output '.*\/m\.onnx\.data' is the input's external-data file/,
  );
  await refused(
    dir,
    optimizeFile(join(dir, 'm.onnx'), join(dir, 'o.onnx'), {
      externalDataThreshold: 0,
      externalDataLocation: 'o.onnx',
    }),
    /external-data output '.*\/o\.onnx' is also the output$/,
  );
});

test('npm: a failed run leaves nothing behind (output or data chunk is a folder)', async (t) => {
  if (!ready(t)) return;
  const { optimizeFile } = await import('../../js/index.js');
  const dir = folder();
  mkdirSync(join(dir, 'out'));
  await refused(
    dir,
    optimizeFile(join(dir, 'm.onnx'), join(dir, 'out'), { externalDataThreshold: 0 }),
    /output '.*\/out' is a directory/,
  );
  mkdirSync(join(dir, 'o.onnx.data.1')); // the second chunk: the first is written by then
  await refused(
    dir,
    optimizeFile(join(dir, 'm.onnx'), join(dir, 'o.onnx'), {
      externalDataThreshold: 0,
      externalDataFileLimit: 16,
    }),
    /external-data output '.*\/o\.onnx\.data\.1' is a directory/,
  );
  await refused(
    dir,
    optimizeFile(join(dir, 'm.onnx'), join(dir, 'no', 'o.onnx')),
    /output '.*\/no\/o\.onnx': cannot use its folder/,
  );

  // And a run that succeeds commits everything, with no temporaries left.
  const { outputs } = await optimizeFile(join(dir, 'm.onnx'), join(dir, 'ok.onnx'), {
    externalDataThreshold: 0,
    externalDataFileLimit: 16,
  });
  assert.deepEqual(outputs.map((p) => p.slice(dir.length + 1)).sort(), [
    'ok.onnx',
    'ok.onnx.data',
    'ok.onnx.data.1',
    'ok.onnx.data.2',
  ]);
  assert.deepEqual(readdirSync(dir).sort(), [
    'm.onnx',
    'm.onnx.data',
    'o.onnx.data.1',
    'ok.onnx',
    'ok.onnx.data',
    'ok.onnx.data.1',
    'ok.onnx.data.2',
    'out',
  ]);
});

test("npm: a data file named '..w.bin' in the model's folder is read", async (t) => {
  if (!ready(t)) return;
  const { optimizeFile } = await import('../../js/index.js');
  const dir = folder('..w.bin');
  const { report } = await optimizeFile(join(dir, 'm.onnx'), join(dir, 'o.onnx'));
  assert.equal(report.before.initializers, 3);
});

test('npm: extra: null is an option error like any value of the wrong type', async (t) => {
  if (!ready(t)) return;
  const { optimize, OnnxfoldError } = await import('../../js/index.js');
  const bytes = buildModel({
    inputs: [{ name: 'x', shape: [1] }],
    outputs: [{ name: 'y', shape: [1] }],
    nodes: [{ op: 'Identity', inputs: ['x'], outputs: ['y'] }],
  });
  for (const [option, expected] of [
    ['extra', 'an object of strings'],
    ['sizeBudget', 'an integer'],
  ]) {
    await assert.rejects(
      optimize(bytes, { [option]: null }),
      (e) => e instanceof OnnxfoldError && e.message.endsWith(`option ${option}: expected ${expected}`),
    );
  }
});

test('CLI: --report, --external-data-location and split-constants --prep never replace what the run reads', (t) => {
  if (!need(t, haveCli, cliMissing)) return;
  const dir = folder();
  const m = join(dir, 'm.onnx');
  const o = join(dir, 'o.onnx');
  cliRefused(
    dir,
    ['optimize', m, '-o', o, '--report', m],
    /^onnxfold: error: report '.*\/m\.onnx' is the input model; onnxfold never overwrites its input$/,
  );
  cliRefused(
    dir,
    ['optimize', m, '-o', o, '--report', join(dir, 'm.onnx.data')],
    /report '.*\/m\.onnx\.data' is the input's external-data file/,
  );
  cliRefused(dir, ['optimize', m, '-o', o, '--report', o], /output '.*\/o\.onnx' is also the report$/);
  cliRefused(
    dir,
    ['optimize', m, '-o', join(dir, 'm.onnx.data'), '--reuse-input-data'],
    /output '.*\/m\.onnx\.data' is the input's external-data file/,
  );
  cliRefused(
    dir,
    ['optimize', m, '-o', o, '--external-data-threshold', '0', '--external-data-location', 'o.onnx'],
    /external-data output '.*\/o\.onnx' is also the output$/,
  );
  cliRefused(
    dir,
    ['optimize', m, '-o', o, '--report', join(dir, 'no', 'r.json')],
    /report '.*\/no\/r\.json': cannot use its folder/,
  );
  cliRefused(
    dir,
    ['split-constants', m, '--prep', join(dir, 'm.onnx.data'), '--main', join(dir, 'main.onnx')],
    /--prep output '.*\/m\.onnx\.data' is the input's external-data file/,
  );
});

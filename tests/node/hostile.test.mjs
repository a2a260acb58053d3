// Invalid and hostile models (hostile-models.mjs) through the native CLI and the npm package:
// a refusal is one readable error line (valid UTF-8, under 1,000 bytes), a non-zero exit or an
// OnnxfoldError, within 20 s and 2 GB, with nothing written and the input folder untouched; a
// model that is optimized must compute what the original computes in ONNX Runtime, failing at
// run time where the original fails. The npm package refuses exactly what the CLI refuses, with
// the same message, and stays usable after every refusal.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { lstatSync, mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import ort from 'onnxruntime-node';

import { cli, cliMissing, dist, haveCli, need } from './env.mjs';
import { hostileModels } from './hostile-models.mjs';
import { buildModel } from './onnx-builder.mjs';
import { compareModels } from './oracle.mjs';
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const LIMIT_SECONDS = 20;
const LIMIT_KB = 2 * 1024 * 1024;

// Names, kinds and contents of a folder's files (a FIFO by name only: reading it would block).
function folderDigest(dir) {
  const h = createHash('sha256');
  for (const f of readdirSync(dir).sort()) {
    h.update(f);
    if (lstatSync(join(dir, f)).isFile()) h.update(readFileSync(join(dir, f)));
  }
  return h.digest('hex');
}

function writeFiles(dir, files = {}) {
  for (const [name, content] of Object.entries(files)) {
    if (content === 'fifo') {
      const r = spawnSync('mkfifo', [join(dir, name)]);
      assert.equal(r.status, 0, `mkfifo: ${r.stderr}`);
    } else {
      writeFileSync(join(dir, name), content);
    }
  }
}

function checkErrorLine(stderr, where) {
  const text = new TextDecoder('utf-8', { fatal: true }).decode(stderr); // throws if not UTF-8
  const lines = text.trimEnd().split('\n');
  assert.equal(lines.length, 1, `${where}: one error line, got:\n${text}`);
  assert.ok(
    Buffer.byteLength(lines[0]) < 1000,
    `${where}: error line of ${Buffer.byteLength(lines[0])} bytes`,
  );
  assert.match(lines[0], /^onnxfold: error: /, where);
  return lines[0].slice('onnxfold: error: '.length);
}

// Runs the CLI under /usr/bin/time for the peak RSS, with a wall-clock limit.
function runCli(args) {
  const timing = join(tmpdir(), `onnxfold-time-${process.pid}-${Math.random().toString(36).slice(2)}`);
  const r = spawnSync('/usr/bin/time', ['-f', '%M', '-o', timing, cli, ...args], {
    timeout: LIMIT_SECONDS * 1000,
    killSignal: 'SIGKILL',
  });
  const rssKb = existsSync(timing) ? Number(readFileSync(timing, 'utf8').trim().split('\n').pop()) : NaN;
  rmSync(timing, { force: true });
  return { status: r.status, signal: r.signal, stderr: r.stderr, rssKb, error: r.error };
}

// The original's run in ONNX Runtime: outputs, or the error it fails with.
async function ortRun(path) {
  try {
    const s = await ort.InferenceSession.create(path);
    if (s.inputNames.length) return { skipped: true };
    return { outputs: await s.run({}) };
  } catch (e) {
    return { error: e.message };
  }
}

const work = mkdtempSync(join(tmpdir(), 'onnxfold-hostile-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));
const cliRefusals = new Map();

test('hostile models: the CLI refuses cleanly or optimizes equivalently', async (t) => {
  if (!need(t, haveCli, cliMissing)) return;
  for (const h of hostileModels) {
    await t.test(h.name, async () => {
      const inDir = join(work, h.name, 'in');
      const outDir = join(work, h.name, 'out');
      mkdirSync(inDir, { recursive: true });
      mkdirSync(outDir, { recursive: true });
      const input = join(inDir, 'model.onnx');
      writeFileSync(input, h.build());
      writeFiles(inDir, h.files);
      const before = folderDigest(inDir);
      const r = runCli(['optimize', input, '-o', join(outDir, 'model.opt.onnx'), '-q']);
      assert.ok(
        !r.error && r.signal === null,
        `${h.name}: ${r.error ? r.error.message : `killed by ${r.signal}`} (limit ${LIMIT_SECONDS} s)`,
      );
      assert.ok(r.rssKb < LIMIT_KB, `${h.name}: peak RSS ${r.rssKb} KB`);
      assert.equal(folderDigest(inDir), before, `${h.name}: the input folder changed`);
      if (h.refuse === false) assert.equal(r.status, 0, `${h.name} is valid but was refused: ${r.stderr}`);
      if (r.status !== 0) {
        assert.equal(r.status, 1, `${h.name}: exit status`);
        const message = checkErrorLine(r.stderr, h.name);
        if (h.error) assert.match(message, h.error, `${h.name}: the error says what is wrong`);
        assert.deepEqual(readdirSync(outDir), [], `${h.name}: a refused model left files behind`);
        cliRefusals.set(h.name, message);
        return;
      }
      assert.equal(h.expect, 'any', `${h.name} was accepted; it must be refused (${h.error})`);
      const optimized = join(outDir, 'model.opt.onnx');
      if (h.oracle === false) return;
      const orig = await ortRun(input);
      if (orig.skipped) {
        const c = await compareModels(input, optimized);
        assert.ok(c.ok, `${h.name}: ${c.message}`);
      } else if (orig.error) {
        // ONNX Runtime fails on it: so must the optimized model (no run-time error folded away).
        const opt = await ortRun(optimized);
        assert.ok(
          opt.error,
          `${h.name}: the original fails in ONNX Runtime (${orig.error}) but the optimized model runs`,
        );
      } else {
        const c = await compareModels(input, optimized);
        assert.ok(c.ok, `${h.name}: ${c.message}`);
      }
    });
  }
});

test('hostile models: the npm package refuses what the CLI refuses, and stays usable', async (t) => {
  if (!need(t, existsSync(dist), `the wasm module is not built at ${dist}`)) return;
  if (!need(t, haveCli, cliMissing)) return;
  const { optimize, optimizeFile, OnnxfoldError } = await import('../../js/index.js');
  const good = buildModel({
    inputs: [{ name: 'x', shape: [2] }],
    outputs: [{ name: 'y' }],
    nodes: [{ op: 'Neg', inputs: ['x'], outputs: ['y'] }],
  });
  for (const h of hostileModels) {
    if (h.npm === false) continue;
    await t.test(h.name, async () => {
      let result, error;
      try {
        if (h.files) {
          // External data: read from the model's folder, as the CLI does.
          const out = join(work, h.name, 'npm-out');
          mkdirSync(out, { recursive: true });
          await optimizeFile(join(work, h.name, 'in', 'model.onnx'), join(out, 'model.opt.onnx'));
          result = { model: readFileSync(join(out, 'model.opt.onnx')) };
        } else {
          result = await optimize(h.build());
        }
      } catch (e) {
        error = e;
      }
      if (cliRefusals.has(h.name)) {
        assert.ok(
          error instanceof OnnxfoldError,
          `${h.name}: rejected with ${error && error.name}: ${error && error.message}`,
        );
        if (h.files) {
          // Files are opened by the JS layer in node: its own words, the same finding.
          assert.match(error.message, h.error, `${h.name}: npm says '${error.message}'`);
        } else {
          assert.ok(
            error.message.endsWith(cliRefusals.get(h.name)),
            `${h.name}: npm says '${error.message}', the CLI '${cliRefusals.get(h.name)}'`,
          );
        }
        assert.ok(Buffer.byteLength(error.message) < 1000);
        // The module is usable after the refusal.
        const ok = await optimize(good);
        assert.ok(ok.model.length > 0);
      } else {
        assert.equal(
          error,
          undefined,
          `${h.name}: the CLI optimized it but npm failed: ${error && error.message}`,
        );
        const cliOut = readFileSync(join(work, h.name, 'out', 'model.opt.onnx'));
        assert.ok(Buffer.from(result.model).equals(cliOut), `${h.name}: npm and CLI outputs differ`);
      }
    });
  }
});

// Where the node tests find what they need (repo, shared test data, the native CLI, the wasm
// build), and the rule for what is missing: skip with a reason locally, fail in CI, where the
// earlier build steps must have produced it.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const sharedDir = process.env.ONNXFOLD_SHARED
  ? resolve(process.env.ONNXFOLD_SHARED)
  : resolve(repoRoot, '..', 'shared');
export const modelsDir = join(sharedDir, 'models');
export const cli = process.env.ONNXFOLD_CLI
  ? resolve(process.env.ONNXFOLD_CLI)
  : join(repoRoot, 'build', 'native', 'onnxfold');
export const haveCli = existsSync(cli);
export const cliMissing = `the native CLI is not built at ${cli} (cmake --preset native && cmake --build --preset native)`;
export const dist = join(repoRoot, 'dist', 'onnxfold.wasm');
export const run = promisify(execFile);

// Debian's python3 with python3-onnx and python3-numpy (scripts/bootstrap), which runs the shared
// tools/make_llm.py.
export const python = '/usr/bin/python3';
export const makeLlm = join(sharedDir, 'tools', 'make_llm.py');

// The small Llama-shaped decoder several tests share (make_llm.py: 2 layers, hidden 128,
// vocabulary 512, weights in `<path>.data`), written to `path`.
export function makeSmallDecoder(path) {
  const shape = ['--layers', '2', '--hidden', '128', '--heads', '4', '--kv-heads', '2', '--ffn', '256'];
  execFileSync(
    python,
    [makeLlm, '--preset', 'tiny', ...shape, '--vocab', '512', '--max-pos', '128', '--out', path],
    {
      stdio: 'ignore',
    },
  );
  return path;
}

// A make_llm.py decoder of the tiny shape several tests share (2 layers, hidden 64, 4 heads of
// which 2 key/value, ffn 128, vocab 256, 64 positions) at `out`; `shape` replaces or adds flags
// ({ layers: 1, 'rope-per-layer': true }).
export async function makeDecoder(out, shape = {}) {
  const flags = {
    layers: 2,
    hidden: 64,
    heads: 4,
    'kv-heads': 2,
    ffn: 128,
    vocab: 256,
    'max-pos': 64,
    ...shape,
  };
  const args = Object.entries(flags).flatMap(([k, v]) => (v === true ? [`--${k}`] : [`--${k}`, String(v)]));
  await run(python, [makeLlm, ...args, '--out', out]);
  return out;
}

let pythonOnnx;
export function havePythonOnnx() {
  if (pythonOnnx === undefined) {
    try {
      execFileSync(python, ['-c', 'import onnx, numpy'], { stdio: 'ignore' });
      pythonOnnx = true;
    } catch {
      pythonOnnx = false;
    }
  }
  return pythonOnnx;
}

// The one way a node test handles what is missing, inside the test: true when `ok`; otherwise
// skips (locally) or fails (CI) with `reason`.
export function need(t, ok, reason) {
  if (ok) return true;
  if (process.env.CI) assert.fail(`${reason} (CI is set, so this is a failure)`);
  t.skip(reason);
  return false;
}

// A model file and its external-data files (`<name>.data`, `.data.1`, ...) beside it, in bytes.
export function modelBytes(path) {
  const dir = dirname(path);
  const name = basename(path);
  let bytes = statSync(path).size;
  for (const f of readdirSync(dir)) {
    if (f.startsWith(`${name}.data`)) bytes += statSync(join(dir, f)).size;
  }
  return bytes;
}

// A model whose weights lie in 1,000 external-data files, optimized with at most 256 open
// files allowed: the CLI and node's optimizeFile keep at most 64 data files open (the
// least recently read are closed and opened again when read), so both finish where one
// descriptor per file fails with "Too many open files".
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { cli, cliMissing, dist, haveCli, need, repoRoot } from './env.mjs';
import { buildModel } from './onnx-builder.mjs';

const FILES = 1000;
const work = mkdtempSync(join(tmpdir(), 'onnxfold-many-files-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

const inDir = join(work, 'in');
mkdirSync(inDir);
for (let k = 0; k < FILES; ++k)
  writeFileSync(join(inDir, `w${k}.bin`), new Uint8Array(Float32Array.from([k, 1, 2, 3]).buffer));
writeFileSync(
  join(inDir, 'model.onnx'),
  buildModel({
    inputs: [{ name: 'x', shape: [4] }],
    outputs: [{ name: 'y' }],
    initializers: Array.from({ length: FILES }, (_, k) => ({
      name: `w${k}`,
      type: 'float32',
      dims: [4],
      external: { location: `w${k}.bin`, offset: 0, length: 16 },
    })),
    nodes: Array.from({ length: FILES }, (_, k) => ({
      op: 'Add',
      inputs: [k ? `a${k - 1}` : 'x', `w${k}`],
      outputs: [k === FILES - 1 ? 'y' : `a${k}`],
    })),
  }),
);

// `args` run with a limit of 256 open files.
const limited = (args) =>
  spawnSync('sh', ['-c', 'ulimit -n 256 && exec "$@"', 'sh', ...args], { encoding: 'utf8' });

test('the CLI reads 1,000 data files with 256 descriptors allowed', (t) => {
  if (!need(t, haveCli, cliMissing)) return;
  const r = limited([cli, 'optimize', join(inDir, 'model.onnx'), '-o', join(work, 'cli.onnx'), '-q']);
  assert.equal(r.status, 0, r.stderr);
});

test("node's optimizeFile reads 1,000 data files with 256 descriptors allowed", (t) => {
  if (!need(t, existsSync(dist), `the wasm module is not built at ${dist}`)) return;
  const script = `import { optimizeFile } from ${JSON.stringify(join(repoRoot, 'js', 'index.js'))};
    await optimizeFile(${JSON.stringify(join(inDir, 'model.onnx'))}, ${JSON.stringify(join(work, 'npm.onnx'))});`;
  const r = limited([process.execPath, '--input-type=module', '-e', script]);
  assert.equal(r.status, 0, r.stderr);
});

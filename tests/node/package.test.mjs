// The published package: `npm pack` the repo, install the tarball into a clean temp project
// (offline: the package has no runtime dependencies), run examples/optimize-node.mjs there under
// node against the installed copy, and check its output with the ORT oracle. Also checks what the
// tarball contains (js/, dist/onnxfold.{mjs,wasm}, package.json; no sources or tests) and that
// the installed types entry exists.
// Skips with a reason when dist/ is not built; fails instead when CI is set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { assertEquivalent } from './oracle.mjs';
import { modelsDir, need, repoRoot } from './env.mjs';

const model = join(modelsDir, 'conv1d_m5.op14.nofold.onnx');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

test(
  'npm pack -> npm install in a clean folder -> the example runs against it',
  { timeout: 180_000 },
  async (t) => {
    if (
      !need(
        t,
        existsSync(join(repoRoot, 'dist', 'onnxfold.wasm')),
        'dist/onnxfold.wasm not built (cmake --build --preset wasm --target onnxfold_wasm)',
      )
    )
      return;
    if (!need(t, existsSync(model), `${model} missing (shared models)`)) return;
    const tmp = mkdtempSync(join(tmpdir(), 'onnxfold-pack-'));
    try {
      const env = {
        ...process.env,
        npm_config_cache: join(tmp, 'npm-cache'),
        npm_config_update_notifier: 'false',
      };
      const packed = JSON.parse(
        execFileSync(npm, ['pack', '--json', '--pack-destination', tmp], {
          cwd: repoRoot,
          env,
          encoding: 'utf8',
        }),
      );
      const files = packed[0].files.map((f) => f.path).sort();
      for (const f of [
        'package.json',
        'js/index.js',
        'js/index.d.ts',
        'js/accuracy.js',
        'js/accuracy.d.ts',
        'dist/onnxfold.mjs',
        'dist/onnxfold.wasm',
      ]) {
        assert.ok(files.includes(f), `tarball has ${f} (has ${files.join(', ')})`);
      }
      const unexpected = files.filter(
        (f) =>
          !/^(package\.json|README\.md|LICENSE.*|js\/.*|bin\/onnxfold\.mjs|dist\/onnxfold\.(mjs|wasm))$/.test(
            f,
          ),
      );
      assert.deepEqual(unexpected, [], 'only the package files are published');
      const tarball = join(tmp, packed[0].filename);

      const project = join(tmp, 'app');
      mkdirSync(project);
      writeFileSync(
        join(project, 'package.json'),
        JSON.stringify({ name: 'app', private: true, type: 'module' }),
      );
      execFileSync(npm, ['install', '--offline', '--no-audit', '--no-fund', tarball], {
        cwd: project,
        env,
        stdio: 'pipe',
      });
      const installed = join(project, 'node_modules', 'onnxfold');
      assert.ok(existsSync(join(installed, 'js', 'index.d.ts')));
      const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
      assert.equal(pkg.exports['.'].types, './js/index.d.ts');
      assert.equal(pkg.exports['./accuracy'].types, './js/accuracy.d.ts');
      assert.deepEqual(Object.keys(pkg.dependencies || {}), [], 'no runtime dependencies');

      copyFileSync(join(repoRoot, 'examples', 'optimize-node.mjs'), join(project, 'optimize-node.mjs'));
      copyFileSync(model, join(project, 'model.onnx'));
      const stdout = execFileSync(process.execPath, ['optimize-node.mjs', 'model.onnx'], {
        cwd: project,
        encoding: 'utf8',
      });
      assert.match(stdout, /nodes 22 -> \d+/);
      assert.match(stdout, /BatchNormalization\s+4 -> 0/);
      const out = join(project, 'model.opt.onnx');
      assert.ok(existsSync(out), 'example wrote model.opt.onnx');
      await assertEquivalent(join(project, 'model.onnx'), out);

      // The installed copy is what ran: a second run with the repo's dist/ hidden is the same.
      const check = `import('onnxfold').then(async (m) => { const p = await m.passes(); console.log(import.meta.resolve('onnxfold'), p.default.length); })`;
      const where = execFileSync(process.execPath, ['--input-type=module', '-e', check], {
        cwd: project,
        encoding: 'utf8',
      });
      assert.ok(where.includes(join('node_modules', 'onnxfold', 'js', 'index.js')), where);
      // The accuracy module is a subpath of the same package.
      const sub = `import('onnxfold/accuracy').then((m) => console.log(import.meta.resolve('onnxfold/accuracy'), typeof m.compareTensors))`;
      const subWhere = execFileSync(process.execPath, ['--input-type=module', '-e', sub], {
        cwd: project,
        encoding: 'utf8',
      });
      assert.ok(
        subWhere.includes(join('node_modules', 'onnxfold', 'js', 'accuracy.js')) &&
          subWhere.includes('function'),
        subWhere,
      );

      // `npx onnxfold` from the installed package (its bin, over the wasm module).
      const npx = execFileSync(
        join(project, 'node_modules', '.bin', 'onnxfold'),
        ['optimize', 'model.onnx', '-o', 'bin.onnx'],
        { cwd: project, encoding: 'utf8' },
      );
      assert.match(npx, /bin\.onnx: 22 -> \d+ nodes/);
      assert.ok(
        readFileSync(join(project, 'bin.onnx')).equals(readFileSync(out)),
        'npx onnxfold writes what the example wrote',
      );
      // --accuracy needs onnxruntime-node, which the package does not depend on: a clear error, exit 1.
      const acc = spawnSync(
        join(project, 'node_modules', '.bin', 'onnxfold'),
        ['variants', 'model.onnx', '--out', 'v', '--accuracy'],
        { cwd: project, encoding: 'utf8' },
      );
      assert.equal(acc.status, 1, acc.stderr);
      assert.match(
        acc.stderr,
        /^onnxfold: error: --accuracy runs the models with onnxruntime-node, which is not installed: npm install onnxruntime-node\n$/,
      );
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  },
);

// js/index.d.ts against a typed use of the package (tests/types/usage.ts), type-checked by
// TypeScript (a dev dependency) in strict mode: the usage must check, and its
// @ts-expect-error lines prove the declarations refuse what the package refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { need, repoRoot, run } from './env.mjs';

const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');

test('index.d.ts type-checks a typed use of the package (tsc --strict)', async (t) => {
  if (!need(t, existsSync(tsc), 'typescript is not installed (npm ci installs the dev dependencies)')) return;
  const args = [
    tsc,
    '--noEmit',
    '--strict',
    '--target',
    'es2022',
    '--module',
    'nodenext',
    '--moduleResolution',
    'nodenext',
    '--lib',
    'es2022,dom',
    '--types',
    'node',
    join(repoRoot, 'tests', 'types', 'usage.ts'),
  ];
  try {
    await run(process.execPath, args, { cwd: repoRoot });
  } catch (e) {
    assert.fail(`tsc reported errors:\n${e.stdout}${e.stderr}`);
  }
});

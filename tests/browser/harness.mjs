// What every browser test shares: where the built page, the shared data and Chromium are, the
// Chromium flags (headless in a container, nothing fetched from the net), and the rule for
// missing prerequisites: skip with the reason locally, fail under CI (process.env.CI).
//
//   const { playwright, skipReason } = await prerequisites('graph view', { files: [...], also: [...] });
//   describe('...', { skip: skipReason }, () => { ... launchChromium(playwright) ... });
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const webDir = join(repoRoot, 'build', 'web');
export const artifacts = join(repoRoot, 'build', 'test-artifacts');
export const chromiumPath = process.env.ONNXFOLD_CHROMIUM ?? '/usr/bin/chromium';
export const shared = resolve(process.env.ONNXFOLD_SHARED ?? join(repoRoot, '..', 'shared'));
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const PAGE_FILES = ['index.html', 'main.js', 'worker.js', 'onnxfold.wasm'];

// Chromium, playwright-core, the built page (its usual files and `files`; none with page: false,
// for tests that serve something else) and `also` (paths, or [description, present] pairs).
// Under CI a missing one is a failing test named after `what`.
export async function prerequisites(what, { page = true, files = [], also = [] } = {}) {
  const missing = [];
  if (!existsSync(chromiumPath)) missing.push(`Chromium (${chromiumPath}; scripts/bootstrap installs it)`);
  for (const f of page ? [...PAGE_FILES, ...files] : files) {
    if (!existsSync(join(webDir, f))) missing.push(`build/web/${f} (run scripts/build-web)`);
  }
  for (const a of also) {
    const [label, present] = Array.isArray(a) ? a : [a, existsSync(a)];
    if (!present) missing.push(label);
  }
  let playwright = null;
  try {
    playwright = await import('playwright-core');
  } catch {
    missing.push('playwright-core (npm ci)');
  }
  const skipReason = missing.length ? `missing: ${missing.join(', ')}` : false;
  if (skipReason && process.env.CI) {
    test(`${what} test prerequisites`, () => assert.fail(skipReason));
  }
  return { playwright, skipReason };
}

export function launchChromium(playwright) {
  return playwright.chromium.launch({ executablePath: chromiumPath, headless: true, args: CHROMIUM_ARGS });
}

#!/usr/bin/env node
// The I/O floor for a model and its external data: one node process that copies each file
// through a 16 MiB buffer (readSync/writeSync), nothing else. Whatever onnxfold does in node
// costs at least this: node's start-up plus reading and writing every byte once.
//   node bench/large/floor.mjs OUT_DIR FILE...
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { basename, join } from 'node:path';

const [outDir, ...files] = process.argv.slice(2);
if (!outDir || files.length === 0) {
  console.error('usage: floor.mjs OUT_DIR FILE...');
  process.exit(2);
}
const buffer = Buffer.allocUnsafe(1 << 24);
for (const file of files) {
  const from = openSync(file, 'r');
  const to = openSync(join(outDir, basename(file)), 'w');
  for (let n; (n = readSync(from, buffer, 0, buffer.length, null)) > 0;) {
    for (let done = 0; done < n;) done += writeSync(to, buffer, done, n - done);
  }
  closeSync(from);
  closeSync(to);
}

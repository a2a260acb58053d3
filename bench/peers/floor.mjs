#!/usr/bin/env node
// The I/O floor: a node process that reads IN and writes the same bytes to OUT, nothing else.
// Every node-based tool in bench/peers pays at least this (node start-up, reading the file into
// memory it touches for the first time, writing it back out).
//   node bench/peers/floor.mjs IN OUT
import { readFileSync, writeFileSync } from 'node:fs';

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: floor.mjs IN OUT');
  process.exit(2);
}
writeFileSync(output, readFileSync(input));

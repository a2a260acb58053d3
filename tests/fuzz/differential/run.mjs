#!/usr/bin/env node
// The differential fuzzer's command line (needs the wasm build: dist/onnxfold.{mjs,wasm}).
//
//   node tests/fuzz/differential/run.mjs --seed 1 --count 1000 [--minutes 30] [--qdq SHARE]
//       [--modes default,float16,split,quant-qoperator] [--out DIR] [--no-minimize] [--without NAME,...]
//   node tests/fuzz/differential/run.mjs --replay FILE.onnx...   (with its FILE.json beside it)
//
// --qdq: the share of seeds that are QDQ models (gen-qdq.mjs; default 0.25, 1 for QDQ models
// only), checked in the modes of QDQ_MODES asked for (default and the three quant modes), the
// others in those of MODES. Prints models compared, skipped (ORT cannot load or run the
// original), refused (onnxfold's clear errors, per mode), findings, ill-conditioned mismatches
// (check.mjs), models/s, and for the QDQ models the same counts, the share of their output
// elements at the end of the integer range, and how often ORT 'all' failed on the original.
// Findings are minimized and written to --out
// (default build/differential-findings; the ones worth keeping are copied, with a name that says
// what they are, to findings/ while open and to regressions/ once fixed). Exit status 1 when
// there is a finding. --without
// leaves out emitters or forms with an open finding (gen.mjs FEATURES), to look past it.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { replay, runCampaign } from './campaign.mjs';
import { ALL_MODES } from './check.mjs';
import { EMITTERS, FEATURES } from './gen.mjs';
import { QDQ_EMITTERS } from './gen-qdq.mjs';

const here = dirname(fileURLToPath(import.meta.url));

async function main() {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: {
    seed: { type: 'string', default: '1' }, count: { type: 'string', default: '1000' },
    minutes: { type: 'string' }, modes: { type: 'string', default: ALL_MODES.join(',') }, qdq: { type: 'string', default: '0.25' },
    out: { type: 'string', default: join(here, '..', '..', '..', 'build', 'differential-findings') }, 'no-minimize': { type: 'boolean', default: false },
    replay: { type: 'boolean', default: false }, without: { type: 'string', default: '' }, help: { type: 'boolean', short: 'h', default: false },
  } });
  if (values.help) {
    console.log('usage: run.mjs --seed S --count N [--minutes M] [--qdq SHARE] [--modes default,float16,...] [--out DIR] [--no-minimize]\n' +
      `       modes: ${ALL_MODES.join(' ')}\n` +
      `       [--without NAME,...]  (emitters: ${EMITTERS.join(' ')}; forms: ${FEATURES.join(' ')}; QDQ emitters: ${QDQ_EMITTERS.join(' ')})\n` +
      '       run.mjs --replay FILE.onnx...');
    return 0;
  }
  if (values.replay) {
    let bad = 0;
    for (const p of positionals) {
      const r = await replay(p);
      const msg = r.findings.map((f) => `${f.mode}/${f.kind}: ${f.message}`).join('\n    ');
      console.log(`${p}: ${r.status}${r.findings.length ? `, ${r.findings.length} finding(s)\n    ${msg}` : ', no finding'}`);
      if (r.findings.length) bad++;
    }
    return bad ? 1 : 0;
  }
  const without = values.without ? values.without.split(',') : [];
  const unknown = without.filter((w) => !EMITTERS.includes(w) && !FEATURES.includes(w) && !QDQ_EMITTERS.includes(w));
  if (unknown.length) throw new Error(`--without: unknown ${unknown.join(', ')}`);
  const modes = values.modes.split(',');
  const badModes = modes.filter((m) => !ALL_MODES.includes(m));
  if (badModes.length) throw new Error(`--modes: unknown ${badModes.join(', ')} (modes: ${ALL_MODES.join(', ')})`);
  const qdq = Number(values.qdq);
  if (!(qdq >= 0 && qdq <= 1)) throw new Error(`--qdq: a share from 0 to 1, not ${values.qdq}`);
  const stats = await runCampaign({
    seed: Number(values.seed), count: Number(values.count),
    minutes: values.minutes ? Number(values.minutes) : Infinity,
    modes, qdq, findingsDir: values.out, shrink: !values['no-minimize'],
    without,
    log: (line) => console.log(line),
  });
  const refused = Object.entries(stats.refused).map(([m, n]) => `${m} ${n}`).join(', ') || '0';
  console.log(`models compared ${stats.compared}, skipped ${stats.skipped}, refused by onnxfold (per mode) ${refused}, ` +
    `findings ${stats.findings.length} (${stats.unique} distinct), ill-conditioned ${stats.illConditioned.length}, ` +
    `${stats.seconds.toFixed(1)} s, ${stats.rate.toFixed(1)} models/s`);
  const q = stats.qdq;
  if (q.models) {
    const qr = Object.entries(q.refused).map(([m, n]) => `${m} ${n}`).join(', ') || '0';
    console.log(`  QDQ models ${q.models}: compared ${q.compared}, skipped ${q.skipped}, refused (per mode) ${qr}, ` +
      `findings ${q.findings}; output elements at the clamp ${q.clamped}/${q.elements} ` +
      `(${(100 * q.clamped / Math.max(1, q.elements)).toFixed(1)} %); ORT 'all' failed on ${q.allFailed} originals (${q.allCrashed} aborted)`);
    for (const [why, n] of Object.entries(q.allReasons).sort((a, b) => b[1] - a[1]).slice(0, 6)) console.log(`  ORT 'all' failed ${n}: ${why}`);
  }
  for (const f of stats.illConditioned.slice(0, 5)) console.log(`  ill-conditioned seed ${f.seed} ${f.mode}: ${f.message.slice(0, 240)}`);
  for (const [why, n] of Object.entries(stats.refuseReasons).sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(`  refused ${n}: ${why}`);
  for (const [why, n] of Object.entries(stats.skipReasons).sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(`  skipped ${n}: ${why}`);
  return stats.findings.length ? 1 : 0;
}

process.exitCode = await main();

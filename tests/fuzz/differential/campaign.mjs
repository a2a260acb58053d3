// A campaign: models from consecutive seeds, each checked (check.mjs); on a finding the model is
// minimized (minimize.mjs) and written as <dir>/<seed>-<mode>-<kind>.onnx with a .json saying
// what differs. Findings with the same mode, kind and ops after minimizing are written once.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildModel } from '../../node/onnx-builder.mjs';
import { checkModel, MODES, signature } from './check.mjs';
import { generate } from './gen.mjs';
import { minimize } from './minimize.mjs';

const optionsOf = (spec, modes) => ({ dims: spec.dims, discontinuous: spec.discontinuous, random: spec.random, modes });

/** Check the model of one spec; the result of checkModel. */
export async function checkSpec(spec, modes = MODES) {
  return checkModel(buildModel(spec), optionsOf(spec, modes));
}

// JSON for a spec: typed arrays as plain arrays (int64 as strings).
function specJson(spec) {
  return JSON.parse(JSON.stringify(spec, (k, v) => (typeof v === 'bigint' ? String(v)
    : ArrayBuffer.isView(v) ? Array.from(v, (x) => (typeof x === 'bigint' ? String(x) : x)) : v)));
}

/**
 * Options: seed (first), count (models at most), minutes (stop after), modes, findingsDir
 * (null: do not write), shrink (minimize findings, default true), maxShrinks (minimize only the
 * first N findings: a failing CI run stays short), without (gen.mjs: what not to generate), log
 * (progress lines).
 * Returns {compared, skipped, refused: {mode: n}, findings: [...], unique, seconds, rate, skipReasons}.
 */
export async function runCampaign({ seed = 1, count = 100, minutes = Infinity, modes = MODES,
  findingsDir = null, shrink = true, maxShrinks = Infinity, without = [], log = () => {} } = {}) {
  const stats = { compared: 0, skipped: 0, refused: {}, findings: [], unique: 0, seconds: 0, rate: 0, skipReasons: {}, refuseReasons: {} };
  const seen = new Set();
  const t0 = Date.now();
  const deadline = t0 + minutes * 60e3;
  for (let s = seed; s < seed + count && Date.now() < deadline; s++) {
    const spec = generate(s, { without });
    const r = await checkSpec(spec, modes);
    for (const [m, why] of Object.entries(r.refused)) {
      stats.refused[m] = (stats.refused[m] ?? 0) + 1;
      const key = `${m}: ${why.replace(/'[^']*'/g, "'#'").replace(/\d+/g, '#').slice(0, 140)}`;
      stats.refuseReasons[key] = (stats.refuseReasons[key] ?? 0) + 1;
    }
    if (r.status === 'skipped') {
      stats.skipped++;
      const why = r.note.replace(/\b[a-z]+\d+\b|\d+/g, '#').slice(0, 120);
      stats.skipReasons[why] = (stats.skipReasons[why] ?? 0) + 1;
    } else {
      stats.compared++;
    }
    const done = stats.compared + stats.skipped;
    if (done % 250 === 0) log(`${done} models (seed ${s}), ${stats.findings.length} findings, ${(done / ((Date.now() - t0) / 1e3)).toFixed(1)} models/s`);
    if (!r.findings.length) continue;
    const first = r.findings[0];
    const sig = signature(first);
    let small = spec;
    let checks = 0;
    const shrinkThis = shrink && stats.findings.length < maxShrinks;
    if (shrinkThis) {
      ({ spec: small, checks } = await minimize(spec, async (c) => {
        const rr = await checkSpec(c, [first.mode]);
        return rr.findings.some((f) => signature(f) === sig);
      }));
    }
    let final = first;
    if (shrinkThis) {
      // The minimized model must show the finding on its own, or the original is kept.
      final = (await checkSpec(small, [first.mode])).findings.find((f) => signature(f) === sig);
      if (!final) {
        final = first;
        small = spec;
      }
    }
    // One file per kind of problem: the error text (names and numbers left out) tells load,
    // run and io findings apart; a mismatch is known by the ops left after minimizing.
    const text = final.message.replace(/'[^']*'|\([A-Za-z]+_\d+\)/g, '#').replace(/\d+/g, '#');
    const key = `${sig}:${first.kind === 'mismatch' || first.kind === 'stochastic' ? small.ops.join(',') : text}`;
    const finding = { seed: s, opset: spec.opset, mode: first.mode, kind: first.kind, message: final.message,
      nodes: small.nodes.length, ops: small.ops, originalNodes: spec.nodes.length, minimizeChecks: checks,
      others: r.findings.slice(1).map((f) => `${f.mode}/${f.kind}: ${f.message}`), new: !seen.has(key) };
    stats.findings.push(finding);
    log(`FINDING seed ${s} opset ${spec.opset} ${sig}: ${final.message.slice(0, 300)} [${small.nodes.length} nodes: ${small.ops.join(' ')}]`);
    if (seen.has(key)) continue;
    seen.add(key);
    stats.unique++;
    if (findingsDir) {
      mkdirSync(findingsDir, { recursive: true });
      const base = join(findingsDir, `${s}-${first.mode}-${first.kind}`);
      writeFileSync(`${base}.onnx`, buildModel(small));
      writeFileSync(`${base}.json`, `${JSON.stringify({ ...finding, status: 'open',
        replay: `node tests/fuzz/differential/run.mjs --replay ${base}.onnx`, spec: specJson(small) }, null, 1)}\n`);
    }
  }
  stats.seconds = (Date.now() - t0) / 1e3;
  stats.rate = (stats.compared + stats.skipped) / stats.seconds;
  return stats;
}

/** Replays a written finding or regression (FILE.onnx, FILE.json beside it): its findings now. */
export async function replay(path) {
  const json = path.replace(/\.onnx$/, '.json');
  const meta = existsSync(json) ? JSON.parse(readFileSync(json, 'utf8')) : {};
  const r = await checkModel(new Uint8Array(readFileSync(path)), {
    dims: meta.spec?.dims ?? { batch: 2 }, discontinuous: meta.spec?.discontinuous ?? false,
    random: meta.spec?.random ?? false });
  return { meta, ...r };
}

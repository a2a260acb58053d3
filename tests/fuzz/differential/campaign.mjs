// A campaign: models from consecutive seeds, each checked (check.mjs); on a finding the model is
// minimized (minimize.mjs) and written as <dir>/<seed>-<mode>-<kind>.onnx (and its .data when
// the model keeps external data) with a .json saying what differs. Findings with the same mode, kind and ops after minimizing are written once.
// A share of the seeds (option qdq) are QDQ models (gen-qdq.mjs), checked in QDQ_MODES; the
// others are gen.mjs models, checked in MODES.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { buildModel } from '../../node/onnx-builder.mjs';
import { ALL_MODES, checkModel, MODES, QDQ_MODES, signature } from './check.mjs';
import { generate } from './gen.mjs';
import { generateQdq } from './gen-qdq.mjs';
import { minimize } from './minimize.mjs';
import { closeAll } from './ort-all.mjs';

const optionsOf = (spec, modes) => ({ dims: spec.dims, discontinuous: spec.discontinuous, random: spec.random,
  quant: !!spec.quant, modes });

/** The modes of `modes` a spec is checked in: QDQ_MODES for a QDQ model, MODES for the others. */
export const modesFor = (spec, modes) => modes.filter((m) => (spec.quant ? QDQ_MODES : MODES).includes(m));

/** Whether seed `s` is a QDQ model when a share `qdq` (0..1) of the seeds are, spread evenly. */
export function isQdqSeed(s, qdq) {
  if (qdq >= 1) return true;
  if (qdq <= 0) return false;
  return (s * 0.6180339887498949) % 1 < qdq;
}

/** The spec of seed `s`. */
export const specOf = (s, { qdq = 0, without = [] } = {}) => (isQdqSeed(s, qdq) ? generateQdq(s, { without }) : generate(s, { without }));

/**
 * The model of a spec as files: {bytes, files} (files: {location: Uint8Array} of its external
 * data, or null). With spec.external (gen.mjs externalOf) every initializer of at least
 * `threshold` bytes (small shapes excepted) goes to one data file, `location`, at consecutive
 * (unaligned) offsets.
 */
export function modelFiles(spec, location = 'weights.bin') {
  if (!spec.external) return { bytes: buildModel(spec), files: null };
  const parts = [];
  let offset = 0;
  const initializers = spec.initializers.map((t) => {
    if (t.type === 'string' || t.external) return t;
    const view = ArrayBuffer.isView(t.data) ? t.data : Float32Array.from(t.data);   // as buildModel writes it
    // Small tensors stay inline, as onnxfold writes them (int32/int64 under 1 KiB: shapes, axes;
    // others under 64 bytes: Resize scales, Range bounds): ONNX Runtime's shape inference reads
    // them at load and cannot from external data.
    const integer = t.type === 'int64' || t.type === 'int32';
    if (view.byteLength < Math.max(spec.external.threshold, integer ? 1024 : 64)) return t;
    parts.push(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
    const external = { location, offset, length: view.byteLength };
    offset += view.byteLength;
    return { name: t.name, type: t.type, dims: t.dims, external };
  });
  if (!parts.length) return { bytes: buildModel(spec), files: null };
  const data = new Uint8Array(offset);
  let o = 0;
  for (const p of parts) { data.set(p, o); o += p.length; }
  return { bytes: buildModel({ ...spec, initializers }), files: { [location]: data } };
}

/** Check the model of one spec; the result of checkModel. */
export async function checkSpec(spec, modes = ALL_MODES) {
  const { bytes, files } = modelFiles(spec);
  return checkModel(bytes, { ...optionsOf(spec, modesFor(spec, modes)), files, outThreshold: spec.external?.outThreshold ?? null });
}

// JSON for a spec: typed arrays as plain arrays (int64 as strings).
function specJson(spec) {
  return JSON.parse(JSON.stringify(spec, (k, v) => (typeof v === 'bigint' ? String(v)
    : ArrayBuffer.isView(v) ? Array.from(v, (x) => (typeof x === 'bigint' ? String(x) : x)) : v)));
}

/**
 * Options: seed (first), count (models at most), minutes (stop after), modes (ALL_MODES: each
 * model is checked in those of its kind, modesFor), qdq (share of QDQ models, 0..1; default 0),
 * findingsDir (null: do not write), shrink (minimize findings, default true), maxShrinks
 * (minimize only the first N findings: a failing CI run stays short), without (gen.mjs and
 * gen-qdq.mjs: what not to generate), log (progress lines).
 * Returns {compared, skipped, refused: {mode: n}, findings: [...], unique, illConditioned: [...],
 * qdq: {models, compared, skipped, refused: {mode: n}, findings, allFailed, allCrashed, elements,
 * clamped, allReasons}, seconds, rate, skipReasons, refuseReasons}.
 */
export async function runCampaign({ seed = 1, count = 100, minutes = Infinity, modes = ALL_MODES, qdq = 0,
  findingsDir = null, shrink = true, maxShrinks = Infinity, without = [], log = () => {} } = {}) {
  const stats = { compared: 0, skipped: 0, refused: {}, findings: [], unique: 0, illConditioned: [], seconds: 0, rate: 0,
    skipReasons: {}, refuseReasons: {},
    qdq: { models: 0, compared: 0, skipped: 0, refused: {}, findings: 0, allFailed: 0, allCrashed: 0, elements: 0, clamped: 0, allReasons: {} } };
  const seen = new Set();
  const t0 = Date.now();
  const deadline = t0 + minutes * 60e3;
  for (let s = seed; s < seed + count && Date.now() < deadline; s++) {
    const spec = specOf(s, { qdq, without });
    if (!modesFor(spec, modes).length) continue;   // none of the modes asked for is of this kind
    const r = await checkSpec(spec, modes);
    for (const f of r.illConditioned) stats.illConditioned.push({ seed: s, opset: spec.opset, ...f });
    if (spec.quant) {
      const q = stats.qdq;
      q.models++;
      if (r.status === 'skipped') q.skipped++; else q.compared++;
      for (const m of Object.keys(r.refused)) q.refused[m] = (q.refused[m] ?? 0) + 1;
      q.findings += r.findings.length;
      if (r.quant) {
        q.elements += r.quant.elements;
        q.clamped += r.quant.clamped;
        if (r.quant.all) {
          q.allFailed++;
          if (r.quant.crashed) q.allCrashed++;
          const why = r.quant.all.replace(/'[^']*'|"[^"]*"/g, '#').replace(/\d+/g, '#').slice(0, 140);
          q.allReasons[why] = (q.allReasons[why] ?? 0) + 1;
        }
      }
    }
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
    if (done % 250 === 0) {
      log(`${done} models (seed ${s}; ${stats.qdq.models} QDQ), ${stats.findings.length} findings, ` +
        `${stats.illConditioned.length} ill-conditioned, ${(done / ((Date.now() - t0) / 1e3)).toFixed(1)} models/s`);
    }
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
      const { bytes, files } = modelFiles(small, `${basename(base)}.data`);
      writeFileSync(`${base}.onnx`, bytes);
      for (const [location, data] of Object.entries(files ?? {})) writeFileSync(join(findingsDir, location), data);
      writeFileSync(`${base}.json`, `${JSON.stringify({ ...finding, status: 'open', externalFiles: Object.keys(files ?? {}),
        replay: `node tests/fuzz/differential/run.mjs --replay ${base}.onnx`, spec: specJson(small) }, null, 1)}\n`);
    }
  }
  stats.seconds = (Date.now() - t0) / 1e3;
  stats.rate = (stats.compared + stats.skipped) / stats.seconds;
  closeAll();
  return stats;
}

/** Replays a written finding or regression (FILE.onnx, FILE.json beside it): its findings now. */
export async function replay(path) {
  const json = path.replace(/\.onnx$/, '.json');
  const meta = existsSync(json) ? JSON.parse(readFileSync(json, 'utf8')) : {};
  const files = meta.externalFiles?.length
    ? Object.fromEntries(meta.externalFiles.map((f) => [f, new Uint8Array(readFileSync(join(dirname(path), f)))])) : null;
  const r = await checkModel(new Uint8Array(readFileSync(path)), {
    dims: meta.spec?.dims ?? { batch: 2 }, discontinuous: meta.spec?.discontinuous ?? false,
    random: meta.spec?.random ?? false, quant: meta.spec?.quant ?? false, files,
    outThreshold: meta.spec?.external?.outThreshold ?? null });
  return { meta, ...r };
}

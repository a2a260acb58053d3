#!/usr/bin/env node
// Benchmark onnxfold against its peers and the I/O floor, one model at a time, every tool as a
// whole process that reads the model file and writes its result (see bench/peers/README.md).
//
//   node bench/peers/run.mjs [--models DIR] [--model SUBSTR ...] [--tools a,b,...] [--runs N]
//                            [--timeout SECONDS] [--oracle-timeout SECONDS] [--no-oracle]
//                            [--out-dir DIR] [--keep]
//
// Prints a markdown table on stdout (progress goes to stderr) and writes results.md and
// results.json to --out-dir (default: bench/peers). A reported benchmark, not a timed test.
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '..', '..');

const usage =
  'usage: run.mjs [--models DIR] [--model SUBSTR ...] [--tools a,b,...] [--runs N] ' +
  '[--timeout S] [--oracle-timeout S] [--no-oracle] [--out-dir DIR] [--keep]';
let args;
try {
  args = parseArgs({
    options: {
      models: { type: 'string' },
      model: { type: 'string', multiple: true },
      tools: { type: 'string' },
      runs: { type: 'string', default: '3' },
      timeout: { type: 'string', default: '300' },
      'oracle-timeout': { type: 'string', default: '300' },
      'no-oracle': { type: 'boolean', default: false },
      'out-dir': { type: 'string' },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  });
} catch (e) {
  console.error(`${e.message}\n${usage}`);
  process.exit(2);
}
const opt = args.values;
if (opt.help) {
  console.log(usage);
  process.exit(0);
}
const positiveNumber = (s, name) => {
  const x = Number(s);
  if (!Number.isFinite(x) || x <= 0) {
    console.error(`bad --${name}: ${s}\n${usage}`);
    process.exit(2);
  }
  return x;
};
const RUNS = Math.round(positiveNumber(opt.runs, 'runs'));
const TIMEOUT_MS = positiveNumber(opt.timeout, 'timeout') * 1000;
const ORACLE_TIMEOUT_MS = positiveNumber(opt['oracle-timeout'], 'oracle-timeout') * 1000;
const modelsDir = resolve(
  opt.models || process.env.ONNXFOLD_SHARED_MODELS || resolve(repoRoot, '..', 'shared', 'models'),
);
const outDir = resolve(opt['out-dir'] || here);
const cli = resolve(process.env.ONNXFOLD_CLI || resolve(repoRoot, 'build', 'native', 'onnxfold'));
const wasmModule = resolve(process.env.ONNXFOLD_WASM_MODULE || resolve(repoRoot, 'dist', 'onnxfold.mjs'));
const TIME = '/usr/bin/time';
const log = (...a) => console.error(...a);

// ---------------------------------------------------------------------------------------------
// Tools. Each reads IN and writes OUT as a separate process.
const node = process.execPath;
const script = (name) => resolve(here, name);
// ESM-only packages (onnxsim) have no require condition, so look for the package folder.
const resolvable = (pkg) => existsSync(resolve(repoRoot, 'node_modules', pkg, 'package.json'));
const ALL_TOOLS = [
  {
    id: 'floor',
    label: 'floor (node read+write)',
    cmd: (i, o) => [node, script('floor.mjs'), i, o],
    missing: () => null,
  },
  {
    id: 'onnxfold-native',
    label: 'onnxfold native CLI',
    cmd: (i, o) => [cli, 'optimize', i, '-o', o, '-q'],
    missing: () =>
      existsSync(cli) ? null : `${cli} not built (cmake --preset native && cmake --build --preset native)`,
  },
  {
    id: 'onnxfold-wasm',
    label: 'onnxfold wasm (node)',
    cmd: (i, o) => [node, script('onnxfold-wasm.mjs'), i, o],
    missing: () =>
      existsSync(wasmModule)
        ? null
        : `${wasmModule} not built (cmake --preset wasm && cmake --build --preset wasm)`,
  },
  {
    // The same process with V8 kept on its baseline compiler (Liftoff): a one-shot run ends before
    // TurboFan's tier-up (compiled in background threads that compete for the cores) pays back.
    id: 'onnxfold-wasm-liftoff',
    label: 'onnxfold wasm (node --liftoff-only)',
    cmd: (i, o) => [node, '--liftoff-only', script('onnxfold-wasm.mjs'), i, o],
    missing: () =>
      existsSync(wasmModule)
        ? null
        : `${wasmModule} not built (cmake --preset wasm && cmake --build --preset wasm)`,
  },
  {
    id: 'onnxsim',
    label: 'onnxsim (npm, wasm)',
    cmd: (i, o) => [node, script('onnxsim.mjs'), i, o],
    missing: () => (resolvable('onnxsim') ? null : 'npm package onnxsim not installed (npm ci)'),
  },
  {
    id: 'ort-basic',
    label: 'onnxruntime-node basic',
    cmd: (i, o) => [node, script('ort-basic.mjs'), i, o],
    missing: () =>
      resolvable('onnxruntime-node') ? null : 'npm package onnxruntime-node not installed (npm ci)',
  },
];
const PEERS = ['onnxsim', 'ort-basic'];
let tools = ALL_TOOLS;
if (opt.tools) {
  const want = opt.tools
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const w of want) {
    if (!ALL_TOOLS.some((t) => t.id === w)) {
      console.error(`unknown tool ${w}; known: ${ALL_TOOLS.map((t) => t.id).join(', ')}`);
      process.exit(2);
    }
  }
  tools = ALL_TOOLS.filter((t) => want.includes(t.id));
}
if (!existsSync(TIME)) {
  console.error(`${TIME} not found: install the Debian package 'time' (apt-get install time)`);
  process.exit(2);
}
if (!existsSync(modelsDir)) {
  console.error(`models folder ${modelsDir} not found (--models DIR)`);
  process.exit(2);
}
let models = readdirSync(modelsDir)
  .filter((f) => f.endsWith('.onnx'))
  .sort();
if (opt.model) models = models.filter((m) => opt.model.some((s) => m.includes(s)));
if (models.length === 0) {
  console.error(`no .onnx models in ${modelsDir}${opt.model ? ' matching --model' : ''}`);
  process.exit(2);
}

// ---------------------------------------------------------------------------------------------
// One timed run: /usr/bin/time writes elapsed, peak RSS (KB), user and system CPU to a file; the
// wall time is taken here around the whole child. The child gets its own process group so a
// timeout kills it and everything it started.
function runTimed(argv, timeoutMs, timeFile) {
  return new Promise((resolveRun) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(TIME, ['-o', timeFile, '-f', '%e %M %U %S', ...argv], {
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
      if (stderr.length > 65536) stderr = stderr.slice(-32768);
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      resolveRun({ code: -1, signal: null, timedOut: false, wallS: 0, stderr: String(e.message) });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
      let rssMB = null;
      let userS = null;
      let sysS = null;
      try {
        // A child killed by a signal makes time print "Command terminated by signal N" first.
        const line = readFileSync(timeFile, 'utf8').trim().split('\n').pop();
        const [, kb, u, s] = line.split(/\s+/).map(Number);
        if (Number.isFinite(kb)) rssMB = kb / 1024;
        if (Number.isFinite(u)) userS = u;
        if (Number.isFinite(s)) sysS = s;
      } catch {
        /* no time file: killed */
      }
      resolveRun({ code, signal, timedOut, wallS, rssMB, userS, sysS, stderr });
    });
  });
}

function lastLine(text, max = 200) {
  const lines = String(text)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !/^Command (exited|terminated)/.test(l));
  const l = lines.pop() || '';
  return l.length > max ? `${l.slice(0, max - 3)}...` : l;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n === 0 ? null : n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};

function countNodes(file) {
  const r = spawnSync(cli, ['info', file, '--json'], {
    encoding: 'utf8',
    timeout: 120000,
    maxBuffer: 64 << 20,
  });
  if (r.status !== 0) return { nodes: null, error: lastLine(r.stderr || r.error?.message || 'info failed') };
  try {
    return { nodes: JSON.parse(r.stdout).nodes };
  } catch (e) {
    return { nodes: null, error: e.message };
  }
}

function runOracle(orig, out) {
  return new Promise((resolveRun) => {
    const child = spawn(node, [resolve(repoRoot, 'tests', 'node', 'check-equivalence.mjs'), orig, out], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let text = '';
    child.stdout.on('data', (d) => {
      text += d;
    });
    child.stderr.on('data', (d) => {
      text += d;
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }, ORACLE_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      const message = lastLine(text, 1000).replace(/^(OK|FAIL): \S+ vs \S+: /, '');
      if (timedOut)
        resolveRun({ result: 'error', message: `oracle timed out after ${ORACLE_TIMEOUT_MS / 1000} s` });
      else if (code === 0) resolveRun({ result: 'ok', message });
      else if (code === 1) resolveRun({ result: 'FAIL', message });
      else resolveRun({ result: 'error', message });
    });
  });
}

function toolVersions() {
  const v = {};
  const r = spawnSync(cli, ['--version'], { encoding: 'utf8' });
  v['onnxfold-native'] = r.status === 0 ? r.stdout.trim() : null;
  for (const pkg of ['onnxsim', 'onnxruntime-node', 'onnxruntime-web']) {
    try {
      v[pkg] = JSON.parse(
        readFileSync(resolve(repoRoot, 'node_modules', pkg, 'package.json'), 'utf8'),
      ).version;
    } catch {
      v[pkg] = null;
    }
  }
  v.node = process.version;
  const g = spawnSync('git', ['-C', repoRoot, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  v.git = g.status === 0 ? g.stdout.trim() : null;
  const dirty = spawnSync('git', ['-C', repoRoot, 'status', '--porcelain', '--untracked-files=no'], {
    encoding: 'utf8',
  });
  if (dirty.status === 0 && dirty.stdout.trim()) v.git += ' (+ uncommitted changes)';
  const mtime = (f) => (existsSync(f) ? statSync(f).mtime.toISOString() : null);
  v.cliBuilt = mtime(cli);
  v.wasmBuilt = mtime(wasmModule.replace(/\.mjs$/, '.wasm'));
  return v;
}

// ---------------------------------------------------------------------------------------------
const work = mkdtempSync(join(tmpdir(), 'onnxfold-peers-'));
const startedAt = new Date();
const loadStart = loadavg();
const env = {
  date: startedAt.toISOString(),
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model,
  memGiB: Math.round(totalmem() / 2 ** 30),
  loadavgStart: loadStart.map((x) => +x.toFixed(2)),
  runs: RUNS,
  timeoutS: TIMEOUT_MS / 1000,
  modelsDir,
  versions: toolVersions(),
  cli,
  wasmModule,
};
log(
  `bench/peers: ${models.length} model(s), ${tools.length} tool(s), ${RUNS} run(s) each, ` +
    `timeout ${TIMEOUT_MS / 1000} s; work dir ${work}; load ${env.loadavgStart.join(' ')}`,
);

const results = [];
try {
  for (const model of models) {
    const inPath = join(modelsDir, model);
    const inBytes = readFileSync(inPath); // also warms the page cache for every tool alike
    const nodesIn = countNodes(inPath).nodes;
    const entry = { model, bytesIn: inBytes.length, nodesIn, tools: {} };
    results.push(entry);
    log(`\n${model} (${(inBytes.length / 2 ** 20).toFixed(1)} MB, ${nodesIn} nodes)`);
    const runs = Object.fromEntries(tools.map((t) => [t.id, []]));
    const failed = {};
    for (const t of tools) {
      const why = t.missing();
      if (why) failed[t.id] = `skipped: ${why}`;
    }
    for (let rep = 0; rep < RUNS; rep++) {
      // Rotate the order every repetition so no tool always runs right after the same other one.
      const order = tools.map((_, i) => tools[(i + rep) % tools.length]);
      for (const t of order) {
        if (failed[t.id]) continue;
        const outPath = join(work, `${t.id}.onnx`);
        rmSync(outPath, { force: true });
        const r = await runTimed(t.cmd(inPath, outPath), TIMEOUT_MS, join(work, `${t.id}.time`));
        const wrote = existsSync(outPath) && statSync(outPath).size > 0;
        if (r.timedOut) failed[t.id] = `failed: timed out after ${TIMEOUT_MS / 1000} s`;
        else if (r.code !== 0 || r.signal) {
          failed[t.id] = `failed: exit ${r.signal || r.code}: ${lastLine(r.stderr) || '(no message)'}`;
        } else if (!wrote) failed[t.id] = 'failed: exit 0 but no output written';
        if (failed[t.id]) {
          log(`  ${t.id.padEnd(16)} ${failed[t.id]}`);
          continue;
        }
        runs[t.id].push(r);
        log(
          `  ${t.id.padEnd(16)} run ${rep + 1}: ${r.wallS.toFixed(3)} s, ` +
            `${r.rssMB === null ? '?' : r.rssMB.toFixed(1)} MB`,
        );
      }
    }
    for (const t of tools) {
      const rs = runs[t.id];
      const outPath = join(work, `${t.id}.onnx`);
      if (failed[t.id]) {
        entry.tools[t.id] = { status: failed[t.id], runs: rs.map((r) => +r.wallS.toFixed(4)) };
        continue;
      }
      const bytesOut = statSync(outPath).size;
      const n = countNodes(outPath);
      const rec = {
        status: 'ok',
        wallS: median(rs.map((r) => r.wallS)),
        wallMinS: Math.min(...rs.map((r) => r.wallS)),
        rssMB: median(rs.filter((r) => r.rssMB !== null).map((r) => r.rssMB)),
        cpuS: median(rs.filter((r) => r.userS !== null).map((r) => r.userS + r.sysS)),
        runs: rs.map((r) => +r.wallS.toFixed(4)),
        nodesOut: n.nodes,
        bytesOut,
      };
      if (n.error) rec.nodesError = n.error;
      if (t.id === 'floor') {
        rec.oracle = readFileSync(outPath).equals(inBytes) ? 'same bytes' : 'FAIL: bytes differ';
      } else if (!opt['no-oracle']) {
        const o = await runOracle(inPath, outPath);
        rec.oracle = o.result;
        rec.oracleMessage = o.message;
        log(`  ${t.id.padEnd(16)} oracle ${o.result}: ${o.message}`);
      }
      entry.tools[t.id] = rec;
    }
    // Ratios: wall and peak RSS to the floor, wall and RSS to each peer.
    const ok = (id) => entry.tools[id]?.status === 'ok';
    for (const t of tools) {
      const rec = entry.tools[t.id];
      if (!ok(t.id)) continue;
      rec.ratio = {};
      for (const other of ['floor', ...PEERS]) {
        if (other === t.id || !ok(other)) continue;
        const o = entry.tools[other];
        rec.ratio[other] = {
          wall: rec.wallS / o.wallS,
          rss: rec.rssMB !== null && o.rssMB ? rec.rssMB / o.rssMB : null,
        };
      }
    }
    if (!opt.keep) for (const t of tools) rmSync(join(work, `${t.id}.onnx`), { force: true });
  }
} finally {
  if (!opt.keep) rmSync(work, { recursive: true, force: true });
  else log(`outputs kept in ${work} (last model only)`);
}
env.loadavgEnd = loadavg().map((x) => +x.toFixed(2));
env.elapsedS = Math.round((Date.now() - startedAt) / 1000);

// ---------------------------------------------------------------------------------------------
// Report.
const fmt = (x, d = 2) => (x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(d));
const fmtX = (x) => (x === null || x === undefined || !Number.isFinite(x) ? '–' : `${x.toFixed(2)}×`);
const mb = (b) => (b / 2 ** 20).toFixed(2);
const esc = (s) => String(s).replace(/\|/g, '\\|');
const geomean = (xs) => (xs.length ? Math.exp(xs.reduce((a, x) => a + Math.log(x), 0) / xs.length) : null);

const lines = [];
lines.push(
  `Run ${env.date}: ${env.cpus} × ${env.cpuModel}, ${env.memGiB} GiB, load average ` +
    `${env.loadavgStart.join(' ')} at start, ${env.loadavgEnd.join(' ')} at end; ` +
    `median of ${RUNS} run(s) per tool per model, timeout ${env.timeoutS} s; ${env.elapsedS} s in all.`,
);
const v = env.versions;
lines.push(
  `Versions: ${v['onnxfold-native'] || 'onnxfold ?'} (repo at git ${v.git}; CLI ${env.cli} built ${v.cliBuilt}, ` +
    `wasm ${env.wasmModule} built ${v.wasmBuilt}), onnxsim ${v.onnxsim}, onnxruntime-node ${v['onnxruntime-node']}, ` +
    `onnxruntime-web ${v['onnxruntime-web']}, node ${v.node}.`,
);
lines.push('');
lines.push(
  '| model | tool | status | wall s | ×floor | ×onnxsim | ×ORT | peak RSS MB | RSS ×floor | nodes out (in) | MB out (in) | oracle |',
);
lines.push('|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|');
for (const e of results) {
  for (const t of tools) {
    const r = e.tools[t.id];
    const name = e.model;
    if (!r || r.status !== 'ok') {
      lines.push(`| ${name} | ${t.id} | ${esc(r ? r.status : 'not run')} | | | | | | | | | |`);
      continue;
    }
    const ratio = r.ratio || {};
    lines.push(
      `| ${name} | ${t.id} | ok | ${fmt(r.wallS, 3)} | ${fmtX(ratio.floor?.wall)} | ` +
        `${fmtX(ratio.onnxsim?.wall)} | ${fmtX(ratio['ort-basic']?.wall)} | ${fmt(r.rssMB, 1)} | ` +
        `${fmtX(ratio.floor?.rss)} | ${r.nodesOut ?? '?'} (${e.nodesIn ?? '?'}) | ${mb(r.bytesOut)} (${mb(e.bytesIn)}) | ` +
        `${esc(r.oracle ?? '–')} |`,
    );
  }
}
// Summary: geometric means over the models where both tools succeeded.
lines.push('');
lines.push('Geometric mean over the models where both succeeded, wall time (peak RSS), row ÷ column:');
lines.push('');
const cols = tools.filter((t) => t.id === 'floor' || PEERS.includes(t.id) || t.id.startsWith('onnxfold'));
lines.push(`| row ÷ column | ${cols.map((c) => c.id).join(' | ')} | ok / oracle ok |`);
lines.push(`|---|${cols.map(() => '--:').join('|')}|--:|`);
const summary = {};
for (const t of tools) {
  const cells = [];
  summary[t.id] = {};
  for (const c of cols) {
    if (c.id === t.id) {
      cells.push('1');
      continue;
    }
    const w = [];
    const m = [];
    for (const e of results) {
      const a = e.tools[t.id];
      const b = e.tools[c.id];
      if (a?.status !== 'ok' || b?.status !== 'ok') continue;
      w.push(a.wallS / b.wallS);
      if (a.rssMB && b.rssMB) m.push(a.rssMB / b.rssMB);
    }
    const gw = geomean(w);
    const gm = geomean(m);
    summary[t.id][c.id] = { wall: gw, rss: gm, models: w.length };
    cells.push(gw === null ? '–' : `${gw.toFixed(2)}× (${gm === null ? '–' : `${gm.toFixed(2)}×`})`);
  }
  const nOk = results.filter((e) => e.tools[t.id]?.status === 'ok').length;
  const nOracle = results.filter((e) => ['ok', 'same bytes'].includes(e.tools[t.id]?.oracle)).length;
  cells.push(`${nOk} / ${opt['no-oracle'] && t.id !== 'floor' ? '–' : nOracle} of ${results.length}`);
  lines.push(`| ${t.id} | ${cells.join(' | ')} |`);
}
// Oracle failures and errors in full, so the table stays narrow.
const notes = [];
for (const e of results) {
  for (const t of tools) {
    const r = e.tools[t.id];
    if (r?.oracle && !['ok', 'same bytes'].includes(r.oracle))
      notes.push(`- ${e.model}, ${t.id}: oracle ${r.oracle}: ${esc(r.oracleMessage ?? '')}`);
    if (r?.nodesError) notes.push(`- ${e.model}, ${t.id}: nodes not counted: ${esc(r.nodesError)}`);
  }
}
if (notes.length) {
  lines.push('');
  lines.push('Oracle and counting notes:');
  lines.push('');
  lines.push(...notes);
}
const md = `${lines.join('\n')}\n`;
process.stdout.write(md);
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, 'results.md'), md);
writeFileSync(
  join(outDir, 'results.json'),
  `${JSON.stringify({ env, tools: tools.map((t) => ({ id: t.id, label: t.label })), results, summary }, null, 2)}\n`,
);
log(`\nwrote ${join(outDir, 'results.md')} and ${join(outDir, 'results.json')}`);

// The onnxfold web page: pick a model, choose passes and options, optimize it in a Web Worker
// (web/src/worker.js), show the report and offer the result for download. No framework: the
// page is a handful of elements updated by the functions below.
//
// body[data-state] says what the page is doing (loading, ready, running, done, error,
// cancelled); the browser test waits on it.

import { el, humanBytes } from './dom.js';
import { WorkerClient } from './worker-client.js';
import { setupUrlOptions } from './url-options.js';
import { readRenderedOptions, renderOptionFields, renderedUrlFields } from './option-fields.js';
import { setupVerify } from './verify.js';
import { worstOutput } from 'onnxfold/accuracy';
import { setupBudget } from './budget.js';
import { setupGraphView } from './graph-view.js';
import { openTab } from './result-store.js';

const $ = (sel) => document.querySelector(sel);
const SAMPLE = { url: 'conv1d_m5.onnx', name: 'conv1d_m5.onnx' };

const client = new WorkerClient('./worker.js', 'onnxfold', 'optimizer');
// This tab's results folder in the browser's storage (result-store.js); null until it is open
// or without one, and results are then held in memory. Never awaited by a run: a run (and a
// cancel right after it) must start at once.
let tab = null;
openTab().then(
  (id) => {
    tab = id;
  },
  () => {},
);
const verify = setupVerify();
let lastRunOptions = null; // what the shown result was optimized with
let renderedOptions = []; // the "All options" fields, from optionSchema() (option-fields.js)
const budget = setupBudget({
  client,
  getModel: () => current,
  readOptions: () => readOptions(),
  setBudget: (bytes) => {
    for (const sel of ['#size-budget', '#constructor-budget']) {
      $(sel).value = String(bytes);
      $(sel).dispatchEvent(new Event('change', { bubbles: true })); // the URL follows
    }
  },
  run: () => run(),
});

let lastReport = null; // the shown result's report, for the graph view's not_folded reasons
const graphView = setupGraphView({ client, getNotFolded: () => lastReport?.not_folded });

// ---------------------------------------------------------------------------------------------
// Small helpers

const fmtMs = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms < 10 ? 2 : 1)} ms`);
const pct = (a, b) => (a ? `${(((b - a) / a) * 100).toFixed(1)}%` : '');
const baseName = (name) => name.replace(/\.onnx$/i, '');
const fileNameOf = (location) => location.split(/[\\/]/).pop() || 'external.data';

function setState(state) {
  document.body.dataset.state = state;
}

function setStatus(text, fraction) {
  $('#status').textContent = text;
  const p = $('#progress');
  if (fraction === undefined)
    p.removeAttribute('value'); // indeterminate
  else p.value = Math.max(0, Math.min(1, fraction));
}

function showError(err) {
  const box = $('#error');
  box.replaceChildren(
    // The package's own errors (OnnxfoldError) already say what failed; other kinds are named.
    el('strong', { text: err.name && !/^(Onnxfold)?Error$/.test(err.name) ? `${err.name}: ` : 'Error: ' }),
    el('span', { class: 'error-message', text: err.message || String(err) }),
  );
  box.hidden = false;
}

function clearError() {
  $('#error').hidden = true;
  $('#error').replaceChildren();
}

// ---------------------------------------------------------------------------------------------
// Model selection: one .onnx plus any number of external-data files, keyed by file name (the
// model's data locations are usually bare file names next to it).

let current = null; // { name, bytes: Blob, externalData: { name: File }, summary }

function pickModel(files) {
  const list = [...files];
  if (!list.length) return null;
  const onnx = list.filter((f) => /\.onnx$/i.test(f.name));
  if (onnx.length > 1)
    throw new Error(`Pick one .onnx model at a time (got ${onnx.map((f) => f.name).join(', ')}).`);
  if (!onnx.length && current) {
    // Only data files: they are the current model's external data, added after the fact.
    const externalData = { ...current.externalData };
    for (const f of list) externalData[f.name] = f;
    return { name: current.name, bytes: current.bytes, externalData };
  }
  const model = onnx[0] ?? (list.length === 1 ? list[0] : null);
  if (!model) throw new Error('None of the chosen files is a .onnx model.');
  const externalData = {};
  for (const f of list) if (f !== model) externalData[f.name] = f;
  return { name: model.name, bytes: model, externalData };
}

async function loadModel(model) {
  clearError();
  const mine = { ...model, summary: null };
  current = mine;
  verify.setModel(null);
  $('#report').hidden = true;
  const info = $('#model-info');
  info.hidden = false;
  const extra = Object.keys(model.externalData);
  info.replaceChildren(
    el(
      'p',
      {},
      el('strong', { text: model.name }),
      ` ${humanBytes(model.bytes.size)}`,
      extra.length ? ` + external data: ${extra.join(', ')}` : '',
    ),
  );
  document.body.dataset.model = model.name;
  document.body.dataset.loads = String(Number(document.body.dataset.loads ?? 0) + 1);
  $('#run').disabled = false;
  $('#split').disabled = false;
  $('#split-result').hidden = true;
  $('#variants').disabled = false;
  $('#variants-result').hidden = true;
  setStatus('Reading the model…');
  setState('running');
  try {
    const summary = await client.call('inspect', { bytes: model.bytes, externalData: model.externalData });
    if (current !== mine) return; // another model was picked meanwhile
    current.summary = summary;
    verify.setModel(current);
    info.append(describeSummary(summary));
    setStatus('Ready.', 0);
    setState('ready');
  } catch (e) {
    if (current !== mine || e.name === 'AbortError') return;
    showError(e);
    setStatus('This model cannot be read.', 0);
    setState('error');
  }
}

function describeSummary(s) {
  const io = (vs) => vs.map((v) => `${v.name}: ${v.type}`).join(', ') || '–';
  const opsets = Object.entries(s.opsets ?? {})
    .map(([d, v]) => `${d || 'ai.onnx'} ${v}`)
    .join(', ');
  return el(
    'dl',
    { class: 'facts' },
    el('dt', { text: 'nodes' }),
    el('dd', { text: String(s.nodes) }),
    el('dt', { text: 'initializers' }),
    el('dd', { text: `${s.initializers} (${humanBytes(s.initializer_bytes)})` }),
    el('dt', { text: 'inputs' }),
    el('dd', { text: io(s.inputs ?? []) }),
    el('dt', { text: 'outputs' }),
    el('dd', { text: io(s.outputs ?? []) }),
    el('dt', { text: 'opsets' }),
    el('dd', { text: opsets || '–' }),
    s.producer ? [el('dt', { text: 'producer' }), el('dd', { text: s.producer })] : null,
  );
}

async function loadSample() {
  clearError();
  setStatus('Loading the sample model…');
  setState('running');
  try {
    const res = await fetch(SAMPLE.url);
    if (!res.ok) throw new Error(`Could not load the sample model ${SAMPLE.url}: HTTP ${res.status}`);
    const blob = await res.blob();
    await loadModel({ name: SAMPLE.name, bytes: new File([blob], SAMPLE.name), externalData: {} });
  } catch (e) {
    showError(e);
    setState('error');
  }
}

// ---------------------------------------------------------------------------------------------
// Options

function renderPasses({ available, default: defaults }) {
  const fs = $('#passes');
  $('#passes-loading')?.remove();
  // The default pipeline first, in its order; then the other passes, unchecked.
  const order = [...defaults, ...available.filter((p) => !defaults.includes(p))];
  for (const name of order) {
    const id = `pass-${name}`;
    fs.append(
      el(
        'div',
        { class: 'check' },
        el('input', { type: 'checkbox', id, name: 'pass', value: name, checked: defaults.includes(name) }),
        el('label', { for: id, text: name }),
      ),
    );
  }
  fs.append(
    el(
      'p',
      { class: 'actions small' },
      el('button', { type: 'button', id: 'passes-default', text: 'Default pipeline' }),
      el('button', { type: 'button', id: 'passes-none', text: 'None' }),
    ),
  );
  $('#passes-default').onclick = () => {
    for (const c of fs.querySelectorAll('input[name=pass]')) c.checked = defaults.includes(c.value);
  };
  $('#passes-none').onclick = () => {
    for (const c of fs.querySelectorAll('input[name=pass]')) c.checked = false;
  };
}

function readOptions() {
  const options = {};
  options.passes = [...document.querySelectorAll('#passes input[name=pass]:checked')].map((c) => c.value);
  // The package reads an empty list as "the default pipeline", which is not what "None" means here.
  if (!options.passes.length) throw new Error('Choose at least one pass.');
  // Whole non-negative numbers; an empty field leaves the package's default.
  const whole = (sel, key, what) => {
    const text = $(sel).value.trim();
    if (text === '') return;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 0) throw new Error(`${what} must be a whole number, got '${text}'.`);
    options[key] = n;
  };
  whole('#size-budget', 'sizeBudget', 'Size budget (bytes)');
  whole('#constructor-budget', 'constructorBudget', 'Constructor budget (bytes)');
  whole('#growth-budget', 'growthBudget', 'Growth budget (%)');
  const preserve = $('#preserve')
    .value.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (preserve.length) options.preserve = preserve;
  const quant = $('#quant').value;
  if (quant) options.quant = quant;
  if ($('#float16').checked) options.float16 = true;
  const quantize = $('#quantize').value;
  if (quantize) Object.assign(options, { quantize, quantFormat: $('#quant-format').value });
  whole('#target-opset', 'targetOpset', 'Target opset');
  whole('#external-threshold', 'externalDataThreshold', 'External data threshold (bytes)');
  readRenderedOptions(renderedOptions, options);
  // Where external weights go when the output has any (the input had some, or the threshold);
  // unused for an all-inline result.
  options.externalDataLocation = `${baseName(current.name)}.opt.onnx.data`;
  return options;
}

// ---------------------------------------------------------------------------------------------
// Run

let timer = null;

// Runs one worker operation with the progress bar, the elapsed time and the cancel button;
// `show` renders the result. Errors go to the error box, a cancel to the status line.
async function runJob(op, args, show) {
  const model = current;
  setState('running');
  for (const b of document.querySelectorAll('#run, #split, #variants')) b.disabled = true;
  $('#cancel').disabled = false;
  $('#report').setAttribute('aria-busy', 'true');
  const started = performance.now();
  let stage = 'Starting…';
  let fraction;
  const tick = () => setStatus(`${stage} (${((performance.now() - started) / 1000).toFixed(1)} s)`, fraction);
  tick();
  timer = setInterval(tick, 200);
  try {
    const result = await client.call(op, args, {
      onProgress: (p) => {
        stage = [p.stage, p.pass].filter(Boolean).join(': ') || 'Working';
        fraction = Number.isFinite(p.fraction) ? p.fraction : undefined;
        tick();
      },
    });
    if (current !== model) return;
    show(model, result, performance.now() - started);
    setStatus(`Done in ${fmtMs(performance.now() - started)}.`, 1);
    setState('done');
  } catch (e) {
    if (e.name === 'AbortError') {
      setStatus('Cancelled.', 0);
      setState('cancelled');
    } else {
      showError(e);
      setStatus('Failed.', 0);
      setState('error');
    }
  } finally {
    clearInterval(timer);
    for (const b of document.querySelectorAll('#run, #split, #variants')) b.disabled = !current;
    $('#cancel').disabled = true;
    $('#report').removeAttribute('aria-busy');
  }
}

const spillTo = (kind) => (tab ? { tab, kind } : undefined);

function run() {
  if (!current) return;
  clearError();
  let options;
  try {
    options = readOptions();
  } catch (e) {
    showError(e);
    return;
  }
  verify.setOptimized(null);
  budget.setResult(null);
  lastRunOptions = options;
  document.body.dataset.runOptions = JSON.stringify(options); // what optimize() got, for the tests
  // The job replaces the files the shown downloads read.
  $('#downloads').replaceChildren();
  const args = {
    bytes: current.bytes,
    options,
    externalData: current.externalData,
    tree: true,
    spill: spillTo('optimize'),
  };
  runJob('optimize', args, renderReport);
}

// splitConstants: the constant graph as its own model (prep) and the rest (main), for users who
// swap weights and re-run only prep.
function split() {
  if (!current) return;
  clearError();
  runJob('splitConstants', { bytes: current.bytes, options: {} }, (model, { prep, main, report }) => {
    const base = baseName(model.name);
    const box = $('#split-result');
    box.hidden = false;
    box.replaceChildren(
      el('p', {
        text: report.nothing_to_split
          ? `Nothing to split: ${report.nothing_to_split}. prep is empty; main is the model.`
          : `${report.original_nodes} nodes → prep ${report.prep_nodes} + main ${report.main_nodes}; ` +
            `${report.values?.length ?? 0} values passed from prep to main (${humanBytes(report.value_bytes)}).`,
      }),
      el(
        'p',
        { class: 'actions' },
        downloadLink('download-prep', `${base}.prep.onnx`, prep, false),
        downloadLink('download-main', `${base}.main.onnx`, main, false),
      ),
    );
  });
}

// The variants transformers.js loads, one optimize per checked dtype, with the form's options
// (the variant decides float16 and the external-data names).
function renderVariantChoices(variants) {
  const box = $('#variant-dtypes');
  box.replaceChildren(
    box.querySelector('legend'),
    ...variants.map((v) =>
      el(
        'div',
        { class: 'check' },
        el('input', {
          type: 'checkbox',
          id: `variant-${v.dtype}`,
          name: 'variant',
          value: v.dtype,
          checked: true,
        }),
        el('label', { for: `variant-${v.dtype}` }, el('code', { text: v.dtype }), ` ${v.file}: ${v.help}`),
      ),
    ),
  );
}

function makeVariants() {
  if (!current) return;
  clearError();
  let options;
  try {
    options = readOptions();
    const dtypes = [...document.querySelectorAll('#variant-dtypes input[name=variant]:checked')].map(
      (c) => c.value,
    );
    if (!dtypes.length) throw new Error('Choose at least one variant.');
    for (const key of ['float16', 'quantize', 'quantFormat', 'externalDataLocation']) delete options[key];
    Object.assign(options, { dtypes, name: $('#variant-name').value.trim() || 'model' });
  } catch (e) {
    showError(e);
    return;
  }
  // A check of the variants about to be replaced is stopped.
  if (document.body.dataset.variantsAccuracy === 'running') verify.cancel();
  $('#variants-result').replaceChildren();
  $('#variants-result').hidden = true;
  const args = {
    bytes: current.bytes,
    options,
    externalData: current.externalData,
    spill: spillTo('variants'),
  };
  runJob('variants', args, (model, { files, variants }) => {
    const box = $('#variants-result');
    box.hidden = false;
    // The largest heap any variant needed (each is one optimize of the same input).
    document.body.dataset.peakHeap = String(
      Math.max(...variants.map((v) => v.report.memory?.peak_heap_bytes ?? 0)),
    );
    document.body.dataset.spillBytes = String(
      variants.reduce((a, v) => a + (v.report.host?.spill_bytes ?? 0), 0),
    );
    const rows = variants.map((v) =>
      el(
        'tr',
        { 'data-dtype': v.dtype },
        el('td', {}, el('code', { text: v.dtype })),
        el('td', { text: v.file }),
        el('td', { class: 'num', text: humanBytes(v.bytes) }),
        el('td', { class: 'num', text: String(v.report.after.nodes) }),
        el('td', {
          class: 'num',
          text: fmtMs(v.report.timing_ms.read + v.report.timing_ms.optimize + v.report.timing_ms.write),
        }),
        ...ACCURACY_COLUMNS.map(() => el('td', { class: 'num', text: '–' })),
      ),
    );
    const list = Object.entries(files);
    const candidates = variants.map((v) => ({
      name: v.file,
      bytes: files[v.file],
      externalData: Object.fromEntries(list.filter(([name]) => name.startsWith(`${v.file}_data`))),
    }));
    const check = el('button', { id: 'variants-accuracy', type: 'button', text: 'Check accuracy' });
    const status = el('p', {
      id: 'variants-accuracy-status',
      role: 'status',
      class: 'help',
      text:
        'Check accuracy runs the loaded model once, then each variant, on the seeded inputs of Verify ' +
        "(its seed and dimension sizes) with ONNX Runtime Web, and compares each output with the original's.",
    });
    check.addEventListener('click', () => checkVariantAccuracy(candidates, rows, check, status));
    box.replaceChildren(
      el(
        'div',
        { class: 'table-wrap' },
        el(
          'table',
          { id: 'variants-table' },
          el('caption', {
            text: 'Variants; accuracy: the worst output against the loaded model (cosine, max |diff| / its range, top-1 agreement along the last axis)',
          }),
          el(
            'thead',
            {},
            el(
              'tr',
              {},
              ...['dtype', 'file', 'size', 'nodes', 'time', ...ACCURACY_COLUMNS].map((h) =>
                el('th', { scope: 'col', text: h }),
              ),
            ),
          ),
          el('tbody', {}, ...rows),
        ),
      ),
      el('p', { class: 'actions' }, check),
      status,
      el(
        'p',
        { class: 'actions' },
        ...list.map(([name, bytes], i) => downloadLink(`download-variant-${i}`, name, bytes, false)),
        ...[saveAllButton(list, 'save-variants')].filter(Boolean),
      ),
    );
  });
}

const ACCURACY_COLUMNS = ['cosine', 'max |diff| / range', 'argmax'];

// Fills the accuracy columns of the variants table, row by row: the worst output of each (lowest
// cosine and argmax agreement, largest |diff| / range), all of them in the row's data-accuracy.
async function checkVariantAccuracy(candidates, rows, button, status) {
  button.disabled = true;
  document.body.dataset.variantsAccuracy = 'running';
  const started = performance.now();
  const show = (text) => {
    status.textContent = text;
  };
  let errors = 0;
  try {
    const done = await verify.checkAccuracy(candidates, {
      onStage: show,
      onRow: (i, acc) => {
        const tr = rows[i];
        tr.dataset.accuracy = JSON.stringify(acc);
        const cells = [...tr.children].slice(-ACCURACY_COLUMNS.length);
        const { error: bad, cosine, relRange, argmax } = worstOutput(acc);
        if (bad) {
          errors++;
          tr.classList.add('fail');
          cells[0].textContent = 'error';
          cells[1].textContent = '';
          cells[2].textContent = '';
          cells[0].title = bad;
          tr.after(
            el(
              'tr',
              { class: 'fail accuracy-error' },
              el('td', {
                colspan: String(tr.children.length),
                role: 'alert',
                text: `${candidates[i].name}: ${bad}`,
              }),
            ),
          );
          return;
        }
        cells[0].textContent = cosine === undefined ? '–' : cosine.toFixed(6);
        cells[1].textContent = relRange === undefined ? '–' : relRange.toExponential(2);
        cells[2].textContent = argmax === undefined ? '–' : argmax.toFixed(3);
        Object.assign(tr.dataset, {
          cosine: String(cosine),
          relRange: String(relRange),
          argmax: String(argmax),
        });
      },
    });
    if (!done) {
      show('Accuracy check cancelled.');
      document.body.dataset.variantsAccuracy = 'cancelled';
      return;
    }
    show(
      `Accuracy checked in ${fmtMs(performance.now() - started)}` +
        (errors ? `; ${errors} of ${candidates.length} could not be run (below each).` : '.'),
    );
    document.body.dataset.variantsAccuracy = 'done';
  } catch (e) {
    show(`Accuracy check failed: ${e.message}`);
    document.body.dataset.variantsAccuracy = 'error';
  } finally {
    button.disabled = false;
  }
}

function cancel() {
  client.cancel();
}

// ---------------------------------------------------------------------------------------------
// Report

function renderReport(model, result, pageMillis) {
  const { report } = result;
  const before = report.before ?? {};
  const after = report.after ?? {};
  $('#report').hidden = false;

  const extBytes = Object.values(result.externalData).reduce((a, b) => a + sizeOf(b), 0);
  const inBytes = model.bytes.size + Object.values(model.externalData).reduce((a, f) => a + f.size, 0);
  const outBytes = sizeOf(result.model) + extBytes;
  const t = report.timing_ms ?? {};
  const fact = (label, value, detail) =>
    el(
      'div',
      { class: 'fact' },
      el('div', { class: 'label', text: label }),
      el('div', { class: 'value', text: value }),
      detail ? el('div', { class: 'detail', text: detail }) : null,
    );
  $('#summary').replaceChildren(
    fact('nodes', `${before.nodes} → ${after.nodes}`, pct(before.nodes, after.nodes)),
    fact(
      'size',
      `${humanBytes(inBytes)} → ${humanBytes(outBytes)}`,
      extBytes ? `${humanBytes(extBytes)} in external data` : pct(inBytes, outBytes),
    ),
    fact(
      'initializers',
      `${before.initializers} → ${after.initializers}`,
      `${humanBytes(before.initializer_bytes)} → ${humanBytes(after.initializer_bytes)}`,
    ),
    fact(
      'time',
      fmtMs(pageMillis),
      `read ${fmtMs(t.read ?? 0)}, optimize ${fmtMs(t.optimize ?? 0)}, write ${fmtMs(t.write ?? 0)}`,
    ),
    fact('rounds', String(report.iterations ?? '–'), report.converged ? 'converged' : 'stopped at the limit'),
    memoryFact(fact, report.memory, inBytes, report.host),
  );
  // Where the time went, for the page benchmark (bench/large/page.mjs).
  document.body.dataset.profile = JSON.stringify({
    timing_ms: report.timing_ms,
    io: report.io,
    host: report.host,
  });

  renderDownloads(model, result);
  verify.setOptimized({
    name: `${baseName(model.name)}.opt.onnx`,
    bytes: result.model,
    externalData: result.externalData,
  });
  renderOps(before.op_histogram ?? {}, after.op_histogram ?? {});
  renderPassRuns(report.passes ?? []);
  renderWarnings(report.warnings ?? []);
  renderNotFolded(report.not_folded ?? []);
  renderTree(result.tree);
  budget.setResult(model, lastRunOptions ?? {}, result);
  lastReport = report;
  graphView.setResult(model, result);
}

// The WebAssembly heap's peak against the model's size: weights in external data stay in the
// user's files (read range by range), so it holds the graph and what passes computed.
// What the result computed went to the browser's storage (host.spill_bytes), not the tab's memory.
function memoryFact(fact, memory, inBytes, host) {
  if (!memory) return null;
  document.body.dataset.peakHeap = String(memory.peak_heap_bytes);
  document.body.dataset.spillBytes = String(host?.spill_bytes ?? 0);
  const stored = host?.spill_bytes
    ? `; ${humanBytes(host.spill_bytes)} of result in the browser's storage`
    : '';
  return fact(
    'memory',
    `${humanBytes(memory.peak_heap_bytes)} heap`,
    `for ${humanBytes(inBytes)} of model; ${humanBytes(memory.source_bytes_read)} of weights read${stored}`,
  );
}

// Object URLs live until the next result of the same kind replaces them.
const objectUrls = new Map();

// Results are Blobs when the inputs were Files (their unchanged weights are slices of the
// input files: nothing is copied until the browser saves them) and Uint8Arrays otherwise.
const sizeOf = (b) => (b instanceof Blob ? b.size : b.byteLength);
const asBlob = (b) => (b instanceof Blob ? b : new Blob([b], { type: 'application/octet-stream' }));

function downloadLink(id, name, bytes, primary) {
  if (objectUrls.has(id)) URL.revokeObjectURL(objectUrls.get(id));
  const url = URL.createObjectURL(asBlob(bytes));
  objectUrls.set(id, url);
  return el(
    'a',
    {
      id,
      class: primary ? 'button primary' : 'button',
      href: url,
      download: name,
      'data-bytes': sizeOf(bytes),
    },
    `Download ${name} `,
    el('span', { class: 'muted', text: `(${humanBytes(sizeOf(bytes))})` }),
  );
}

// All files into one folder the user picks (File System Access API, where the browser has it):
// each is streamed from its Blob to disk, the model last.
function saveAllButton(files, id = 'save-folder') {
  if (typeof window.showDirectoryPicker !== 'function' || files.length < 2) return null;
  const button = el('button', { id, class: 'button', type: 'button' }, 'Save all to a folder…');
  button.addEventListener('click', async () => {
    try {
      const dir = await window.showDirectoryPicker({ mode: 'readwrite' });
      for (const [name, bytes] of [...files].reverse()) {
        const handle = await dir.getFileHandle(name, { create: true });
        const writable = await handle.createWritable();
        await asBlob(bytes).stream().pipeTo(writable);
      }
      button.textContent = `Saved ${files.length} files`;
    } catch (e) {
      if (e.name !== 'AbortError') showError(e);
    }
  });
  return button;
}

function renderDownloads(model, result) {
  for (const [id, url] of objectUrls) {
    if (id.startsWith('download-ext-')) {
      URL.revokeObjectURL(url);
      objectUrls.delete(id);
    }
  }
  const name = `${baseName(model.name)}.opt.onnx`;
  const links = [downloadLink('download', name, result.model, true)];
  const files = [[name, result.model]];
  Object.entries(result.externalData).forEach(([loc, bytes], i) => {
    links.push(downloadLink(`download-ext-${i}`, fileNameOf(loc), bytes, false));
    files.push([fileNameOf(loc), bytes]);
  });
  const all = saveAllButton(files);
  if (all) links.push(all);
  $('#downloads').replaceChildren(...links);
}

function renderOps(before, after) {
  const ops = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  ops.sort(
    (a, b) => (before[b] ?? 0) - (before[a] ?? 0) || (after[b] ?? 0) - (after[a] ?? 0) || a.localeCompare(b),
  );
  const tbody = $('#ops-table tbody');
  let tb = 0;
  let ta = 0;
  tbody.replaceChildren(
    ...ops.map((op) => {
      const b = before[op] ?? 0;
      const a = after[op] ?? 0;
      tb += b;
      ta += a;
      return el(
        'tr',
        { class: a < b ? 'fewer' : a > b ? 'more' : null },
        el('th', { scope: 'row', text: op }),
        el('td', { class: 'num', text: String(b) }),
        el('td', { class: 'num', text: String(a) }),
        el('td', { class: 'num', text: a === b ? '' : a > b ? `+${a - b}` : String(a - b) }),
      );
    }),
  );
  $('#ops-table tfoot').replaceChildren(
    el(
      'tr',
      {},
      el('th', { scope: 'row', text: 'total' }),
      el('td', { class: 'num', text: String(tb) }),
      el('td', { class: 'num', text: String(ta) }),
      el('td', { class: 'num', text: ta === tb ? '' : String(ta - tb) }),
    ),
  );
  $('#ops-chart').replaceChildren(
    barChart(ops, before, after),
    el(
      'figcaption',
      {},
      el('span', { class: 'swatch before' }),
      'before ',
      el('span', { class: 'swatch after' }),
      'after',
    ),
  );
}

// Grouped horizontal bars (inline SVG): one row per op type, before above after.
function barChart(ops, before, after) {
  const NS = 'http://www.w3.org/2000/svg';
  const svgEl = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const labelW = 150;
  const barMax = 300;
  const bar = 9;
  const rowH = 2 * bar + 8;
  const width = labelW + barMax + 50;
  const height = Math.max(rowH, ops.length * rowH) + 4;
  const max = Math.max(1, ...ops.map((o) => Math.max(before[o] ?? 0, after[o] ?? 0)));
  const svg = svgEl('svg', {
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    role: 'img',
    class: 'bars',
    'aria-label': `Nodes per op type before and after: ${ops.map((o) => `${o} ${before[o] ?? 0} to ${after[o] ?? 0}`).join('; ')}`,
  });
  ops.forEach((op, i) => {
    const y = 2 + i * rowH;
    const b = before[op] ?? 0;
    const a = after[op] ?? 0;
    const g = svgEl('g', {});
    g.append(svgEl('title', {}, `${op}: ${b} before, ${a} after`));
    g.append(
      svgEl(
        'text',
        { x: labelW - 6, y: y + bar + 3, 'text-anchor': 'end', class: 'label' },
        op.length > 22 ? `${op.slice(0, 21)}…` : op,
      ),
    );
    const wb = (b / max) * barMax;
    const wa = (a / max) * barMax;
    g.append(svgEl('rect', { x: labelW, y, width: Math.max(wb, b ? 1 : 0), height: bar, class: 'before' }));
    g.append(
      svgEl('rect', { x: labelW, y: y + bar, width: Math.max(wa, a ? 1 : 0), height: bar, class: 'after' }),
    );
    g.append(svgEl('text', { x: labelW + wb + 4, y: y + bar - 1, class: 'value' }, String(b)));
    g.append(svgEl('text', { x: labelW + wa + 4, y: y + 2 * bar - 1, class: 'value' }, String(a)));
    svg.append(g);
  });
  return svg;
}

function renderPassRuns(passes) {
  const arrow = (pair) =>
    Array.isArray(pair) ? (pair[0] === pair[1] ? String(pair[0]) : `${pair[0]} → ${pair[1]}`) : '';
  const total = passes.reduce((a, p) => a + (p.ms ?? 0), 0);
  const rows = passes.map((p) => {
    const notes = [];
    if (p.error) notes.push(el('span', { class: 'bad', text: `failed, undone: ${p.error}` }));
    if (p.counters)
      notes.push(
        Object.entries(p.counters)
          .map(([k, v]) => `${k} ${v}`)
          .join(', '),
      );
    if (p.notes?.length) notes.push(` ${p.notes.join('; ')}`);
    return el(
      'tr',
      { class: p.changed ? 'changed' : null },
      el('td', { class: 'num', text: String(p.iteration ?? '') }),
      el('th', { scope: 'row', text: p.pass }),
      el('td', { class: 'num', text: (p.ms ?? 0).toFixed(2) }),
      el('td', { class: 'num', text: arrow(p.nodes) }),
      el('td', { class: 'num', text: arrow(p.initializers) }),
      el('td', { class: 'notes' }, ...notes),
    );
  });
  rows.push(
    el(
      'tr',
      { class: 'total' },
      el('td'),
      el('th', { scope: 'row', text: 'all passes' }),
      el('td', { class: 'num', text: total.toFixed(2) }),
      el('td'),
      el('td'),
      el('td'),
    ),
  );
  $('#passes-table tbody').replaceChildren(...rows);
}

function renderWarnings(warnings) {
  const d = $('#warnings');
  d.hidden = !warnings.length;
  d.querySelector('summary').textContent = `Warnings (${warnings.length})`;
  d.querySelector('ul').replaceChildren(...warnings.map((w) => el('li', { text: w })));
}

const NOT_FOLDED_LIMIT = 2000;

function renderNotFolded(list) {
  const d = $('#not-folded');
  d.querySelector('summary').textContent =
    `Why not folded (${list.length} node${list.length === 1 ? '' : 's'})`;
  const rows = list
    .slice(0, NOT_FOLDED_LIMIT)
    .map((n) =>
      el(
        'tr',
        {},
        el('td', { class: 'mono', text: n.node || '(unnamed)' }),
        el('td', { text: n.op }),
        el('td', { text: n.reason }),
      ),
    );
  if (list.length > NOT_FOLDED_LIMIT) {
    rows.push(
      el(
        'tr',
        {},
        el('td', {
          colspan: 3,
          class: 'muted',
          text: `… and ${list.length - NOT_FOLDED_LIMIT} more (see the report JSON)`,
        }),
      ),
    );
  }
  d.querySelector('tbody').replaceChildren(...rows);
}

function renderTree(tree) {
  const d = $('#module-tree');
  const box = d.querySelector('.tree');
  if (!tree) {
    d.hidden = true;
    return;
  }
  d.hidden = false;
  if (tree.error) {
    box.replaceChildren(el('p', { class: 'muted', text: `No module tree: ${tree.error}` }));
    return;
  }
  const topOps = (ops) =>
    Object.entries(ops ?? {})
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
  const node = (m, depth) => {
    const title = [el('span', { class: 'mono', text: m.name || '(model)' })];
    if (m.class) title.push(' ', el('span', { class: 'cls', text: m.class }));
    title.push(
      el('span', {
        class: 'muted',
        text:
          ` ${m.nodes} node${m.nodes === 1 ? '' : 's'}${m.param_bytes ? `, ${humanBytes(m.param_bytes)}` : ''}` +
          `${m.calls > 1 ? `, called ${m.calls}×` : ''}`,
      }),
    );
    const kids = m.children ?? [];
    if (!kids.length)
      return el('li', { class: 'leaf' }, ...title, el('div', { class: 'ops', text: topOps(m.ops) }));
    const det = el(
      'details',
      { open: depth < 2 },
      el('summary', {}, ...title),
      el('div', { class: 'ops', text: topOps(m.ops) }),
      el('ul', {}, ...kids.map((k) => node(k, depth + 1))),
    );
    return el('li', {}, det);
  };
  box.replaceChildren(el('ul', { class: 'root' }, node(tree, 0)));
}

// ---------------------------------------------------------------------------------------------
// Wiring

async function onFiles(files) {
  let model;
  try {
    model = pickModel(files);
  } catch (e) {
    showError(e);
    return;
  }
  if (model) await loadModel(model);
}

function setupDrop() {
  const drop = $('#drop');
  const over = (on) => (ev) => {
    ev.preventDefault();
    drop.classList.toggle('over', on);
  };
  drop.addEventListener('dragenter', over(true));
  drop.addEventListener('dragover', over(true));
  drop.addEventListener('dragleave', over(false));
  drop.addEventListener('drop', (ev) => {
    over(false)(ev);
    if (ev.dataTransfer?.files?.length) onFiles(ev.dataTransfer.files);
  });
  // A file dropped anywhere else must not navigate away from the page.
  window.addEventListener('dragover', (ev) => ev.preventDefault());
  window.addEventListener('drop', (ev) => ev.preventDefault());
}

// The form's options in the query string (url-options.js): the hand-tuned ones keyed by short
// names, the "All options" ones by their option names.
function urlFields() {
  const f = (key, sel, kind, label) => ({ key, el: $(sel), kind, label });
  return [
    f('passes', '#passes', 'passes', 'passes'),
    f('budget', '#size-budget', 'uint', 'size budget'),
    f('cbudget', '#constructor-budget', 'uint', 'constructor budget'),
    f('growth', '#growth-budget', 'uint', 'growth budget'),
    f('preserve', '#preserve', 'text', 'preserve'),
    f('quant', '#quant', 'select', 'quantization'),
    f('float16', '#float16', 'bool', 'float16'),
    f('quantize', '#quantize', 'select', 'quantize weights'),
    f('qformat', '#quant-format', 'select', 'quantized weight format'),
    f('opset', '#target-opset', 'uint', 'target opset'),
    f('external', '#external-threshold', 'uint', 'external data threshold'),
    ...renderedUrlFields(renderedOptions),
    ...verify.fields,
  ];
}

async function init() {
  setupDrop();
  $('#file').addEventListener('change', (ev) => {
    onFiles(ev.target.files);
    ev.target.value = ''; // choosing the same file again still fires 'change'
  });
  $('#sample').addEventListener('click', loadSample);
  $('#run').addEventListener('click', run);
  $('#split').addEventListener('click', split);
  $('#variants').addEventListener('click', makeVariants);
  $('#cancel').addEventListener('click', cancel);
  setStatus('Loading the optimizer…');
  try {
    const info = await client.call('info');
    $('#version').textContent = `version ${info.version}`;
    renderPasses(info);
    renderVariantChoices(info.variants);
    renderedOptions = renderOptionFields(info.options, $('#all-options-fields'));
    setupUrlOptions({ fields: urlFields(), notice: $('#url-notice') });
    setStatus(current ? 'Ready.' : 'Choose a model.', 0);
    if (!current) setState('ready');
  } catch (e) {
    showError(e);
    setStatus('The optimizer could not be loaded.', 0);
    setState('error');
  }
}

init();

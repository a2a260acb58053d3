// Verify section of the page: runs the loaded model and the optimized one (or another file the
// user picks, "Compare with…") on the same seeded inputs in the verify worker (onnxruntime-web),
// and shows per output the largest absolute and relative difference and pass/fail against the
// tolerance. The worker, and with it the runtime, is fetched on the first press.
//
//   const verify = setupVerify();          // wires the controls in #verify-section
//   verify.setModel(model | null)          // { name, bytes, externalData, summary } once read
//   verify.setOptimized(result | null)     // { name, bytes, externalData } after a run
//   verify.fields                          // seed/rtol/atol, for the URL options
//   verify.checkAccuracy(candidates, { onStage, onRow })  // the Variants panel's accuracy check
//   verify.cancel()                        // stops what the worker is doing

import { AbortError, WorkerClient } from './worker-client.js';
import { DEFAULTS, defaultDim } from 'onnxfold/accuracy';
import { describeTimings } from './verify-timing.js';
import { el } from './dom.js';

// Both models, their external data and the runtime's copies must fit in the tab: past this the
// page does not try (wasm32 heaps stop at 4 GiB, and tabs usually get less).
export const VERIFY_LIMIT = 1.5 * 2 ** 30;

const $ = (sel) => document.querySelector(sel);
const sizeOf = (b) => (b instanceof Blob ? b.size : b.byteLength);
const modelBytes = (m) =>
  sizeOf(m.bytes) + Object.values(m.externalData ?? {}).reduce((a, b) => a + sizeOf(b), 0);
const gib = (n) => `${(n / 2 ** 30).toFixed(2)} GiB`;
const strip = (m) => ({ name: m.name, bytes: m.bytes, externalData: m.externalData ?? {} });

// The model summary's value types (onnxfold's inspect), for the dims form.
/** 'float32[batch,3,224,224]' -> { type: 'float32', dims: ['batch', 3, 224, 224] }. */
export function parseValueType(text) {
  const m = /^([^[\]]+)(?:\[(.*)\])?$/.exec(text ?? '');
  if (!m) return { type: text, dims: [] };
  const dims = m[2]
    ? m[2]
        .split(',')
        .map((d) => d.trim())
        .map((d) => (/^\d+$/.test(d) ? Number(d) : d))
    : [];
  return { type: m[1], dims };
}

/** The symbolic dim names of a model's inputs, in order of first use. */
export function symbolicDims(inputs) {
  const names = [];
  for (const v of inputs) {
    for (const d of parseValueType(v.type).dims)
      if (typeof d === 'string' && d && !names.includes(d)) names.push(d);
  }
  return names;
}

function fmtDiff(x) {
  if (x === Infinity) return '∞';
  if (x === 0) return '0';
  return x < 1e-3 || x >= 1e4 ? x.toExponential(2) : x.toPrecision(3);
}

function cell(tag, text, attrs = {}) {
  const e = document.createElement(tag);
  e.textContent = text;
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

export function setupVerify() {
  const client = new WorkerClient('./verify-worker.js', 'verify', 'verifier (ONNX Runtime Web)');
  const ui = {
    section: $('#verify-section'),
    button: $('#verify'),
    other: $('#verify-other'),
    cancel: $('#verify-cancel'),
    why: $('#verify-why'),
    status: $('#verify-status'),
    error: $('#verify-error'),
    result: $('#verify-result'),
    dims: $('#verify-dims'),
    seed: $('#verify-seed'),
    rtol: $('#verify-rtol'),
    atol: $('#verify-atol'),
  };
  let model = null;
  let optimized = null;
  let running = false;
  let token = 0; // a result for a model that is no longer loaded is dropped

  const setState = (s) => {
    document.body.dataset.verify = s;
  };

  function explain() {
    const ready = model?.summary;
    let why = '';
    if (!ready) why = 'Load a model first; after optimizing it, Verify compares the two.';
    else if (!optimized) why = 'Optimize the model first, or compare it with another file.';
    else if (modelBytes(model) + modelBytes(optimized) > VERIFY_LIMIT) {
      why =
        `Too large to verify here: the original and the optimized model take ` +
        `${gib(modelBytes(model) + modelBytes(optimized))}, over the ${gib(VERIFY_LIMIT)} ` +
        'this page allows for holding both in the browser. Use the oracle in node (tests/node/oracle.mjs).';
    }
    ui.button.disabled = running || !!why;
    ui.other.disabled = running || !ready;
    ui.cancel.disabled = !running;
    ui.why.textContent = running ? '' : why;
    ui.why.hidden = running || !why;
  }

  function renderDims(summary) {
    const names = summary ? symbolicDims(summary.inputs ?? []) : [];
    ui.dims.replaceChildren();
    if (!names.length) {
      const text = summary
        ? 'The inputs have no symbolic dimensions.'
        : 'Symbolic input dimensions (batch, sequence…) appear here, with small sizes you can change.';
      ui.dims.append(cell('p', text, { class: 'help' }));
      return;
    }
    names.forEach((name, i) => {
      const id = `verify-dim-${i}`;
      const field = cell('div', '', { class: 'field' });
      field.append(cell('label', `Size of dimension “${name}”`, { for: id }));
      const input = cell('input', '', { id, type: 'number', min: '1', step: '1', 'data-dim': name });
      input.value = String(defaultDim(name));
      field.append(input);
      ui.dims.append(field);
    });
  }

  function readSettings() {
    const num = (el, label, { int } = {}) => {
      const v = Number(el.value.trim());
      if (el.value.trim() === '' || !Number.isFinite(v) || v < 0 || (int && !Number.isInteger(v))) {
        throw new Error(`${label} must be ${int ? 'a whole number' : 'a number'} ≥ 0, got '${el.value}'.`);
      }
      return v;
    };
    const dims = {};
    for (const input of ui.dims.querySelectorAll('input[data-dim]')) {
      const v = num(input, `The size of “${input.dataset.dim}”`, { int: true });
      if (v < 1) throw new Error(`The size of “${input.dataset.dim}” must be at least 1.`);
      dims[input.dataset.dim] = v;
    }
    const seed = num(ui.seed, 'The seed', { int: true });
    return { seed, rtol: num(ui.rtol, 'rtol'), atol: num(ui.atol, 'atol'), dims };
  }

  function showError(message) {
    ui.error.textContent = message;
    ui.error.hidden = false;
  }

  function renderResult(original, candidate, settings, r) {
    const verdict = r.ok ? 'PASS' : 'FAIL';
    ui.result.hidden = false;
    const v = $('#verify-verdict');
    v.className = `verdict ${r.ok ? 'pass' : 'fail'}`;
    v.textContent = `${verdict}: ${original.name} vs ${candidate.name}, ${r.message}.`;
    const inputs = (r.inputs ?? []).map((i) => `${i.name} ${i.type}[${i.dims}]`).join(', ');
    $('#verify-table caption').textContent =
      `${verdict}: ${original.name} (original) vs ${candidate.name}; ` +
      `seed ${settings.seed}, rtol ${settings.rtol}, atol ${settings.atol}; inputs ${inputs || 'none'}`;
    $('#verify-table tbody').replaceChildren(
      ...r.outputs.map((o) => {
        const bad = o.error || o.mismatches;
        const verdict = o.error
          ? `FAIL: ${o.error}`
          : bad
            ? 'FAIL'
            : o.nondeterministic
              ? 'pass (random: type and shape only)'
              : 'pass';
        const tr = cell('tr', '', { class: bad ? 'fail' : 'pass' });
        tr.append(
          cell('th', o.name, { scope: 'row', class: 'mono' }),
          cell('td', o.type),
          cell('td', `[${o.dims}]`),
          cell('td', fmtDiff(o.maxAbsDiff), { class: 'num' }),
          cell('td', fmtDiff(o.maxRelDiff), { class: 'num' }),
          cell('td', `${o.mismatches} of ${o.size}`, { class: 'num' }),
          cell('td', verdict),
        );
        return tr;
      }),
    );
  }

  // Load and run times under the verdict: a line each, the comparison in words, and the numbers in
  // data attributes (medians in ms, counts, ratio original / optimized, verdict) plus the whole
  // timings object as JSON in #verify-timings' data-timings.
  function renderTimings(t) {
    const box = $('#verify-timings');
    box.replaceChildren();
    box.removeAttribute('data-timings');
    box.hidden = !t;
    if (!t) return;
    box.dataset.timings = JSON.stringify(t);
    if (t.error) {
      box.append(el('p', { class: 'muted', text: `Timing failed: ${t.error}` }));
      return;
    }
    const { lines, note } = describeTimings(t);
    for (const l of lines) {
      const { original: o, optimized: c } = t[l.key];
      box.append(
        el(
          'p',
          {
            id: `verify-${l.key}`,
            'data-original-ms': o.median,
            'data-optimized-ms': c.median,
            'data-original-n': o.n,
            'data-optimized-n': c.n,
            'data-ratio': l.comparison.ratio,
            'data-verdict': l.comparison.verdict,
            'data-within-noise': String(l.comparison.withinNoise),
          },
          el('strong', { text: `${l.label}:` }),
          ` ${l.times} (`,
          el('span', { class: `speed ${l.comparison.verdict}`, text: l.words }),
          `; ${l.details}).`,
        ),
      );
    }
    box.append(
      el('p', {
        class: 'help',
        text:
          "Timed in this browser with ONNX Runtime Web's default session " +
          'options (graph optimizations on, one thread), on the same inputs. Load is session creation, each followed by a ' +
          'first run, the two models alternating which goes first; then, after warm-up runs, runs alternate original ' +
          'and optimized. ' +
          'Same speed “within noise” when the spreads shown overlap: the middle halves of the times (interquartile ' +
          `ranges) from 5 times each on, the whole ranges below.${note ? ` ${note}` : ''}`,
      }),
    );
  }

  async function run(candidate) {
    if (!model?.summary || running) return;
    const original = model;
    ui.error.hidden = true;
    let settings;
    try {
      settings = readSettings();
    } catch (e) {
      showError(e.message);
      return;
    }
    if (modelBytes(original) + modelBytes(candidate) > VERIFY_LIMIT) {
      showError(
        `Too large to verify here: ${gib(modelBytes(original) + modelBytes(candidate))} in all, ` +
          `over ${gib(VERIFY_LIMIT)}.`,
      );
      return;
    }
    const mine = ++token;
    running = true;
    explain();
    setState('running');
    ui.section.setAttribute('aria-busy', 'true');
    const started = performance.now();
    ui.status.textContent = 'Loading ONNX Runtime…';
    try {
      const r = await client.call(
        'verify',
        { original: strip(original), candidate: strip(candidate), ...settings },
        {
          onProgress: (p) => {
            if (mine === token) ui.status.textContent = `${p.stage}…`;
          },
        },
      );
      if (mine !== token) return;
      renderResult(original, candidate, settings, r);
      renderTimings(r.timings);
      ui.status.textContent = `${r.ok ? 'PASS' : 'FAIL'} in ${((performance.now() - started) / 1000).toFixed(2)} s.`;
      setState(r.ok ? 'pass' : 'fail');
    } catch (e) {
      if (mine !== token) return;
      if (e instanceof AbortError || e.name === 'AbortError') {
        ui.status.textContent = 'Verify cancelled.';
        setState('cancelled');
      } else {
        showError(`Verify failed: ${e.message}`);
        ui.status.textContent = 'Verify failed.';
        setState('error');
      }
    } finally {
      if (mine === token) {
        running = false;
        ui.section.removeAttribute('aria-busy');
        explain();
      }
    }
  }

  // "Compare with…": one .onnx plus its external-data files, keyed by file name.
  function pickOther(files) {
    const list = [...files];
    const onnx = list.filter((f) => /\.onnx$/i.test(f.name));
    if (onnx.length !== 1) {
      showError(
        `Pick one .onnx model to compare with (got ${list.map((f) => f.name).join(', ') || 'none'}).`,
      );
      return;
    }
    const externalData = Object.fromEntries(list.filter((f) => f !== onnx[0]).map((f) => [f.name, f]));
    run({ name: onnx[0].name, bytes: onnx[0], externalData });
  }

  // The Variants panel's accuracy check: the loaded model runs once on Verify's seeded inputs
  // (its seed and dims), then each candidate ({ name, bytes, externalData }) on the same inputs;
  // one model at a time in the worker. onRow(i, accuracy) gets onnxfold/accuracy's accuracyOf
  // result, or { error } naming the model that could not be loaded or run. Resolves false when
  // cancelled or the model changed.
  async function checkAccuracy(candidates, { onStage, onRow }) {
    if (!model?.summary) throw new Error('Load a model first.');
    if (running) throw new Error('Verify is busy: wait for it, or cancel it.');
    const { seed, dims } = readSettings();
    const original = model;
    const mine = ++token;
    // Past this the page does not try: one model, its weights and the runtime's copy of them.
    const tooLarge = (m) =>
      modelBytes(m) > VERIFY_LIMIT
        ? `${m.name} is too large to run here: ${gib(modelBytes(m))} ` +
          `with its weights, over the ${gib(VERIFY_LIMIT)} one model may take in this page (onnxruntime-web runs in ` +
          '32-bit WebAssembly, whose heap holds at most 4 GiB); use npx onnxfold variants --accuracy in node'
        : null;
    running = true;
    explain();
    try {
      let failed = tooLarge(original);
      if (!failed) {
        try {
          await client.call(
            'reference',
            { original: strip(original), seed, dims },
            { onProgress: (p) => onStage(`${p.stage}…`) },
          );
        } catch (e) {
          if (e.name === 'AbortError') return false;
          failed = e.message;
        }
      }
      for (const [i, c] of candidates.entries()) {
        if (mine !== token) return false;
        let acc = failed ? { error: failed } : null;
        const large = tooLarge(c);
        if (!acc && large) acc = { error: large };
        if (!acc) {
          try {
            acc = await client.call(
              'accuracy',
              { candidate: strip(c) },
              { onProgress: (p) => onStage(`${i + 1} of ${candidates.length}: ${p.stage}…`) },
            );
          } catch (e) {
            if (e.name === 'AbortError') return false;
            acc = { error: `${c.name}: ${e.message}` };
          }
        }
        if (mine !== token) return false;
        onRow(i, acc);
      }
      return true;
    } finally {
      if (mine === token) {
        running = false;
        explain();
      }
    }
  }

  ui.button.addEventListener('click', () => optimized && run(optimized));
  ui.other.addEventListener('change', (ev) => {
    if (ev.target.files.length) pickOther(ev.target.files);
    ev.target.value = '';
  });
  ui.cancel.addEventListener('click', () => {
    client.cancel();
  });
  ui.seed.value = String(DEFAULTS.seed);
  ui.rtol.value = String(DEFAULTS.rtol);
  ui.atol.value = String(DEFAULTS.atol);
  renderDims(null);
  explain();

  return {
    fields: [
      { key: 'seed', el: ui.seed, kind: 'uint', label: 'verify seed' },
      { key: 'rtol', el: ui.rtol, kind: 'number', label: 'verify rtol' },
      { key: 'atol', el: ui.atol, kind: 'number', label: 'verify atol' },
    ],
    setModel(m) {
      token++;
      if (running) {
        client.cancel(); // its result would be for the previous model
        running = false;
        ui.section.removeAttribute('aria-busy');
        ui.status.textContent = '';
        setState('cancelled');
      }
      model = m;
      optimized = null;
      ui.result.hidden = true;
      ui.error.hidden = true;
      renderDims(m?.summary ?? null);
      explain();
    },
    checkAccuracy,
    cancel() {
      if (running) client.cancel();
    },
    setOptimized(result) {
      optimized = result;
      ui.result.hidden = true;
      explain();
    },
  };
}

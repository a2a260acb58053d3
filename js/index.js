// onnxfold: the npm package's JS API, a thin typed layer over the Embind module in
// dist/onnxfold.{mjs,wasm} (wasm-bindings/bindings.cpp). It accepts Uint8Array / ArrayBuffer /
// Blob, turns options into JSON, parses the report and wraps errors; all the work is in wasm.
//
// Bytes go straight into the wasm heap (alloc + HEAPU8.set, or a Blob streamed chunk by chunk,
// or fs.readSync in optimizeFile), and each result is copied out once, so a model is never held
// twice on the JS side. Types: js/index.d.ts.
const isNode = typeof process === 'object' && !!process.versions && !!process.versions.node;

/**
 * Where the .wasm comes from; set before the first call. `wasmUrl` (string or URL) overrides the
 * default location beside this package (for bundlers that do not follow
 * `new URL(..., import.meta.url)`, e.g. esbuild with `--loader:.wasm=file`); `wasmBinary`
 * (ArrayBuffer/Uint8Array) or `wasmModule` (a compiled WebAssembly.Module) skip fetching.
 */
export const env = { wasmUrl: undefined, wasmBinary: undefined, wasmModule: undefined };

/** Errors from onnxfold itself (bad model, bad option, out of memory...). */
export class OnnxfoldError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = 'OnnxfoldError';
  }
}

// --- module instance -----------------------------------------------------------------------------

let modulePromise = null;

// A node built-in without a static import, so browser bundles never see `fs` or `path`.
function nodeModule(name) {
  if (typeof process.getBuiltinModule !== 'function') {
    throw new OnnxfoldError(`onnxfold needs Node >= 20.16 (process.getBuiltinModule) to use '${name}'`);
  }
  return process.getBuiltinModule(name);
}

function defaultWasmUrl() {
  // Bundlers (webpack 5, Vite, Rollup with import-meta-assets, Parcel) see this pattern and emit
  // the asset; unbundled ESM in browsers, workers and node resolves it next to the package.
  return new URL('../dist/onnxfold.wasm', import.meta.url);
}

async function compileWasm() {
  if (env.wasmModule) return env.wasmModule;
  if (env.wasmBinary) return WebAssembly.compile(env.wasmBinary);
  const url = env.wasmUrl ? new URL(String(env.wasmUrl), isNode ? undefined : globalThis.location?.href) : defaultWasmUrl();
  if (isNode && url.protocol === 'file:') {
    const fs = nodeModule('fs');
    return WebAssembly.compile(fs.readFileSync(url));
  }
  const response = await fetch(url);
  if (!response.ok) throw new OnnxfoldError(`cannot load ${url.href}: HTTP ${response.status}`);
  if (WebAssembly.compileStreaming &&
      (response.headers.get('content-type') || '').startsWith('application/wasm')) {
    return WebAssembly.compileStreaming(response);
  }
  return WebAssembly.compile(await response.arrayBuffer());
}

function getModule() {
  if (!modulePromise) {
    modulePromise = (async () => {
      // Loaded on first use (not a static import), so importing the package is cheap and a
      // missing build surfaces as a rejected call with a clear message.
      let createOnnxfold;
      try {
        ({ default: createOnnxfold } = await import('../dist/onnxfold.mjs'));
      } catch (e) {
        throw new OnnxfoldError(`cannot load the wasm glue dist/onnxfold.mjs (is the wasm build done? ` +
          `cmake --preset wasm && cmake --build --preset wasm --target onnxfold_wasm): ${e.message}`, { cause: e });
      }
      let wasm;
      try {
        wasm = await compileWasm();
      } catch (e) {
        throw e instanceof OnnxfoldError ? e : new OnnxfoldError(`cannot load onnxfold.wasm: ${e.message}`, { cause: e });
      }
      let failed;
      const failure = new Promise((_, reject) => { failed = reject; });
      const M = await Promise.race([
        createOnnxfold({
          // Our own instantiation: the glue's node path would read the file again, and its
          // browser path swallows errors (the ready promise would never settle).
          instantiateWasm(imports, receive) {
            WebAssembly.instantiate(wasm, imports).then((instance) => receive(instance, wasm), failed);
            return {};
          },
          print: () => {},
          printErr: (text) => { if (isNode) process.stderr.write(`onnxfold: ${text}\n`); else console.warn(text); },
        }),
        failure,
      ]);
      return M;
    })();
    modulePromise.catch(() => { modulePromise = null; });  // a failed load may be retried
  }
  return modulePromise;
}

/** Loads and instantiates the wasm module now (otherwise the first call does). */
export async function init() {
  await getModule();
}

// --- errors ---------------------------------------------------------------------------------------

function abortError(signal) {
  const reason = signal && signal.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  const e = typeof DOMException === 'function'
    ? new DOMException('onnxfold: the operation was aborted', 'AbortError')
    : Object.assign(new Error('onnxfold: the operation was aborted'), { name: 'AbortError' });
  if (reason !== undefined) {
    try { Object.defineProperty(e, 'cause', { value: reason, configurable: true }); } catch { /* frozen */ }
  }
  return e;
}

// A wasm trap (RuntimeError) or a stray exception can leave the instance in an unknown state:
// drop it, so the next call starts from a fresh one. Errors thrown by the bindings are ordinary.
function wrapError(what, e) {
  if (e instanceof Error && e.name === 'AbortError') return e;
  if (e instanceof Error && !(e instanceof WebAssembly.RuntimeError) && e.constructor === Error) {
    return new OnnxfoldError(`${what}: ${e.message}`, { cause: e });
  }
  modulePromise = null;
  const msg = e instanceof Error ? e.message : String(e);
  const oom = e instanceof WebAssembly.RuntimeError || /memory/i.test(msg)
    ? ' (the WebAssembly heap is limited to 4 GB)' : '';
  return new OnnxfoldError(`${what}: internal error: ${msg}${oom}`, { cause: e });
}

// --- bytes in and out -----------------------------------------------------------------------------

function describe(x) {
  if (x === null) return 'null';
  if (typeof x !== 'object') return typeof x;
  return (x.constructor && x.constructor.name) || 'object';
}

function asView(bytes, what) {
  if (bytes instanceof Uint8Array) return bytes;
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes instanceof ArrayBuffer ||
      (typeof SharedArrayBuffer === 'function' && bytes instanceof SharedArrayBuffer)) {
    return new Uint8Array(bytes);
  }
  throw new TypeError(`onnxfold: ${what} must be a Uint8Array, an ArrayBuffer or a Blob, not ${describe(bytes)}`);
}

const isBlob = (x) => typeof Blob === 'function' && x instanceof Blob;

// Copies `bytes` into a fresh block of the wasm heap; returns { ptr, len } (owned by the caller
// until handed to the bindings, which free it).
async function toHeap(M, bytes, what) {
  if (isBlob(bytes)) {
    const len = bytes.size;
    const ptr = allocOrThrow(M, len, what);
    try {
      let off = 0;
      const reader = bytes.stream().getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (off + value.length > len) throw new OnnxfoldError(`${what}: the Blob grew while being read`);
        M.HEAPU8.set(value, ptr + off);  // HEAPU8 is re-read: it changes when the heap grows
        off += value.length;
      }
      if (off !== len) throw new OnnxfoldError(`${what}: read ${off} of the Blob's ${len} bytes`);
    } catch (e) {
      M.release(ptr);
      throw e;
    }
    return { ptr, len };
  }
  const view = asView(bytes, what);
  const ptr = allocOrThrow(M, view.length, what);
  M.HEAPU8.set(view, ptr);
  return { ptr, len: view.length };
}

function allocOrThrow(M, len, what) {
  try {
    return M.alloc(len);
  } catch (e) {
    throw wrapError(what, e);
  }
}

async function externalToHeap(M, externalData, what) {
  if (externalData === undefined || externalData === null) return undefined;
  if (typeof externalData !== 'object') {
    throw new TypeError(`onnxfold: options.externalData must be an object { [location]: bytes }, not ${describe(externalData)}`);
  }
  const blocks = {};
  try {
    for (const [location, data] of Object.entries(externalData)) {
      blocks[location] = await toHeap(M, data, `${what}: externalData['${location}']`);
    }
  } catch (e) {
    for (const b of Object.values(blocks)) M.release(b.ptr);
    throw e;
  }
  return blocks;
}

// --- options --------------------------------------------------------------------------------------

const JSON_OPTIONS = ['passes', 'preserve', 'sizeBudget', 'constructorBudget', 'foldDequantizeWeights',
  'quant', 'maxIterations', 'verify', 'externalDataThreshold', 'externalDataLocation', 'extra'];
const JS_OPTIONS = ['externalData', 'onProgress', 'signal'];

function optionsJson(options) {
  if (options === undefined || options === null) return '{}';
  if (typeof options !== 'object') throw new TypeError(`onnxfold: options must be an object, not ${describe(options)}`);
  const out = {};
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined || JS_OPTIONS.includes(key)) continue;
    if (!JSON_OPTIONS.includes(key)) {
      throw new TypeError(`onnxfold: unknown option '${key}' (known: ${[...JSON_OPTIONS, ...JS_OPTIONS].join(', ')})`);
    }
    out[key] = value;
  }
  if (out.extra !== undefined) {
    out.extra = Object.fromEntries(Object.entries(out.extra).map(([k, v]) => [k, String(v)]));
  }
  return JSON.stringify(out);
}

function checkCallbacks(options) {
  const { onProgress, signal } = options || {};
  if (onProgress !== undefined && typeof onProgress !== 'function') {
    throw new TypeError('onnxfold: options.onProgress must be a function');
  }
  if (signal !== undefined && (signal === null || typeof signal.aborted !== 'boolean')) {
    throw new TypeError('onnxfold: options.signal must be an AbortSignal');
  }
  if (signal && signal.aborted) throw abortError(signal);
}

// --- API ------------------------------------------------------------------------------------------

// Runs one optimize call on heap blocks; the outputs go to `output` (see bindings.cpp JsSink:
// output(location, kind, ptr, len), location '' = the model, kind 0 = total size announced,
// kind 1 = bytes at HEAPU8[ptr, ptr+len)). Returns the report JSON string.
function runOptimize(M, input, external, options, output) {
  const json = optionsJson(options);
  const { onProgress, signal } = options || {};
  let last = 0;
  let callbackError;
  // The C++ side reports a fraction per pass of each fixpoint round, so it can step back when a
  // new round starts; users get a fraction that never decreases.
  const progress = onProgress && ((stage, pass, fraction) => {
    last = Math.max(last, Math.min(1, fraction));
    try {
      onProgress({ stage, pass, fraction: last });
    } catch (e) {
      if (callbackError === undefined) callbackError = e;
    }
  });
  // Polled by the pass manager between passes. A synchronous wasm call keeps the event loop
  // busy, so an abort from elsewhere is seen only if it happens in onProgress or before the call.
  const cancelled = (onProgress || signal) && (() => callbackError !== undefined || !!(signal && signal.aborted));
  try {
    return M.optimize(input.ptr, input.len, json, progress, cancelled, external, output.write);
  } catch (e) {
    if (output.error !== undefined) throw output.error;
    if (callbackError !== undefined) throw callbackError;
    if (signal && signal.aborted) throw abortError(signal);
    throw wrapError('optimize', e);
  }
}

// The report as the C++ side writes it (api/summary.cpp), plus the flat aliases the JS contract
// names (millis, nodes_before/after, ..., read_ms/optimize_ms/write_ms, op_type).
function parseReport(json) {
  const report = JSON.parse(json);
  const t = report.timing_ms || {};
  report.read_ms = t.read;
  report.optimize_ms = t.optimize;
  report.write_ms = t.write;
  for (const p of report.passes || []) {
    p.millis = p.ms;
    [p.nodes_before, p.nodes_after] = p.nodes || [];
    [p.initializers_before, p.initializers_after] = p.initializers || [];
    [p.bytes_before, p.bytes_after] = p.initializer_bytes || [];
  }
  for (const n of report.not_folded || []) n.op_type = n.op;
  return report;
}

// Collects each output file in one Uint8Array of the announced size (one copy out of the heap).
function memoryOutput(M) {
  const files = new Map();
  const output = {
    error: undefined,
    write(location, kind, ptr, len) {
      try {
        let f = files.get(location);
        if (kind === 0) {
          files.set(location, { bytes: new Uint8Array(len), size: 0 });
          return true;
        }
        if (!f) files.set(location, (f = { bytes: new Uint8Array(Math.max(len, 1 << 16)), size: 0 }));
        if (f.size + len > f.bytes.length) {  // more than announced: grow (not expected)
          const grown = new Uint8Array(Math.max(f.size + len, 2 * f.bytes.length));
          grown.set(f.bytes.subarray(0, f.size));
          f.bytes = grown;
        }
        f.bytes.set(M.HEAPU8.subarray(ptr, ptr + len), f.size);
        f.size += len;
        return true;
      } catch (e) {
        output.error ??= e;
        return false;
      }
    },
    take(location) {
      const f = files.get(location);
      if (!f) return new Uint8Array(0);
      return f.size === f.bytes.length ? f.bytes : f.bytes.slice(0, f.size);
    },
    locations: () => [...files.keys()].filter((l) => l !== ''),
  };
  return output;
}

/**
 * Optimizes an ONNX model. See index.d.ts for the options and the report's shape.
 * @returns {Promise<{model: Uint8Array, externalData: Record<string, Uint8Array>, report: object}>}
 */
export async function optimize(bytes, options = {}) {
  checkCallbacks(options);
  const json = optionsJson(options);  // validate before any copying
  void json;
  const M = await getModule();
  const external = await externalToHeap(M, options && options.externalData, 'optimize');
  let input;
  try {
    input = await toHeap(M, bytes, 'optimize: model');
  } catch (e) {
    for (const b of Object.values(external || {})) M.release(b.ptr);
    throw e;
  }
  if (options && options.signal && options.signal.aborted) {
    M.release(input.ptr);
    for (const b of Object.values(external || {})) M.release(b.ptr);
    throw abortError(options.signal);
  }
  const output = memoryOutput(M);
  const report = runOptimize(M, input, external, options, output);  // the bindings own the blocks
  const externalData = {};
  for (const location of output.locations()) externalData[location] = output.take(location);
  return { model: output.take(''), externalData, report: parseReport(report) };
}

/**
 * Node only: optimizes the model file `inputPath` and writes `outputPath` (plus its external-data
 * files beside it, if any), reading and writing straight from the wasm heap (no JS-side copy of
 * the model). External data the model refers to is read from the input's folder, unless
 * `options.externalData` supplies it.
 * @returns {Promise<{report: object, outputs: string[]}>}
 */
export async function optimizeFile(inputPath, outputPath, options = {}) {
  if (!isNode) throw new OnnxfoldError('optimizeFile is only available in node; use optimize(bytes)');
  checkCallbacks(options);
  optionsJson(options);
  const fs = nodeModule('fs');
  const path = nodeModule('path');
  const inFile = path.resolve(String(inputPath));
  const outFile = path.resolve(String(outputPath));
  if (inFile === outFile) throw new OnnxfoldError(`optimizeFile: refusing to write over the input ${inFile}`);
  const M = await getModule();
  let external;
  let readError;
  if (options.externalData != null) {
    external = await externalToHeap(M, options.externalData, 'optimizeFile');
  } else {
    // Called synchronously by the reader for each location the model names.
    const dir = path.dirname(inFile);
    external = (location) => {
      const target = path.resolve(dir, location);
      const rel = path.relative(dir, target);
      if (path.isAbsolute(location) || rel.startsWith('..') || path.isAbsolute(rel)) {
        readError ??= new OnnxfoldError(`optimizeFile: external-data location '${location}' is outside the model's folder`);
        return undefined;
      }
      try {
        return readFileToHeap(M, fs, target);
      } catch (e) {
        readError ??= new OnnxfoldError(`optimizeFile: cannot read external data '${location}': ${e.message}`, { cause: e });
        return undefined;
      }
    };
  }
  let input;
  try {
    input = readFileToHeap(M, fs, inFile);
  } catch (e) {
    for (const b of Object.values(typeof external === 'object' ? external : {})) M.release(b.ptr);
    throw e instanceof OnnxfoldError ? e : new OnnxfoldError(`optimizeFile: cannot read ${inFile}: ${e.message}`, { cause: e });
  }
  const output = fileOutput(M, fs, path, outFile);
  let report;
  try {
    report = runOptimize(M, input, external, options, output);
    output.commit();
  } catch (e) {
    output.discard();
    throw readError ?? e;
  }
  return { report: parseReport(report), outputs: output.paths() };
}

// Writes each output file from the heap as the writer produces it, to a temporary name renamed
// into place once everything succeeded (a failed run leaves no partial files behind).
function fileOutput(M, fs, path, outFile) {
  const dir = path.dirname(outFile);
  const open = new Map();  // location -> { fd, tmp, target }
  const output = {
    error: undefined,
    write(location, kind, ptr, len) {
      try {
        let f = open.get(location);
        if (!f) {
          let target = outFile;
          if (location !== '') {
            target = path.resolve(dir, location);
            const rel = path.relative(dir, target);
            if (path.isAbsolute(location) || rel.startsWith('..') || path.isAbsolute(rel)) {
              throw new OnnxfoldError(`optimizeFile: external-data location '${location}' is outside the output's folder`);
            }
          }
          const tmp = `${target}.tmp-${process.pid}`;
          f = { fd: fs.openSync(tmp, 'w'), tmp, target };
          open.set(location, f);
        }
        if (kind === 1) {
          for (let off = 0; off < len;) {
            off += fs.writeSync(f.fd, M.HEAPU8, ptr + off, Math.min(len - off, 1 << 30));
          }
        }
        return true;
      } catch (e) {
        output.error ??= e instanceof OnnxfoldError ? e : new OnnxfoldError(`optimizeFile: ${e.message}`, { cause: e });
        return false;
      }
    },
    commit() {
      for (const f of open.values()) fs.closeSync(f.fd);
      for (const f of open.values()) fs.renameSync(f.tmp, f.target);
    },
    discard() {
      for (const f of open.values()) {
        try { fs.closeSync(f.fd); } catch { /* already closed */ }
        try { fs.unlinkSync(f.tmp); } catch { /* gone */ }
      }
    },
    // The model first, then its external-data files.
    paths: () => [outFile, ...[...open.entries()].filter(([l]) => l !== '').map(([, f]) => f.target)],
  };
  return output;
}

function readFileToHeap(M, fs, file) {
  const fd = fs.openSync(file, 'r');
  try {
    const len = fs.fstatSync(fd).size;
    const ptr = allocOrThrow(M, len, `optimizeFile: ${file}`);
    try {
      let off = 0;
      while (off < len) {
        // At most 1 GiB per read (node's limit is 2 GiB - 1); HEAPU8 is the current view.
        const n = fs.readSync(fd, M.HEAPU8, ptr + off, Math.min(len - off, 1 << 30), off);
        if (n === 0) throw new OnnxfoldError(`optimizeFile: ${file} shrank while being read`);
        off += n;
      }
    } catch (e) {
      M.release(ptr);
      throw e;
    }
    return { ptr, len };
  } finally {
    fs.closeSync(fd);
  }
}

/** Summary of a model (the CLI's `info`): ir_version, opsets, nodes, op_histogram, inputs, ... */
export async function inspect(bytes, options = {}) {
  const M = await getModule();
  const external = await externalToHeap(M, options && options.externalData, 'inspect');
  let input;
  try {
    input = await toHeap(M, bytes, 'inspect: model');
  } catch (e) {
    for (const b of Object.values(external || {})) M.release(b.ptr);
    throw e;
  }
  let json;
  try {
    json = M.inspect(input.ptr, input.len, external);
  } catch (e) {
    throw wrapError('inspect', e);
  }
  return JSON.parse(json);
}

async function bytesForBinding(bytes, what) {
  if (isBlob(bytes)) return new Uint8Array(await bytes.arrayBuffer());
  return asView(bytes, what);
}

function requireBinding(M, name) {
  if (typeof M[name] !== 'function') {
    throw new OnnxfoldError(`${name} is not available in this build of onnxfold (dist/onnxfold.wasm)`);
  }
}

/** The model's module hierarchy, recovered from node names (see index.d.ts ModuleTree). */
export async function moduleTree(bytes) {
  const M = await getModule();
  requireBinding(M, 'moduleTree');
  const view = await bytesForBinding(bytes, 'moduleTree: model');
  try {
    return JSON.parse(M.moduleTree(view));
  } catch (e) {
    throw wrapError('moduleTree', e);
  }
}

/** Splits a model into a constant-preparation model and the main model. */
export async function splitConstants(bytes, options = {}) {
  const M = await getModule();
  requireBinding(M, 'splitConstants');
  const view = await bytesForBinding(bytes, 'splitConstants: model');
  let r;
  try {
    r = M.splitConstants(view, optionsJson(options));
  } catch (e) {
    throw wrapError('splitConstants', e);
  }
  return { prep: r.prep, main: r.main, report: JSON.parse(r.report) };
}

/** Registered pass names and the default pipeline. */
export async function passes() {
  const M = await getModule();
  return JSON.parse(M.passes());
}

/** onnxfold's version (of the wasm build). */
export async function version() {
  const M = await getModule();
  return M.version();
}

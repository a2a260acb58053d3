// onnxfold: the npm package's JS API, a thin typed layer over the Embind module in
// dist/onnxfold.{mjs,wasm} (wasm-bindings/host.h describes the boundary). It accepts
// Uint8Array / ArrayBuffer / Blob / File (and file paths in node), turns options into JSON,
// parses the report and wraps errors; all the work is in wasm.
//
// Only the model's graph goes into the wasm heap: weights (external-data files, and raw_data
// of 16 KiB or more inside the .onnx) stay where they are; wasm reads the ranges it needs
// through host.read (fs.readSync on an fd in node, FileReaderSync on blob.slice() in a Worker, a subarray of
// bytes in memory), and the output comes back as a plan of heap bytes and input ranges, which
// this layer assembles without the heap: a Blob of File slices, a streamed file copy in node,
// or one Uint8Array. Types: js/index.d.ts.
import { accuracyOf, runReference } from './accuracy.js';

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

// What loading the module took (once per process): compiling onnxfold.wasm (reading it
// included) and instantiating it (the glue's start-up included).
const moduleLoad = { compile_ms: 0, instantiate_ms: 0 };
const now = () => performance.now();

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
      const t0 = now();
      try {
        wasm = await compileWasm();
        moduleLoad.compile_ms = now() - t0;
      } catch (e) {
        throw e instanceof OnnxfoldError ? e : new OnnxfoldError(`cannot load onnxfold.wasm: ${e.message}`, { cause: e });
      }
      let failed;
      const failure = new Promise((_, reject) => { failed = reject; });
      const t1 = now();
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
      moduleLoad.instantiate_ms = now() - t1;
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
  // Say what happened: the heap could not grow, or the module trapped (a bug in onnxfold).
  const oom = /enlarge memory|out of memory|OOM|Array buffer allocation failed/i.test(msg);
  const hint = oom
    ? ' (out of memory: the WebAssembly heap is limited to 4 GB)'
    : e instanceof WebAssembly.RuntimeError
      ? ' (the WebAssembly module trapped: a bug in onnxfold, please report it with the model; the module is restarted for the next call)'
      : '';
  return new OnnxfoldError(`${what}: internal error: ${msg}${hint}`, { cause: e });
}

// --- sources: the files a call reads -------------------------------------------------------------

function describe(x) {
  if (x === null) return 'null';
  if (typeof x !== 'object') return typeof x;
  return (x.constructor && x.constructor.name) || 'object';
}

function asView(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes instanceof ArrayBuffer ||
      (typeof SharedArrayBuffer === 'function' && bytes instanceof SharedArrayBuffer)) {
    return new Uint8Array(bytes);
  }
  return undefined;
}

const isBlob = (x) => typeof Blob === 'function' && x instanceof Blob;
// FileReaderSync exists in Workers only: there a Blob is read range by range, on demand.
const canReadBlobSync = () => typeof FileReaderSync === 'function';

const KINDS = 'a Uint8Array, an ArrayBuffer, a Blob or File' + (isNode ? ' or a file path' : '');

// A source: { size, read(offset, n, heap, at) (synchronous), part(offset, n) (a Blob part for
// an output that refers to this range, or undefined), close() }.
async function openSource(data, what) {
  const view = asView(data);
  if (view) {
    return {
      size: view.length,
      read: (off, n, heap, at) => heap.set(view.subarray(off, off + n), at),
      part: (off, n) => view.subarray(off, off + n),
      close() {},
    };
  }
  if (isBlob(data)) {
    if (canReadBlobSync()) {
      const reader = new FileReaderSync();
      return {
        size: data.size,
        read(off, n, heap, at) {
          const got = new Uint8Array(reader.readAsArrayBuffer(data.slice(off, off + n)));
          if (got.length !== n) throw new OnnxfoldError(`${what}: read ${got.length} of ${n} bytes (did the file change?)`);
          heap.set(got, at);
          nudgeCollector(n);
        },
        part: (off, n) => data.slice(off, off + n),
        close() {},
      };
    }
    // No synchronous Blob reads here (a page's main thread, node): the bytes are read into JS
    // memory first (not into the wasm heap); outputs still refer to slices of the Blob.
    if (data.size > MAX_JS_BYTES) {
      throw new OnnxfoldError(`${what}: a Blob of ${gib(data.size)} cannot be read synchronously here; ` +
        `call onnxfold from a Web Worker (FileReaderSync reads it range by range)` +
        (isNode ? ', or pass a file path' : ''));
    }
    const bytes = await blobBytes(data, what);
    return {
      size: bytes.length,
      read: (off, n, heap, at) => heap.set(bytes.subarray(off, off + n), at),
      part: (off, n) => data.slice(off, off + n),
      close() {},
    };
  }
  if (isNode && (typeof data === 'string' || data instanceof URL)) return openFileSource(data, what);
  throw new TypeError(`onnxfold: ${what} must be ${KINDS}, not ${describe(data)}`);
}

// Each FileReaderSync read is a new ArrayBuffer, dead once copied into the heap. V8 frees dead
// young buffers at a scavenge, which runs when its young generation fills with JS objects;
// inside one long wasm call almost none are made, so a 1B decoder's reads piled up as GBs of
// dead buffers in the Worker. A short-lived array per 16 MiB read lets the scavenges run.
let unscavenged = 0;
function nudgeCollector(n) {
  unscavenged += n;
  if (unscavenged < 16 << 20) return;
  unscavenged = 0;
  new Array(1 << 20).fill(0);
}

// The largest Uint8Array engines make (V8: 2^32 - 1 elements on 64-bit hosts).
const MAX_JS_BYTES = 2 ** 32 - 1;
const gib = (n) => `${(n / 2 ** 30).toFixed(2)} GiB`;

async function blobBytes(blob, what) {
  const bytes = new Uint8Array(blob.size);
  let off = 0;
  const reader = blob.stream().getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (off + value.length > bytes.length) throw new OnnxfoldError(`${what}: the Blob grew while being read`);
    bytes.set(value, off);
    off += value.length;
  }
  if (off !== bytes.length) throw new OnnxfoldError(`${what}: read ${off} of the Blob's ${bytes.length} bytes`);
  return bytes;
}

// The descriptors of the files sources read, by file (device and inode): at most
// MAX_OPEN_FILES stay open, the most recently read, and the others are opened again when
// read; the rule of the native side (src/api/file_io.cpp, Descriptors). A model may name
// thousands of data files, more than a process may hold open.
const MAX_OPEN_FILES = 64;
const openFiles = new Map();  // key -> { path, users, fd (null when closed) }
const recentFiles = new Map();  // keys of the files with an open fd, least recently read first

function keepOpen(key, entry) {
  recentFiles.delete(key);
  recentFiles.set(key, entry);
  for (const [k, e] of recentFiles) {
    if (recentFiles.size <= MAX_OPEN_FILES) break;
    nodeModule('fs').closeSync(e.fd);
    e.fd = null;
    recentFiles.delete(k);
  }
}

function openFileSource(file, what) {
  const fs = nodeModule('fs');
  let fd;
  try {
    // Checked before opening: opening a FIFO for reading would wait for a writer forever.
    if (!fs.statSync(file).isFile()) throw new OnnxfoldError(`${what}: ${file} is not a regular file`);
    fd = fs.openSync(file, 'r');
  } catch (e) {
    if (e instanceof OnnxfoldError) throw e;
    throw new OnnxfoldError(`${what}: cannot open ${file}: ${e.message}`, { cause: e });
  }
  const st = fs.fstatSync(fd, { bigint: true });
  if (!st.isFile()) {
    fs.closeSync(fd);
    throw new OnnxfoldError(`${what}: ${file} is not a regular file`);
  }
  const key = `${st.dev}:${st.ino}`;
  let entry = openFiles.get(key);
  if (!entry) openFiles.set(key, (entry = { path: String(file), users: 0, fd: null }));
  entry.users += 1;
  if (entry.fd === null) entry.fd = fd;
  else fs.closeSync(fd);
  keepOpen(key, entry);
  const descriptor = () => {
    if (entry.fd === null) {
      const again = fs.openSync(entry.path, 'r');
      const now = fs.fstatSync(again, { bigint: true });
      if (`${now.dev}:${now.ino}` !== key) {
        fs.closeSync(again);
        throw new OnnxfoldError(`${what}: ${file} was replaced while onnxfold read it`);
      }
      entry.fd = again;
    }
    keepOpen(key, entry);
    return entry.fd;
  };
  let closed = false;
  return {
    size: Number(st.size),
    path: String(file),
    read(off, n, heap, at) {
      const d = descriptor();
      for (let done = 0; done < n;) {
        // At most 1 GiB per read (node's limit is 2 GiB - 1).
        const got = fs.readSync(d, heap, at + done, Math.min(n - done, 1 << 30), off + done);
        if (got === 0) throw new OnnxfoldError(`${what}: ${file} ended early (did it change?)`);
        done += got;
      }
    },
    part: undefined,
    close() {
      if (closed) return;
      closed = true;
      if (--entry.users > 0) return;
      openFiles.delete(key);
      if (entry.fd !== null) {
        recentFiles.delete(key);
        try { fs.closeSync(entry.fd); } catch { /* closed */ }
      }
    },
  };
}

// --- outputs: the plan wasm writes, assembled here -----------------------------------------------

// Each output file arrives as kind 0 (its size), then pieces: heap bytes (kind 1) and ranges of
// input sources (kind 2). `mode` says what a finished file becomes:
//   'bytes': one Uint8Array (ranges copied from their sources);
//   'blob':  a Blob of parts (heap bytes copied out, or written to `spill`; ranges as Blob
//            slices, not read at all).
function memoryOutput(M, sources, mode, spill) {
  const files = new Map();
  return {
    start(location, size) {
      files.set(location, mode === 'bytes'
        ? { bytes: new Uint8Array(size), size: 0 }
        : { parts: [], size: 0 });
    },
    heap(location, ptr, len) {
      const f = files.get(location);
      if (mode === 'bytes') {
        if (f.size + len > f.bytes.length) throw new OnnxfoldError(`output '${location}' is larger than announced`);
        f.bytes.set(M.HEAPU8.subarray(ptr, ptr + len), f.size);
      } else if (spill) {
        const at = spill.write(M.HEAPU8.subarray(ptr, ptr + len));
        // Heap pieces of one file in a row are one slice of the spill file.
        const last = f.parts[f.parts.length - 1];
        if (last instanceof SpillRange && last.end === at) last.end += len;
        else f.parts.push(new SpillRange(at, at + len));
      } else {
        f.parts.push(M.HEAPU8.slice(ptr, ptr + len));
      }
      f.size += len;
    },
    range(location, id, offset, len) {
      const f = files.get(location);
      const src = sources[id];
      if (mode === 'bytes') {
        if (f.size + len > f.bytes.length) throw new OnnxfoldError(`output '${location}' is larger than announced`);
        src.read(offset, len, f.bytes, f.size);
      } else {
        f.parts.push(src.part ? src.part(offset, len) : readRange(src, offset, len));
      }
      f.size += len;
    },
    take(location) {
      const f = files.get(location);
      if (mode === 'bytes') return f ? f.bytes.subarray(0, f.size) : new Uint8Array(0);
      const parts = f ? f.parts.map((p) => (p instanceof SpillRange ? spill.slice(p.start, p.end) : p)) : [];
      return new Blob(parts, { type: 'application/octet-stream' });
    },
    locations: () => [...files.keys()],
    commit() {},
    discard() {},
  };
}

class SpillRange {
  constructor(start, end) {
    this.start = start;
    this.end = end;
  }
}

// options.spill: the computed bytes of a Blob result go to a new file in that folder of the
// origin private file system instead of JS memory, so a result of several GB (float16 of a
// 1B decoder) is held on disk; the result's parts are slices of that file. host.output is
// synchronous, so the writes need a FileSystemSyncAccessHandle: dedicated Workers only. The
// file stays as long as the caller keeps it (the results read from it); removed on failure.
const canSpill = () => typeof FileSystemFileHandle === 'function' &&
  typeof FileSystemFileHandle.prototype.createSyncAccessHandle === 'function';

async function openSpill(dir, what) {
  const name = `onnxfold-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}.bin`;
  const handle = await dir.getFileHandle(name, { create: true });
  let access;
  try {
    access = await handle.createSyncAccessHandle();
  } catch (e) {
    await dir.removeEntry(name).catch(() => {});
    throw new OnnxfoldError(`${what}: options.spill: cannot write '${name}' in the folder: ${e.message}`, { cause: e });
  }
  let size = 0;
  let file = null;
  return {
    name,
    get size() { return size; },
    write(bytes) {
      const at = size;
      for (let done = 0; done < bytes.length;) {
        const n = access.write(bytes.subarray(done), { at: at + done });
        if (!(n > 0)) throw new OnnxfoldError(`options.spill: '${name}' took no more bytes at ${at + done}`);
        done += n;
      }
      size += bytes.length;
      return at;
    },
    // After the call: the file is complete and read only through its snapshot.
    async finish() {
      access.flush();
      access.close();
      file = await handle.getFile();
      if (file.size !== size) throw new OnnxfoldError(`${what}: options.spill: '${name}' has ${file.size} of ${size} bytes`);
    },
    slice: (start, end) => file.slice(start, end),
    async remove() {
      try { access.close(); } catch { /* closed */ }
      await dir.removeEntry(name).catch(() => {});
    },
  };
}

function readRange(src, offset, len) {
  const bytes = new Uint8Array(len);
  src.read(offset, len, bytes, 0);
  return bytes;
}

// Node: each output file is written as the plan comes, to a temporary name renamed into place
// once everything succeeded (a failed run leaves no partial files). Ranges of input files are
// copied file to file through one 16 MiB buffer, never through the wasm heap.
function fileOutput(M, sources, fs, path, plan, targets) {
  const open = new Map();  // location -> { fd, tmp, target }
  let copyBuffer;
  const fileFor = (location) => {
    const f = open.get(location);
    if (!f) throw new OnnxfoldError(`output '${location}' was not started`);
    return f;
  };
  const writeAll = (fd, bytes, off, len) => {
    for (let done = 0; done < len;) done += fs.writeSync(fd, bytes, off + done, Math.min(len - done, 1 << 30));
  };
  return {
    start(location) {
      const target = targets(location);
      const tmp = path.join(path.dirname(target), `.${path.basename(target)}.tmp-${process.pid}-${open.size}`);
      open.set(location, { fd: fs.openSync(tmp, 'wx'), tmp, target });
    },
    heap(location, ptr, len) {
      writeAll(fileFor(location).fd, M.HEAPU8, ptr, len);
    },
    range(location, id, offset, len) {
      const f = fileFor(location);
      const src = sources[id];
      copyBuffer ??= Buffer.allocUnsafe(1 << 24);
      for (let done = 0; done < len;) {
        const n = Math.min(len - done, copyBuffer.length);
        src.read(offset + done, n, copyBuffer, 0);
        writeAll(f.fd, copyBuffer, 0, n);
        done += n;
      }
    },
    // `extra`: more [temporary, target] renames (the report), after the model.
    commit(extra = []) {
      for (const f of open.values()) fs.closeSync(f.fd);
      // Data files first, the model last: a model never points at missing data.
      const entries = [...open.entries()].sort(([a], [b]) => (a === '') - (b === ''));
      plan.commit([...entries.map(([, f]) => [f.tmp, f.target]), ...extra]);
    },
    discard() {
      for (const f of open.values()) {
        try { fs.closeSync(f.fd); } catch { /* already closed */ }
        try { fs.unlinkSync(f.tmp); } catch { /* gone */ }
      }
    },
    locations: () => [...open.keys()],
    paths: () => [...open.entries()].sort(([a], [b]) => (b === '') - (a === '')).map(([, f]) => f.target),
  };
}

// The files one call reads and writes (the native side's WritePlan, api/file_io.h). Before
// anything is written, every output is compared with every input and with the other outputs:
// by device and inode for files that exist, by real path otherwise (a new file: its folder's
// real path and its name). Outputs go to temporaries that commit() renames into place once
// all of them were written, so a failed call leaves nothing behind and never replaces a file
// the user did not name. Errors are OnnxfoldErrors starting with `what`.
function writePlan(fs, path, what) {
  const inputs = [];
  const outputs = [];
  const fail = (message) => { throw new OnnxfoldError(`${what}: ${message}`); };
  const identify = (file, role) => {
    const e = { path: file, role, exists: false };
    const st = fs.statSync(file, { bigint: true, throwIfNoEntry: false });
    if (st) {
      Object.assign(e, { exists: true, dev: st.dev, ino: st.ino, real: fs.realpathSync(file), isDir: st.isDirectory(), isFile: st.isFile() });
      return e;
    }
    const dir = path.dirname(file);
    try {
      e.real = path.join(fs.realpathSync(dir), path.basename(file));
    } catch (err) {
      fail(`${role} '${file}': cannot use its folder '${dir}': ${err.message}`);
    }
    return e;
  };
  const same = (a, b) => (a.exists && b.exists ? a.dev === b.dev && a.ino === b.ino : a.real === b.real);
  const collision = (out, other, verb) =>
    `${out.role} '${out.path}' is ${verb}${other.role}${other.path === out.path ? '' : ` '${other.path}'`}`;
  const NEVER = '; onnxfold never overwrites its input';
  return {
    addInput(file, role) {
      if (!fs.existsSync(file)) return;  // nothing to overwrite; reading it will fail
      const input = identify(file, role);
      for (const out of outputs) if (same(out, input)) fail(collision(out, input, 'the ') + NEVER);
      inputs.push(input);
    },
    addOutput(file, role) {
      const out = identify(file, role);
      if (out.exists && !out.isFile) fail(`${role} '${file}' is ${out.isDir ? 'a directory' : 'not a regular file'}`);
      for (const input of inputs) if (same(out, input)) fail(collision(out, input, 'the ') + NEVER);
      for (const other of outputs) if (same(out, other)) fail(collision(out, other, 'also the '));
      outputs.push(out);
    },
    // Renames [temporary, target] pairs in order; the targets must have been added.
    commit(renames) {
      // Checked again just before: a folder made since would stop the renames half-way.
      for (const [, target] of renames) {
        if (fs.statSync(target, { throwIfNoEntry: false })?.isDirectory()) {
          fail(`${outputs.find((o) => o.path === target)?.role ?? 'output'} '${target}' is a directory`);
        }
      }
      const done = [];
      try {
        for (const [tmp, target] of renames) {
          fs.renameSync(tmp, target);
          done.push(target);
        }
      } catch (e) {
        // Take back the files this call created (a file it replaced cannot be brought back).
        for (const target of done) {
          if (!outputs.find((o) => o.path === target)?.exists) fs.rmSync(target, { force: true });
        }
        throw e;
      }
    },
  };
}

// --- one call: the host object of wasm-bindings/host.h --------------------------------------------

// Runs fn(M, modelSize, host, output) with the model as source 0 and every other file as a
// source after it (wasm reads what it needs through host.read), then closes the sources. `resolve(location)` returns a source for an external-data
// location the model names (or undefined); makeOutput(M, sources) makes the plan's receiver;
// `options` gives externalData, onProgress and signal.
// `stats`, when given, receives the host side's profile (the report's `host`): time spent
// loading the module in this call, and time and bytes of host reads and output-plan entries.
async function withCall(what, modelData, { resolve, makeOutput, options, stats }, fn) {
  const M = await getModule();
  const io = stats || {};
  Object.assign(io, {
    compile_ms: moduleLoad.compile_ms, instantiate_ms: moduleLoad.instantiate_ms,
    call_ms: 0, read_ms: 0, read_bytes: 0, reads: 0, write_ms: 0, write_bytes: 0, copy_bytes: 0,
  });
  const sources = [];
  const output = makeOutput ? makeOutput(M, sources) : undefined;
  const byLocation = new Map();
  let hostError;
  const keep = (e) => { hostError ??= e; return false; };
  const pending = [];  // external data given up front, opened before the synchronous call
  try {
    const model = await openSource(modelData, `${what}: model`);
    sources.push(model);
    const given = options && options.externalData;
    if (given !== undefined && given !== null) {
      if (typeof given !== 'object') {
        throw new TypeError(`onnxfold: options.externalData must be an object { [location]: data }, not ${describe(given)}`);
      }
      for (const [location, data] of Object.entries(given)) {
        pending.push([location, await openSource(data, `${what}: externalData['${location}']`)]);
      }
    }
    for (const [location, src] of pending) {
      byLocation.set(location, sources.length);
      sources.push(src);
    }
    const signal = options && options.signal;
    if (signal && signal.aborted) throw abortError(signal);
    let last = 0;
    const onProgress = options && options.onProgress;
    const host = {
      external(location) {
        try {
          if (!byLocation.has(location)) {
            const data = resolve ? resolve(location) : undefined;
            if (data === undefined) {
              const names = [...byLocation.keys()].map((l) => `'${l}'`).join(', ');
              throw new OnnxfoldError(`${what}: the model refers to external data '${location}', which was not supplied ` +
                `(options.externalData has ${names || 'no files'})`);
            }
            byLocation.set(location, sources.length);
            sources.push(data);
          }
          const id = byLocation.get(location);
          return { id, size: sources[id].size };
        } catch (e) {
          keep(e);
          return undefined;
        }
      },
      read(id, offset, n, ptr) {
        const t = now();
        try {
          sources[id].read(offset, n, M.HEAPU8, ptr);
          return true;
        } catch (e) {
          return keep(e);
        } finally {
          io.read_ms += now() - t;
          io.read_bytes += n;
          io.reads++;
        }
      },
      output(location, kind, a, b, c) {
        const t = now();
        try {
          if (kind === 0) output.start(location, a);
          else if (kind === 1) output.heap(location, a, b);
          else output.range(location, a, b, c);
          return true;
        } catch (e) {
          return keep(e instanceof OnnxfoldError ? e : new OnnxfoldError(`${what}: writing '${location || 'the model'}': ${e.message}`, { cause: e }));
        } finally {
          io.write_ms += now() - t;
          if (kind === 1) io.write_bytes += b;
          else if (kind === 2) io.copy_bytes += c;
        }
      },
      // The C++ side reports a fraction per pass of each fixpoint round, so it can step back
      // when a new round starts; users get a fraction that never decreases.
      progress: onProgress && ((stage, pass, fraction) => {
        last = Math.max(last, Math.min(1, fraction));
        try {
          onProgress({ stage, pass, fraction: last });
        } catch (e) {
          keep(e);
        }
      }),
      // Polled between passes. A synchronous wasm call keeps the event loop busy, so an abort
      // from elsewhere is seen only if it happens in onProgress or before the call.
      cancelled: (onProgress || signal) && (() => hostError !== undefined || !!(signal && signal.aborted)),
    };
    const tc = now();
    try {
      return fn(M, model.size, host, output);
    } catch (e) {
      if (hostError !== undefined) throw hostError;
      if (signal && signal.aborted) throw abortError(signal);
      throw wrapError(what, e);
    } finally {
      io.call_ms = now() - tc;
    }
  } catch (e) {
    output && output.discard();
    throw e;
  } finally {
    for (const s of sources) s.close();
  }
}

// --- options --------------------------------------------------------------------------------------

// The optimizer's options are the C++ table's (api/options.cpp, M.optionSchema()); these are
// the JS layer's own.
const JS_OPTIONS = ['externalData', 'onProgress', 'signal', 'output', 'spill'];
let schemaNames;

async function optionsJson(options) {
  if (options === undefined || options === null) return '{}';
  if (typeof options !== 'object') throw new TypeError(`onnxfold: options must be an object, not ${describe(options)}`);
  schemaNames ??= JSON.parse((await getModule()).optionSchema()).map((o) => o.name);
  const out = {};
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined || JS_OPTIONS.includes(key)) continue;
    if (!schemaNames.includes(key)) {
      throw new TypeError(`onnxfold: unknown option '${key}' (known: ${[...schemaNames, ...JS_OPTIONS].join(', ')})`);
    }
    out[key] = value;
  }
  // Values become strings; anything but an object (null included) goes to the C++ table as
  // given, which refuses it like any option of the wrong type.
  if (out.extra !== null && typeof out.extra === 'object' && !Array.isArray(out.extra)) {
    out.extra = Object.fromEntries(Object.entries(out.extra).map(([k, v]) => [k, String(v)]));
  }
  return JSON.stringify(out);
}

function checkCallbacks(options) {
  const { onProgress, signal, output, spill } = options || {};
  if (onProgress !== undefined && typeof onProgress !== 'function') {
    throw new TypeError('onnxfold: options.onProgress must be a function');
  }
  if (signal !== undefined && (signal === null || typeof signal.aborted !== 'boolean')) {
    throw new TypeError('onnxfold: options.signal must be an AbortSignal');
  }
  if (output !== undefined && output !== 'bytes' && output !== 'blob') {
    throw new TypeError(`onnxfold: options.output must be 'bytes' or 'blob', not ${JSON.stringify(output)}`);
  }
  if (spill !== undefined) {
    if (spill === null || typeof spill !== 'object' || typeof spill.getFileHandle !== 'function') {
      throw new TypeError('onnxfold: options.spill must be a FileSystemDirectoryHandle (a folder of navigator.storage.getDirectory())');
    }
    if (output === 'bytes') throw new TypeError("onnxfold: options.spill makes Blob results; it cannot be used with output: 'bytes'");
    if (!canSpill()) {
      throw new OnnxfoldError('options.spill needs FileSystemSyncAccessHandle, which browsers have in dedicated Web Workers only: ' +
        'call onnxfold from a Worker, or leave spill out');
    }
  }
  if (signal && signal.aborted) throw abortError(signal);
}

// 'blob' when any input is a Blob (the result can then refer to its slices without reading them).
function outputMode(bytes, options) {
  if (options && options.output) return options.output;
  if (options && options.spill) return 'blob';
  const given = Object.values((options && options.externalData) || {});
  return [bytes, ...given].some(isBlob) ? 'blob' : 'bytes';
}

// The report as the C++ side writes it (api/summary.cpp), with no aliases: each figure has one
// name in C++, JSON and JS. `host`: withCall's stats (the report's `host`).
function parseReport(json, host) {
  const report = JSON.parse(json);
  if (host) report.host = host;
  return report;
}

// --- API ------------------------------------------------------------------------------------------

/**
 * Optimizes an ONNX model. See index.d.ts for the options and the report's shape.
 * @returns {Promise<{model: Uint8Array|Blob, externalData: Record<string, Uint8Array|Blob>, report: object}>}
 */
export async function optimize(bytes, options = {}) {
  const { output, report, stats } = await inMemory('optimize', bytes, options,
    (M, size, json, host) => M.optimize(size, json, host));
  const externalData = {};
  for (const location of output.locations()) if (location !== '') externalData[location] = output.take(location);
  return { model: output.take(''), externalData, report: parseReport(report, stats) };
}

// optimize and splitConstants: options checked before anything is read, outputs assembled in
// memory ('bytes' or 'blob', outputMode).
async function inMemory(what, bytes, options, call) {
  checkCallbacks(options);
  const json = await optionsJson(options);
  const mode = outputMode(bytes, options);
  const spill = options && options.spill ? await openSpill(options.spill, what) : null;
  let output;
  const stats = {};
  try {
    const report = await withCall(what, bytes, {
      options,
      stats,
      makeOutput: (M, sources) => (output = memoryOutput(M, sources, mode, spill)),
    }, (M, size, host) => call(M, size, json, host));
    if (spill) {
      await spill.finish();
      Object.assign(stats, { spill_file: spill.name, spill_bytes: spill.size });
    }
    return { output, report, stats };
  } catch (e) {
    await spill?.remove();
    throw e;
  }
}

/**
 * Node only: optimizes the model file `inputPath` and writes `outputPath`, plus its external data
 * as `<output file name>.data` (and `.data.1`, ... with externalDataFileLimit) beside it. The
 * input's external data is read from its folder range by range, as needed; unchanged weights are
 * copied file to file. No output may be a file the call reads or another output, and nothing is
 * written unless all of it is (writePlan).
 * @returns {Promise<{report: object, outputs: string[]}>}
 */
export async function optimizeFile(inputPath, outputPath, options = {}) {
  if (!isNode) throw new OnnxfoldError('optimizeFile is only available in node; use optimize(bytes)');
  checkCallbacks(options);
  const fs = nodeModule('fs');
  const path = nodeModule('path');
  const inFile = path.resolve(String(inputPath));
  const outFile = path.resolve(String(outputPath));
  const outDir = path.dirname(outFile);
  const { report: reportPath, ...opts } = options ?? {};
  if (reportPath !== undefined && typeof reportPath !== 'string') {
    throw new TypeError('onnxfold: optimizeFile: options.report must be a file path');
  }
  if (opts.externalDataLocation === undefined) opts.externalDataLocation = `${path.basename(outFile)}.data`;
  const json = await optionsJson(opts);
  const real = (p) => { try { return fs.realpathSync(p); } catch { return path.resolve(p); } };
  const plan = writePlan(fs, path, 'optimizeFile');
  plan.addInput(inFile, 'input model');
  plan.addOutput(outFile, 'output');
  const reportFile = reportPath && path.resolve(reportPath);
  if (reportFile) plan.addOutput(reportFile, 'report');
  if (opts.reuseInputData && real(path.dirname(inFile)) !== real(outDir)) {
    throw new OnnxfoldError(`optimizeFile: reuseInputData: the output must be in the input's folder (${path.dirname(inFile)}), where its data files are`);
  }
  const inDir = path.dirname(inFile);
  // Out of the folder: a '..' component (a name that starts with '..' is fine) or absolute.
  const escapes = (rel) => rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel);
  const resolve = (location) => {
    const target = path.resolve(inDir, location);
    // Lexically, and once symlinks are resolved: a link may not lead out of the folder either.
    if (path.isAbsolute(location) || escapes(path.relative(inDir, target)) ||
        escapes(path.relative(real(inDir), real(target)))) {
      throw new OnnxfoldError(`optimizeFile: external-data location '${location}' is outside the model's folder`);
    }
    const source = openFileSource(target, `optimizeFile: external data '${location}'`);
    try {
      plan.addInput(target, "input's external-data file");
    } catch (e) {
      source.close();
      throw e;
    }
    return source;
  };
  const targets = (location) => {
    if (location === '') return outFile;
    const target = path.resolve(outDir, location);
    if (path.isAbsolute(location) || escapes(path.relative(outDir, target))) {
      throw new OnnxfoldError(`optimizeFile: external-data location '${location}' is outside the output's folder`);
    }
    plan.addOutput(target, 'external-data output');
    return target;
  };
  let output;
  const stats = {};
  const report = await withCall('optimizeFile', inFile, {
    resolve,
    options: opts,
    stats,
    makeOutput: (M, sources) => (output = fileOutput(M, sources, fs, path, plan, targets)),
  }, (M, size, host) => {
    const r = M.optimize(size, json, host);
    let extra = [];
    if (reportFile) {
      // Beside its target, so the rename is atomic; committed with the model, after it.
      const tmp = path.join(path.dirname(reportFile), `.${path.basename(reportFile)}.tmp-${process.pid}`);
      fs.writeFileSync(tmp, `${JSON.stringify(JSON.parse(r), null, 2)}\n`, { flag: 'wx' });
      extra = [[tmp, reportFile]];
    }
    try {
      output.commit(extra);
    } catch (e) {
      for (const [tmp] of extra) fs.rmSync(tmp, { force: true });
      throw e;
    }
    return r;
  });
  return { report: parseReport(report, stats), outputs: output.paths() };
}

// --- variants -------------------------------------------------------------------------------------

// The plan (api/variants.cpp: file names and options per dtype) and the caller's options for
// each variant; onProgress sees the whole job, with the variant's dtype.
async function variantJobs(what, options, defaultName) {
  const { dtypes, name, onProgress, accuracy, ...rest } = options ?? {};
  if (dtypes !== undefined && (!Array.isArray(dtypes) || dtypes.some((d) => typeof d !== 'string'))) {
    throw new TypeError(`onnxfold: ${what}: options.dtypes must be an array of strings`);
  }
  if (name !== undefined && typeof name !== 'string') {
    throw new TypeError(`onnxfold: ${what}: options.name must be a string`);
  }
  checkAccuracy(what, accuracy);
  checkCallbacks({ ...rest, onProgress });
  const M = await getModule();
  let plan;
  try {
    plan = JSON.parse(M.variantPlan(name ?? defaultName, JSON.stringify(dtypes ?? [])));
  } catch (e) {
    // The C++ message names the job already ("variants: unknown dtype ...").
    throw e instanceof Error && e.constructor === Error ? new OnnxfoldError(e.message, { cause: e }) : wrapError(what, e);
  }
  return plan.map((v, i) => ({
    ...v,
    options: {
      ...rest,
      ...v.options,
      ...(onProgress && {
        onProgress: (p) => onProgress({ ...p, variant: v.dtype, fraction: (i + p.fraction) / plan.length }),
      }),
    },
  }));
}

const variantRow = (v, report) => ({
  dtype: v.dtype,
  file: v.file,
  bytes: report.output_bytes + (report.external_bytes ?? 0),
  report,
});

// options.accuracy of variants(): { ort, seed, dims }, checked before the wasm module is touched.
function checkAccuracy(what, accuracy) {
  if (accuracy === undefined) return;
  const bad = (m) => new TypeError(`onnxfold: ${what}: options.accuracy${m}`);
  if (accuracy === null || typeof accuracy !== 'object') throw bad(` must be an object { ort, seed, dims }, not ${describe(accuracy)}`);
  const { ort, seed, dims, ...unknown } = accuracy;
  if (Object.keys(unknown).length) throw bad(`: unknown key '${Object.keys(unknown)[0]}' (known: ort, seed, dims)`);
  if (typeof ort?.InferenceSession?.create !== 'function' || typeof ort.Tensor !== 'function') {
    throw bad(".ort must be an ONNX Runtime module (import * as ort from 'onnxruntime-node' or 'onnxruntime-web')");
  }
  if (seed !== undefined && (!Number.isSafeInteger(seed) || seed < 0)) throw bad(`.seed must be a non-negative integer, not ${describe(seed)}`);
  if (dims !== undefined && (dims === null || typeof dims !== 'object' || Array.isArray(dims) ||
      Object.values(dims).some((d) => !Number.isSafeInteger(d) || d < 1))) {
    throw bad('.dims must map symbolic dimension names to sizes >= 1, e.g. { batch: 1, sequence_length: 8 }');
  }
}

// What options.accuracy asks: the original run once on seeded inputs (its outputs kept), then
// each variant on the same inputs; a row's `accuracy` says why when a model cannot be loaded or run.
async function accuracyCheck(options, original) {
  const acc = options?.accuracy;
  if (!acc) return null;
  const { ort } = acc;
  let reference;
  try {
    reference = await runReference(ort, original, acc);
  } catch (e) {
    const error = `the original model ${e.message}`;
    return { of: async () => ({ error }) };
  }
  return {
    of: async (model, file) => {
      try {
        return await accuracyOf(ort, reference, model);
      } catch (e) {
        return { error: `${file} ${e.message}` };
      }
    },
  };
}

/**
 * The variants transformers.js loads (model.onnx, model_fp16.onnx, ...; see variantPlan in
 * api/variants.cpp), each made by optimize() with the variant's options over the caller's.
 * @returns {Promise<{files: Record<string, Uint8Array|Blob>, variants: object[]}>}
 */
export async function variants(bytes, options = {}) {
  const jobs = await variantJobs('variants', options, 'model');
  const accuracy = await accuracyCheck(options, typeof bytes === 'string'
    ? { path: bytes } : { bytes, externalData: options.externalData });
  const files = {};
  const rows = [];
  for (const v of jobs) {
    const { model, externalData, report } = await optimize(bytes, v.options);
    files[v.file] = model;
    Object.assign(files, externalData);
    const row = variantRow(v, report);
    if (accuracy) row.accuracy = await accuracy.of({ bytes: model, externalData }, v.file);
    rows.push(row);
  }
  return { files, variants: rows };
}

/**
 * Node only: writes the variants of the model file `inputPath` into the folder `outDir` (made if
 * missing), each with optimizeFile (so each atomically; a failed variant leaves the ones before it).
 * @returns {Promise<{variants: object[], outputs: string[]}>}
 */
export async function variantsFile(inputPath, outDir, options = {}) {
  if (!isNode) throw new OnnxfoldError('variantsFile is only available in node; use variants(bytes)');
  const path = nodeModule('path');
  const stem = path.basename(String(inputPath)).replace(/\.onnx$/, '');
  const jobs = await variantJobs('variantsFile', options, stem);
  nodeModule('fs').mkdirSync(String(outDir), { recursive: true });
  const accuracy = await accuracyCheck(options, { path: inputPath });
  const rows = [];
  const outputs = [];
  for (const v of jobs) {
    const file = path.join(String(outDir), v.file);
    let result;
    try {
      result = await optimizeFile(inputPath, file, v.options);
    } catch (e) {
      e.message = `variant ${v.dtype}: ${e.message}`;
      throw e;
    }
    const row = variantRow(v, result.report);
    if (accuracy) row.accuracy = await accuracy.of({ path: file }, v.file);
    rows.push(row);
    outputs.push(...result.outputs);
  }
  return { variants: rows, outputs };
}

/** Summary of a model (the CLI's `info`): ir_version, opsets, nodes, op_histogram, inputs, ... */
export async function inspect(bytes, options = {}) {
  const json = await withCall('inspect', bytes, { options }, (M, size, host) => M.inspect(size, host));
  return JSON.parse(json);
}

/** The same summary as the CLI's `info` prints it (ModelSummary::toText). */
export async function inspectText(bytes, options = {}) {
  return withCall('inspectText', bytes, { options }, (M, size, host) => M.inspectText(size, host));
}

/**
 * Checks a model against ONNX's rules (what optimize checks before any pass).
 * @returns {Promise<{valid: boolean, error?: string}>} `error` names the node and field.
 */
export async function validate(bytes, options = {}) {
  const json = await withCall('validate', bytes, { options }, (M, size, host) => M.validate(size, host));
  return JSON.parse(json);
}

/** The model's module hierarchy, recovered from node names (see index.d.ts ModuleTree). */
export async function moduleTree(bytes, options = {}) {
  const json = await withCall('moduleTree', bytes, { options }, (M, size, host) => M.moduleTree(size, host));
  return JSON.parse(json);
}

/**
 * The main graph for display (see index.d.ts GraphView): nodes, value types, initializers,
 * module paths; above options.nodeLimit (default 5000) nodes, or with modulesOnly, only the
 * module summary.
 */
export async function graph(bytes, options = {}) {
  const { nodeLimit, modulesOnly, ...rest } = options ?? {};
  const json = JSON.stringify({
    ...(nodeLimit === undefined ? {} : { nodeLimit }),
    ...(modulesOnly === undefined ? {} : { modulesOnly }),
  });
  const out = await withCall('graph', bytes, { options: rest }, (M, size, host) => {
    return M.graph(size, json, host);
  });
  return JSON.parse(out);
}

/** Splits a model into a constant-preparation model and the main model. */
export async function splitConstants(bytes, options = {}) {
  const { output, report } = await inMemory('splitConstants', bytes, options,
    (M, size, json, host) => M.splitConstants(size, json, host));
  return { prep: output.take('prep'), main: output.take('main'), report: JSON.parse(report) };
}

/** The options optimize takes, as the C++ side defines them: [{ name, flag, type, help }]. */
export async function optionSchema() {
  const M = await getModule();
  return JSON.parse(M.optionSchema());
}

/** The variants variants() can make: [{ dtype, file (for the name 'model'), help }]. */
export async function variantSchema() {
  const M = await getModule();
  return JSON.parse(M.variantPlan('model', '[]')).map(({ dtype, file, help }) => ({ dtype, file, help }));
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

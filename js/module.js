// Loading the wasm module: once per process (a cached promise, dropped after a failed load or a
// trap), from `env` (a URL, bytes or a compiled module) or beside the package; node built-ins
// reached without static imports, so browser bundles never see them.
import { OnnxfoldError } from './errors.js';

export const isNode = typeof process === 'object' && !!process.versions && !!process.versions.node;

/**
 * Where the .wasm comes from; set before the first call. `wasmUrl` (string or URL) overrides the
 * default location beside this package (for bundlers that do not follow
 * `new URL(..., import.meta.url)`, e.g. esbuild with `--loader:.wasm=file`); `wasmBinary`
 * (ArrayBuffer/Uint8Array) or `wasmModule` (a compiled WebAssembly.Module) skip fetching.
 */
export const env = { wasmUrl: undefined, wasmBinary: undefined, wasmModule: undefined };

let modulePromise = null;

// A node built-in without a static import, so browser bundles never see `fs` or `path`.
export function nodeModule(name) {
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
  const url = env.wasmUrl
    ? new URL(String(env.wasmUrl), isNode ? undefined : globalThis.location?.href)
    : defaultWasmUrl();
  if (isNode && url.protocol === 'file:') {
    const fs = nodeModule('fs');
    return WebAssembly.compile(fs.readFileSync(url));
  }
  const response = await fetch(url);
  if (!response.ok) throw new OnnxfoldError(`cannot load ${url.href}: HTTP ${response.status}`);
  if (
    WebAssembly.compileStreaming &&
    (response.headers.get('content-type') || '').startsWith('application/wasm')
  ) {
    return WebAssembly.compileStreaming(response);
  }
  return WebAssembly.compile(await response.arrayBuffer());
}

// What loading the module took (once per process): compiling onnxfold.wasm (reading it
// included) and instantiating it (the glue's start-up included).
export const moduleLoad = { compile_ms: 0, instantiate_ms: 0 };
export const now = () => performance.now();

export function getModule() {
  if (!modulePromise) {
    modulePromise = (async () => {
      // Loaded on first use (not a static import), so importing the package is cheap and a
      // missing build surfaces as a rejected call with a clear message.
      let createOnnxfold;
      try {
        ({ default: createOnnxfold } = await import('../dist/onnxfold.mjs'));
      } catch (e) {
        throw new OnnxfoldError(
          `cannot load the wasm glue dist/onnxfold.mjs (is the wasm build done? ` +
            `cmake --preset wasm && cmake --build --preset wasm --target onnxfold_wasm): ${e.message}`,
          { cause: e },
        );
      }
      let wasm;
      const t0 = now();
      try {
        wasm = await compileWasm();
        moduleLoad.compile_ms = now() - t0;
      } catch (e) {
        throw e instanceof OnnxfoldError
          ? e
          : new OnnxfoldError(`cannot load onnxfold.wasm: ${e.message}`, { cause: e });
      }
      let failed;
      const failure = new Promise((_, reject) => {
        failed = reject;
      });
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
          printErr: (text) => {
            if (isNode) process.stderr.write(`onnxfold: ${text}\n`);
            else console.warn(text);
          },
        }),
        failure,
      ]);
      moduleLoad.instantiate_ms = now() - t1;
      return M;
    })();
    modulePromise.catch(() => {
      modulePromise = null;
    }); // a failed load may be retried
  }
  return modulePromise;
}

// A wasm trap (RuntimeError) or a stray exception can leave the instance in an unknown state:
// drop it, so the next call starts from a fresh one. Errors thrown by the bindings are ordinary.
export function wrapError(what, e) {
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

// Web Worker: runs the onnxfold package (wasm) off the page's main thread, so the page stays
// responsive during a long optimization, and so the package can read the user's Files range by
// range with FileReaderSync (weights never enter the wasm heap unless a pass changes them). Cancelling terminates this worker (a synchronous wasm
// call cannot see messages), and the page starts a fresh one.
//
// Protocol, page -> worker: { id, op, args }
//   op: 'info'          -> { version, available, default, variants, options (optionSchema()) }
//       'inspect'       args: { bytes, externalData }            -> summary object
//       'optimize'      args: { bytes, options, externalData, tree, spill } -> { model, externalData, report, tree }
//       'moduleTree'    args: { bytes }                          -> tree object
//       'splitConstants' args: { bytes, options }                -> { prep, main, report }
//       'variants'      args: { bytes, options, externalData, spill } -> { files, variants }
//   spill: { tab, kind }: the result's computed bytes go to that folder of the origin private
//   file system (result-store.js), not memory.
//       'graph'         args: { bytes, externalData, options }   -> graph view object (graph-view.js)
// worker -> page: { id, type: 'progress', progress } | { id, type: 'result', value }
//               | { id, type: 'error', error: { name, message } }
import * as onnxfold from 'onnxfold';
import { freshFolder } from './result-store.js';

// The bundle (build/web/worker.js) sits next to onnxfold.wasm; the package's default location
// (../dist/onnxfold.wasm relative to the package) does not exist once bundled.
onnxfold.env.wasmUrl = new URL('./onnxfold.wasm', import.meta.url).href;

const post = (msg, transfer = []) => self.postMessage(msg, transfer);

// Progress callbacks can come fast (once per pass and round); posting all of them is cheap but
// the page only needs a few per animation frame.
function progressPoster(id) {
  let last = 0;
  return (p) => {
    const now = performance.now();
    if (now - last < 30 && p.fraction < 1) return;
    last = now;
    post({ id, type: 'progress', progress: { stage: p.stage, pass: p.pass, fraction: p.fraction } });
  };
}

async function moduleTreeOrNull(bytes) {
  if (typeof onnxfold.moduleTree !== 'function') return null;
  try {
    return await onnxfold.moduleTree(bytes);
  } catch (e) {
    // The tree is a bonus view: a wasm build without it shows none, and a model it cannot
    // describe still optimized fine (the page says why there is no tree).
    if (/not available in this build/.test(e.message)) return null;
    return { error: e.message };
  }
}

// Uint8Array results move to the page without a copy; Blob results (from File inputs: parts
// that are slices of the user's files) are passed by reference anyway.
const transferable = (results) => [
  ...new Set(results.filter((r) => r instanceof Uint8Array).map((r) => r.buffer)),
];

const ops = {
  async info() {
    const [version, passes, variants, options] = await Promise.all([
      onnxfold.version(),
      onnxfold.passes(),
      onnxfold.variantSchema(),
      onnxfold.optionSchema(),
    ]);
    return { value: { version, available: passes.available, default: passes.default, variants, options } };
  },

  async inspect({ bytes, externalData }) {
    return { value: await onnxfold.inspect(bytes, { externalData }) };
  },

  async optimize({ bytes, options, externalData, tree, spill }, id) {
    const started = performance.now();
    const out = await onnxfold.optimize(bytes, {
      ...options,
      externalData,
      spill: await freshFolder(spill),
      onProgress: progressPoster(id),
    });
    const millis = performance.now() - started;
    const value = { model: out.model, externalData: out.externalData ?? {}, report: out.report, millis };
    if (tree) {
      post({ id, type: 'progress', progress: { stage: 'module tree', pass: '', fraction: 1 } });
      value.tree = await moduleTreeOrNull(out.model);
    }
    return { value, transfer: transferable([out.model, ...Object.values(value.externalData)]) };
  },

  async moduleTree({ bytes }) {
    return { value: await onnxfold.moduleTree(bytes) };
  },

  async graph({ bytes, externalData, options }) {
    return { value: await onnxfold.graph(bytes, { ...options, externalData }) };
  },

  async variants({ bytes, options, externalData, spill }, id) {
    const out = await onnxfold.variants(bytes, {
      ...options,
      externalData,
      spill: await freshFolder(spill),
      onProgress: progressPoster(id),
    });
    return { value: out, transfer: transferable(Object.values(out.files)) };
  },

  async splitConstants({ bytes, options }) {
    const out = await onnxfold.splitConstants(bytes, options);
    return { value: out, transfer: transferable([out.prep, out.main]) };
  },
};

self.onmessage = async ({ data: { id, op, args } }) => {
  try {
    if (!Object.hasOwn(ops, op)) throw new Error(`worker: unknown operation '${op}'`);
    const { value, transfer } = await ops[op](args ?? {}, id);
    post({ id, type: 'result', value }, transfer);
  } catch (e) {
    const error =
      e instanceof Error ? { name: e.name, message: e.message } : { name: 'Error', message: String(e) };
    post({ id, type: 'error', error });
  }
};

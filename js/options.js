// Options: the one place the API's options objects are parsed. The optimizer's own (the C++
// table, api/options.cpp) are checked by name and sent as JSON; the JS layer's own (JS_OPTIONS),
// and those of one function (optimizeFile's report, variants' dtypes, name and accuracy, graph's
// nodeLimit and modulesOnly), are checked here, before anything is read.
import { OnnxfoldError, abortError, describe } from './errors.js';
import { getModule } from './module.js';
import { canSpill } from './outputs.js';

// The optimizer's options are the C++ table's (api/options.cpp, M.optionSchema()); these are
// the JS layer's own.
const JS_OPTIONS = ['externalData', 'onProgress', 'signal', 'output', 'spill'];
let schemaNames;

// The JSON of the optimizer's options for the bindings: each key must be an option of the C++
// table or one of JS_OPTIONS (left out); the values are checked by the C++ side.
export async function optionsJson(options) {
  if (options === undefined || options === null) return '{}';
  if (typeof options !== 'object')
    throw new TypeError(`onnxfold: options must be an object, not ${describe(options)}`);
  schemaNames ??= JSON.parse((await getModule()).optionSchema()).map((o) => o.name);
  const out = {};
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined || JS_OPTIONS.includes(key)) continue;
    if (!schemaNames.includes(key)) {
      throw new TypeError(
        `onnxfold: unknown option '${key}' (known: ${[...schemaNames, ...JS_OPTIONS].join(', ')})`,
      );
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

// optimize's and splitConstants' options: the JS layer's own checked, then the JSON of the rest.
export async function optimizeOptions(options) {
  checkCallbacks(options);
  return optionsJson(options);
}

// The JS layer's own options (onProgress, signal, output, spill), checked before any call; an
// already aborted signal rejects here.
export function checkCallbacks(options) {
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
      throw new TypeError(
        'onnxfold: options.spill must be a FileSystemDirectoryHandle (a folder of navigator.storage.getDirectory())',
      );
    }
    if (output === 'bytes')
      throw new TypeError(
        "onnxfold: options.spill makes Blob results; it cannot be used with output: 'bytes'",
      );
    if (!canSpill()) {
      throw new OnnxfoldError(
        'options.spill needs FileSystemSyncAccessHandle, which browsers have in dedicated Web Workers only: ' +
          'call onnxfold from a Worker, or leave spill out',
      );
    }
  }
  if (signal && signal.aborted) throw abortError(signal);
}

// options.accuracy of variants(): { ort, seed, dims }, checked before the wasm module is touched.
function checkAccuracy(what, accuracy) {
  if (accuracy === undefined) return;
  const bad = (m) => new TypeError(`onnxfold: ${what}: options.accuracy${m}`);
  if (accuracy === null || typeof accuracy !== 'object')
    throw bad(` must be an object { ort, seed, dims }, not ${describe(accuracy)}`);
  const { ort, seed, dims, ...unknown } = accuracy;
  if (Object.keys(unknown).length)
    throw bad(`: unknown key '${Object.keys(unknown)[0]}' (known: ort, seed, dims)`);
  if (typeof ort?.InferenceSession?.create !== 'function' || typeof ort.Tensor !== 'function') {
    throw bad(
      ".ort must be an ONNX Runtime module (import * as ort from 'onnxruntime-node' or 'onnxruntime-web')",
    );
  }
  if (seed !== undefined && (!Number.isSafeInteger(seed) || seed < 0))
    throw bad(`.seed must be a non-negative integer, not ${describe(seed)}`);
  if (
    dims !== undefined &&
    (dims === null ||
      typeof dims !== 'object' ||
      Array.isArray(dims) ||
      Object.values(dims).some((d) => !Number.isSafeInteger(d) || d < 1))
  ) {
    throw bad('.dims must map symbolic dimension names to sizes >= 1, e.g. { batch: 1, sequence_length: 8 }');
  }
}

// optimizeFile's own option, report (a file path), taken out of the others, and the name of the
// external-data file (`dataLocation`, named after the output) unless externalDataLocation is given.
export function fileOptions(options, dataLocation) {
  const { report: reportPath, ...opts } = options ?? {};
  if (reportPath !== undefined && typeof reportPath !== 'string') {
    throw new TypeError('onnxfold: optimizeFile: options.report must be a file path');
  }
  if (opts.externalDataLocation === undefined) opts.externalDataLocation = dataLocation;
  return { reportPath, opts };
}

// variants' and variantsFile's own options (dtypes, name, accuracy) checked and taken out; `rest`
// goes to each variant's optimize call, its callbacks checked here, before the wasm module loads.
export function variantOptions(what, options) {
  const { dtypes, name, onProgress, accuracy, ...rest } = options ?? {};
  if (dtypes !== undefined && (!Array.isArray(dtypes) || dtypes.some((d) => typeof d !== 'string'))) {
    throw new TypeError(`onnxfold: ${what}: options.dtypes must be an array of strings`);
  }
  if (name !== undefined && typeof name !== 'string') {
    throw new TypeError(`onnxfold: ${what}: options.name must be a string`);
  }
  checkAccuracy(what, accuracy);
  checkCallbacks({ ...rest, onProgress });
  return { dtypes, name, onProgress, rest };
}

// graph's own options (the C++ table's graph part, M.graphOptionSchema(): nodeLimit,
// modulesOnly) as the JSON the bindings take, their values checked by the C++ side; `rest`
// gives the call its external data and signal. Any other name is refused here.
let graphNames;
export async function graphOptions(options) {
  if (options !== undefined && options !== null && typeof options !== 'object')
    throw new TypeError(`onnxfold: graph: options must be an object, not ${describe(options)}`);
  graphNames ??= JSON.parse((await getModule()).graphOptionSchema()).map((o) => o.name);
  const own = {};
  const rest = {};
  for (const [key, value] of Object.entries(options ?? {})) {
    if (value === undefined) continue;
    if (graphNames.includes(key)) own[key] = value;
    else if (JS_OPTIONS.includes(key)) rest[key] = value;
    else {
      throw new TypeError(
        `onnxfold: graph: unknown option '${key}' (known: ${[...graphNames, ...JS_OPTIONS].join(', ')})`,
      );
    }
  }
  checkCallbacks(rest);
  return { json: JSON.stringify(own), rest };
}

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
//
// The modules, by job: this file is the public API and its argument checks; module.js loads the
// wasm module; sources.js opens what a call reads; outputs.js assembles what it writes;
// host.js is one call's host object (wasm-bindings/host.h); options.js parses and checks the
// options objects (one parser: the C++ table's options and each function's own); errors.js
// the error types.
import { accuracyOf, runReference } from './accuracy.js';
import { OnnxfoldError } from './errors.js';
import { getModule, isNode, nodeModule, wrapError } from './module.js';
import { openFileSource } from './sources.js';
import { fileOutput, memoryOutput, openSpill, outputMode, writePlan } from './outputs.js';
import { withCall } from './host.js';
import {
  checkCallbacks,
  fileOptions,
  graphOptions,
  optimizeOptions,
  optionsJson,
  variantOptions,
} from './options.js';

export { env } from './module.js';
export { OnnxfoldError } from './errors.js';

/** Loads and instantiates the wasm module now (otherwise the first call does). */
export async function init() {
  await getModule();
}

// The report as the C++ side writes it (api/summary.cpp), with no aliases: each figure has one
// name in C++, JSON and JS. `host`: withCall's stats (the report's `host`).
function parseReport(json, host) {
  return withHost(JSON.parse(json), host);
}

function withHost(report, host) {
  if (host) report.host = host;
  return report;
}

// --- API ------------------------------------------------------------------------------------------

/**
 * Optimizes an ONNX model. See index.d.ts for the options and the report's shape.
 * @returns {Promise<{model: Uint8Array|Blob, externalData: Record<string, Uint8Array|Blob>, report: object}>}
 */
export async function optimize(bytes, options = {}) {
  const { output, report, stats } = await inMemory('optimize', bytes, options, (M, size, json, host) =>
    M.optimize(size, json, host),
  );
  const externalData = {};
  for (const location of output.locations())
    if (location !== '') externalData[location] = output.take(location);
  return { model: output.take(''), externalData, report: parseReport(report, stats) };
}

// optimize and splitConstants: options checked before anything is read, outputs assembled in
// memory ('bytes' or 'blob', outputMode).
async function inMemory(what, bytes, options, call) {
  const json = await optimizeOptions(options);
  const mode = outputMode(bytes, options);
  const spill = options && options.spill ? await openSpill(options.spill, what) : null;
  let output;
  const stats = {};
  try {
    const report = await withCall(
      what,
      bytes,
      {
        options,
        stats,
        makeOutput: (M, sources) => (output = memoryOutput(M, sources, mode, spill)),
      },
      (M, size, host) => call(M, size, json, host),
    );
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

// A file job's locations: `resolve` opens the input's external data (inside its folder), `targets`
// names an output location's file inside `outDir` and adds it to the plan; `named(location)` gives
// the file of a location the caller added to the plan itself (the models).
function fileLocations(what, fs, path, plan, inFile, outDir, named) {
  const real = (p) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  const inDir = path.dirname(inFile);
  // Out of the folder: a '..' component (a name that starts with '..' is fine) or absolute.
  const escapes = (rel) => rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel);
  const resolve = (location) => {
    const target = path.resolve(inDir, location);
    // Lexically, and once symlinks are resolved: a link may not lead out of the folder either.
    if (
      path.isAbsolute(location) ||
      escapes(path.relative(inDir, target)) ||
      escapes(path.relative(real(inDir), real(target)))
    ) {
      throw new OnnxfoldError(`${what}: external-data location '${location}' is outside the model's folder`);
    }
    const source = openFileSource(target, `${what}: external data '${location}'`);
    try {
      plan.addInput(target, "input's external-data file");
    } catch (e) {
      source.close();
      throw e;
    }
    return source;
  };
  const targets = (location) => {
    const file = named(location);
    if (file !== undefined) return file;
    const target = path.resolve(outDir, location);
    if (path.isAbsolute(location) || escapes(path.relative(outDir, target))) {
      throw new OnnxfoldError(`${what}: external-data location '${location}' is outside the output's folder`);
    }
    plan.addOutput(target, 'external-data output');
    return target;
  };
  return { real, resolve, targets };
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
  const { reportPath, opts } = fileOptions(options, `${path.basename(outFile)}.data`);
  const json = await optionsJson(opts);
  const plan = writePlan(fs, path, 'optimizeFile');
  const { real, resolve, targets } = fileLocations(
    'optimizeFile',
    fs,
    path,
    plan,
    inFile,
    outDir,
    (location) => (location === '' ? outFile : undefined),
  );
  plan.addInput(inFile, 'input model');
  plan.addOutput(outFile, 'output');
  const reportFile = reportPath && path.resolve(reportPath);
  if (reportFile) plan.addOutput(reportFile, 'report');
  if (opts.reuseInputData && real(path.dirname(inFile)) !== real(outDir)) {
    throw new OnnxfoldError(
      `optimizeFile: reuseInputData: the output must be in the input's folder (${path.dirname(inFile)}), where its data files are`,
    );
  }
  let output;
  const stats = {};
  const report = await withCall(
    'optimizeFile',
    inFile,
    {
      resolve,
      options: opts,
      stats,
      makeOutput: (M, sources) => (output = fileOutput(M, sources, fs, path, plan, targets)),
    },
    (M, size, host) => {
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
    },
  );
  return { report: parseReport(report, stats), outputs: output.paths() };
}

// --- variants -------------------------------------------------------------------------------------

// The plan (api/variants.cpp: file names and options per dtype) and the caller's options, which
// all variants share (their own are in the plan).
async function variantJob(what, options, defaultName) {
  const { dtypes, name, onProgress, rest } = variantOptions(what, options);
  const M = await getModule();
  let plan;
  try {
    plan = JSON.parse(M.variantPlan(name ?? defaultName, JSON.stringify(dtypes ?? [])));
  } catch (e) {
    // The C++ message names the job already ("variants: unknown dtype ...").
    throw e instanceof Error && e.constructor === Error
      ? new OnnxfoldError(e.message, { cause: e })
      : wrapError(what, e);
  }
  return { plan, planJson: JSON.stringify(plan), options: { ...rest, onProgress } };
}

// A variants call's rows from its reports (JSON, in plan order), each with the call's host stats
// and, when options.accuracy asks, its accuracy on `model(variant, report)`.
async function variantRows(plan, json, stats, accuracy, model) {
  const reports = JSON.parse(json);
  const rows = [];
  for (const [i, v] of plan.entries()) {
    const report = withHost(reports[i], stats);
    const row = {
      dtype: v.dtype,
      file: v.file,
      bytes: report.output_bytes + (report.external_bytes ?? 0),
      report,
    };
    if (accuracy) row.accuracy = await accuracy.of(model(v, report), v.file);
    rows.push(row);
  }
  return rows;
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
 * api/variants.cpp), from one read of the model and one run of the float32 pipeline: each variant
 * is a copy of its result through its own stages (its bytes are what optimize() with the
 * variant's options over the caller's gives).
 * @returns {Promise<{files: Record<string, Uint8Array|Blob>, variants: object[]}>}
 */
export async function variants(bytes, options = {}) {
  const job = await variantJob('variants', options, 'model');
  const accuracy = await accuracyCheck(
    options,
    typeof bytes === 'string' ? { path: bytes } : { bytes, externalData: options.externalData },
  );
  const { output, report, stats } = await inMemory('variants', bytes, job.options, (M, size, json, host) =>
    M.variants(size, job.planJson, json, host),
  );
  const files = {};
  for (const location of output.locations()) files[location] = output.take(location);
  const rows = await variantRows(job.plan, report, stats, accuracy, (v, r) => ({
    bytes: files[v.file],
    externalData: Object.fromEntries(r.external_files.map((f) => [f, files[f]])),
  }));
  return { files, variants: rows };
}

/**
 * Node only: writes the variants of the model file `inputPath` into the folder `outDir` (made if
 * missing) from one read, as variants() makes them: every file, or none if any variant fails.
 * @returns {Promise<{variants: object[], outputs: string[]}>}
 */
export async function variantsFile(inputPath, outDir, options = {}) {
  if (!isNode) throw new OnnxfoldError('variantsFile is only available in node; use variants(bytes)');
  const fs = nodeModule('fs');
  const path = nodeModule('path');
  const stem = path.basename(String(inputPath)).replace(/\.onnx$/, '');
  const job = await variantJob('variantsFile', options, stem);
  const json = await optionsJson(job.options);
  const inFile = path.resolve(String(inputPath));
  const dir = path.resolve(String(outDir));
  fs.mkdirSync(dir, { recursive: true });
  const plan = writePlan(fs, path, 'variantsFile');
  const models = new Map(job.plan.map((v) => [v.file, path.join(dir, v.file)]));
  const { real, resolve, targets } = fileLocations('variantsFile', fs, path, plan, inFile, dir, (location) =>
    models.get(location),
  );
  plan.addInput(inFile, 'input model');
  // Every model first: one named like the input, or twice, fails before any work.
  for (const v of job.plan) plan.addOutput(models.get(v.file), `variant ${v.dtype} output`);
  if (job.options.reuseInputData && real(path.dirname(inFile)) !== real(dir)) {
    throw new OnnxfoldError(
      `variantsFile: reuseInputData: the variants must be in the input's folder (${path.dirname(inFile)}), where its data files are`,
    );
  }
  const accuracy = await accuracyCheck(options, { path: inputPath });
  let output;
  const stats = {};
  const report = await withCall(
    'variantsFile',
    inFile,
    {
      resolve,
      options: job.options,
      stats,
      makeOutput: (M, sources) => (output = fileOutput(M, sources, fs, path, plan, targets)),
    },
    (M, size, host) => {
      const r = M.variants(size, job.planJson, json, host);
      output.commit([], (location) => models.has(location));
      return r;
    },
  );
  const rows = await variantRows(job.plan, report, stats, accuracy, (v) => ({ path: models.get(v.file) }));
  return { variants: rows, outputs: output.paths() };
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
  const { json, rest } = await graphOptions(options);
  const out = await withCall('graph', bytes, { options: rest }, (M, size, host) => {
    return M.graph(size, json, host);
  });
  return JSON.parse(out);
}

/** Splits a model into a constant-preparation model and the main model. */
export async function splitConstants(bytes, options = {}) {
  const { output, report } = await inMemory('splitConstants', bytes, options, (M, size, json, host) =>
    M.splitConstants(size, json, host),
  );
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

/** The options graph() takes, as the C++ side defines them: [{ name, flag, type, help, default }]. */
export async function graphOptionSchema() {
  const M = await getModule();
  return JSON.parse(M.graphOptionSchema());
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

// A typed use of the npm package, type-checked by tests/node/types.test.mjs (tsc --noEmit
// --strict): the declarations in js/index.d.ts must describe what the package returns, and
// reject what it refuses. Never run, only checked.
import {
  OnnxfoldError,
  graph,
  optimize,
  optionSchema,
  passes,
  splitConstants,
  validate,
  variants,
  type GraphView,
  type OptimizeResult,
  type Report,
  type SplitReport,
} from '../../js/index.js';
import { compareTensors, type TensorComparison } from '../../js/accuracy.js';

export async function example(bytes: Uint8Array): Promise<number> {
  const check = await validate(bytes);
  if (!check.valid) throw new OnnxfoldError(check.error ?? 'invalid');

  const result: OptimizeResult = await optimize(bytes, {
    sizeBudget: 4096,
    quant: 'qoperator',
    externalDataThreshold: 1 << 20,
    onProgress: (p) => console.log(p.stage, p.pass, p.fraction.toFixed(2)),
    extra: { 'outline-functions.depth': 1 },
  });
  const report: Report = result.report;
  let changed = 0;
  for (const run of report.passes) {
    if (run.changed) changed += run.nodes[0] - run.nodes[1];
  }
  const model: Uint8Array | Blob = result.model;

  const split = await splitConstants(bytes, { sizeBudget: 1 << 16, memoryLimit: 1 << 30 });
  const sr: SplitReport = split.report;
  const names: string[] = sr.values;

  const view: GraphView = await graph(result.model, { nodeLimit: 2000 });
  const ops: string[] = (view.nodes ?? []).map((n) => `${n.op} in ${n.module}`);
  const biggest = view.level === 'modules' ? view.modules[0].param_bytes : ops.length;

  const specs = await optionSchema();
  const forSplit = specs.filter((s) => s.splitConstants).map((s) => s.name);
  const { available } = await passes();

  // @ts-expect-error: quant modes are a closed set
  await optimize(bytes, { quant: 'int4' });
  // @ts-expect-error: splitConstants takes no passes
  await splitConstants(bytes, { passes: ['dce'] });
  // @ts-expect-error: budgets are numbers
  await optimize(bytes, { sizeBudget: '4k' });

  // In a Worker: computed bytes to a file of the origin private file system.
  const folder: FileSystemDirectoryHandle = await navigator.storage.getDirectory();
  const spilled = await optimize(bytes, { spill: folder });
  const spillBytes: number = spilled.report.host?.spill_bytes ?? 0;
  // @ts-expect-error: spill is a folder handle, not a path
  await optimize(bytes, { spill: '/tmp' });

  // Each variant against the input, with the caller's runtime (any ONNX Runtime module).
  const ort = { InferenceSession: { create: async () => ({}) }, Tensor: class {} };
  const made = await variants(bytes, { dtypes: ['fp32', 'q4'], accuracy: { ort, seed: 2, dims: { batch: 1 } } });
  const acc = made.variants[0].accuracy;
  const cosine: number = acc && !('error' in acc) ? Math.min(...acc.outputs.map((o) => o.cosine ?? 1)) : 0;
  // @ts-expect-error: the seed is a number
  await variants(bytes, { accuracy: { ort, seed: '2' } });
  const same: TensorComparison = compareTensors('y', { type: 'float32', dims: [1, 2], data: new Float32Array(2) },
    { type: 'float32', dims: [1, 2], data: new Float32Array(2) });

  return changed + names.length + forSplit.length + available.length + (model instanceof Blob ? 1 : 0) +
    report.after.nodes + biggest + spillBytes + cosine + (same.argmax ?? 0);
}

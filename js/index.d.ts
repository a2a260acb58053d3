// Types for the onnxfold npm package (js/index.js). All functions load the wasm module lazily on
// first use and reject with an Error (OnnxfoldError for problems with the model or options,
// TypeError for wrong argument types, an "AbortError" when `signal` aborts) that says what is
// wrong and where; a failed call leaves the module usable.

/**
 * A model or external-data file: bytes in memory, a Blob/File, or (node only) a file path.
 * Only the model's graph goes into the WebAssembly heap; weights (external-data files, and
 * raw_data of 16 KiB or more in the .onnx itself) are read range by range when a pass needs values (FileReaderSync in a Worker, fs.readSync in node). A Blob
 * outside a Worker (a page's main thread, node) is first read into JS memory, not the heap.
 */
export type Bytes = Uint8Array | ArrayBuffer | ArrayBufferView | Blob | string;

/** What a result file is: bytes in memory, or a Blob whose parts are slices of the inputs. */
export type Output = Uint8Array | Blob;

/** Quantization finalize modes (Options.quant). '' = off. */
export type QuantMode = '' | 'qoperator' | 'integer' | 'qdq-clean';

/** Weight-only quantization modes (Options.quantize). '' = off. */
export type QuantizeMode = '' | 'int4' | 'int8' | 'q8';
/** How quantized weights are written (Options.quantFormat). */
export type QuantFormat = 'qdq' | 'ort';

export interface Progress {
  /** 'read', 'optimize' or 'write'. */
  stage: 'read' | 'optimize' | 'write';
  /** The pass about to run (stage 'optimize'), else ''. */
  pass: string;
  /** 0..1 over the whole job; never decreases. */
  fraction: number;
  /** variants(): the dtype of the variant being made. */
  variant?: string;
}

export interface OptimizeOptions {
  /** Pass names, run in order to a fixpoint. Default: the default pipeline (see passes()). */
  passes?: string[];
  /** Graph inputs (names or globs like "past_*") that freezing keeps as inputs. */
  preserve?: string[];
  /** Largest growth in bytes one constant fold may add to the model. Default 1024. */
  sizeBudget?: number;
  /** The same for constructors (ConstantOfShape, Expand, Tile, Range, EyeLike). Default 64. */
  constructorBudget?: number;
  /**
   * The growth budget, in percent of the input's weight bytes: folds over their own budget (a
   * rotary table, a transposed weight) are still taken while the model grows by no more than
   * this in all (identical results count once). Default 5; 0 keeps every fold to its own budget.
   */
  growthBudget?: number;
  /** Fold DequantizeLinear of integer weights too (normally kept for quantization). */
  foldDequantizeWeights?: boolean;
  /** Quantization finalize mode. Default '' (off). */
  quant?: QuantMode;
  /**
   * Weight-only quantization, after the pipeline (and before `float16`): 'int4' quantizes
   * MatMul weights (constant 2-D float32 B) in blocks of `quantBlockSize` along K (transformers.js
   * "q4"); 'int8' quantizes MatMul, Gemm and Conv weights per output channel; 'q8'
   * (transformers.js "quantized") makes MatMul DynamicQuantizeLinear + MatMulInteger with uint8
   * weights per column and a float rescale (Conv stays float). The report's
   * `quantize-weights` pass notes each weight's relative RMS error. Default '' (off).
   */
  quantize?: QuantizeMode;
  /**
   * 'qdq' (default): DequantizeLinear of int4/int8 constants feeding the op (int4 needs a model
   * of opset 21). 'ort': int4 as com.microsoft MatMulNBits (ONNX Runtime only).
   */
  quantFormat?: QuantFormat;
  /** int4 block length along K: a power of two from 16 to 256. Default 32. */
  quantBlockSize?: number;
  /** Symmetric quantization with zero point 0 (default true); false: unsigned with zero points. */
  quantSymmetric?: boolean;
  /**
   * Op types whose weights are quantized. Default: int4 and q8 ['MatMul'], int8 ['MatMul', 'Gemm',
   * 'Conv']. int4 with quantFormat 'ort' also takes 'Gather' (tables [V, H] to
   * GatherBlockQuantized).
   */
  quantOps?: string[];
  /** Node names or globs whose weights stay float. */
  quantExclude?: string[];
  /** MatMulNBits accuracy_level, 0-4 (0, the default: not written, as onnxruntime's quantizer). */
  quantAccuracyLevel?: number;
  /**
   * After the pipeline, convert float32 weights and computation to float16 (about half the
   * size): the graph's inputs and outputs stay float32 (one Cast at the boundary), and ops that
   * overflow or lose precision in float16 (Softmax, Exp, Pow, Range, shape arithmetic, ...) stay
   * float32. The report's `convert-float16` pass lists what stayed float32 and why.
   * Settings in `extra`: `convert-float16.keep-io-types` ('false': inputs and outputs become
   * float16 too), `convert-float16.block` / `.allow` (ops added to / removed from the block list).
   */
  float16?: boolean;
  /**
   * Raise the model's default-domain opset to this before optimizing, where every op computes
   * the same at that version (else the call fails naming the op), so that the
   * `fuse-normalizations` pass may fuse LayerNormalization (17), Gelu (20) and
   * RMSNormalization (23). Default: keep the model's opset.
   */
  targetOpset?: number;
  /** The input's external-data files by location (as written in the model). */
  externalData?: Record<string, Bytes>;
  /**
   * Tensors of at least this many bytes are written to external data (returned in
   * `externalData` of the result). Default: automatic (external if the input used external data
   * or the model would pass protobuf's 2 GiB limit, with a 1 KiB threshold).
   */
  externalDataThreshold?: number;
  /**
   * Name of the output's external-data file, relative to the model. Default `model.onnx.data`
   * (optimizeFile: `<output file name>.data`).
   */
  externalDataLocation?: string;
  /**
   * Largest external-data file in bytes; more weights go to `<location>.1`, `<location>.2`, ...
   * (ONNX Runtime Web and transformers.js load at most 2 GB per file). Default: no limit.
   */
  externalDataFileLimit?: number;
  /**
   * What joins the external-data file name and the number of a further file: '.' (default:
   * `<location>.1`) or '_' (`<location>_1`, as transformers.js names them).
   */
  externalDataChunkSeparator?: string;
  /**
   * Fail (OnnxfoldError "memory limit of N MiB reached") rather than let the WebAssembly heap
   * grow past this many bytes. The report's `memory.peak_heap_bytes` gives what a run took.
   */
  memoryLimit?: number;
  /**
   * What result files are: 'bytes' (Uint8Array) or 'blob' (a Blob of parts; unchanged weights
   * are slices of the input Blobs, not read). Default: 'blob' when any input is a Blob.
   */
  output?: 'bytes' | 'blob';
  /**
   * Browsers, in a dedicated Worker: a folder of the origin private file system
   * (`navigator.storage.getDirectory()`) where each call writes the bytes it computed (a new file
   * `onnxfold-*.bin`) instead of holding them in memory; the result Blobs are slices of that file
   * and of the inputs, so a result of several GB stays on disk. The file is yours to remove once
   * the results are no longer read (removed by onnxfold if the call fails). Implies 'blob'.
   */
  spill?: FileSystemDirectoryHandle;
  /**
   * Unchanged weights of the input's external-data files are referred to instead of copied: the
   * output is written beside the input and needs its data files (report.depends_on lists them).
   * A 27 GB model's graph then optimizes in about a second.
   */
  reuseInputData?: boolean;
  /** Fixpoint rounds at most. Default 8. */
  maxIterations?: number;
  /** Run the IR verifier after every pass. */
  verify?: boolean;
  /** Free-form pass settings ("pass.key" -> value). */
  extra?: Record<string, string | number | boolean>;
  /** Called synchronously as the job goes on. An exception thrown here aborts the job and is rethrown. */
  onProgress?: (progress: Progress) => void;
  /**
   * Checked before the job and between passes; when aborted the call rejects with an
   * "AbortError". The job runs synchronously in wasm, so an abort issued elsewhere on the same
   * thread is seen only once the call returns; abort from onProgress, or run onnxfold in a Worker
   * and terminate it, to stop a long job at once.
   */
  signal?: AbortSignal;
}

export interface InspectOptions {
  externalData?: Record<string, Bytes>;
}

export interface ValueSummary {
  name: string;
  /** e.g. "float32[batch,3,224,224]" */
  type: string;
}

/** onnxfold::ModelSummary as JSON. */
export interface ModelSummary {
  ir_version: number;
  /** domain ("ai.onnx" for the default domain) -> opset version. */
  opsets: Record<string, number>;
  producer: string;
  /** Nodes including those inside subgraphs. */
  nodes: number;
  /** "Conv" or "domain::Op" -> count. */
  op_histogram: Record<string, number>;
  initializers: number;
  initializer_bytes: number;
  external_initializers: number;
  overridable_initializers: number;
  functions: number;
  inputs: ValueSummary[];
  outputs: ValueSummary[];
  [key: string]: unknown;
}

/** One run of one pass (passes run in rounds until nothing changes). */
export interface PassRun {
  pass: string;
  /** Fixpoint round, from 1. */
  iteration: number;
  ms: number;
  changed: boolean;
  /** [before, after] */
  nodes: [number, number];
  initializers: [number, number];
  initializer_bytes: [number, number];
  counters?: Record<string, number>;
  notes?: string[];
  /** Set when the pass failed and was undone. */
  error?: string;
}

/** A node left in place, and why (e.g. why it was not folded). */
export interface NodeNote {
  node: string;
  op: string;
  reason: string;
  /**
   * When the size budget refused the fold: the bytes it would add to the written model (net
   * of the constants it frees). A `sizeBudget` (or `constructorBudget` for constructors) of at
   * least this lets it fold.
   */
  would_add_bytes?: number;
  /** With `would_add_bytes`: the nodes that fold would remove (it and those feeding only it). */
  would_remove_nodes?: number;
}

/** onnxfold::Report as JSON. */
export interface Report {
  before: ModelSummary;
  after: ModelSummary;
  iterations: number;
  converged: boolean;
  /** Milliseconds per stage: { read, optimize, write }. */
  timing_ms: { read: number; optimize: number; write: number };
  /** variants: the part of read + optimize done once for all variants (0 for optimize). */
  shared_ms: number;
  /** The .onnx file's size. */
  input_bytes: number;
  /** The sizes of the external-data files it refers to. */
  input_external_bytes: number;
  output_bytes: number;
  external_bytes: number;
  /** The output's external-data files (locations), in the order written. */
  external_files: string[];
  /** Input data files the output refers to (reuseInputData). */
  depends_on: string[];
  memory: {
    /** The WebAssembly heap's size at the end: its peak (it never shrinks). */
    peak_heap_bytes: number;
    /** The most tensor storage held at once. */
    peak_tensor_bytes: number;
    /** Bytes read from input files and deferred folds (not the .onnx itself). */
    source_bytes_read: number;
  };
  /** Where I/O time went, as the C++ side measures it (api/optimize.cpp). */
  io: {
    /** Time reading bytes from sources (in wasm: host.read calls; for computed weights, computing them), all stages. */
    source_read_ms: number;
    /** The part of source_read_ms spent while writing (timing_ms.write). */
    write_source_read_ms: number;
    /** Time in the output sink (in wasm: host output calls, file copies included), its source reads not counted. */
    sink_write_ms: number;
    /** Bytes handed to the output sink (encoded pieces and weights). */
    sink_write_bytes: number;
  };
  /**
   * The JS layer's profile (absent in the report file optimizeFile's reportFile writes): loading
   * the module (once per process: the same figures in every report), the synchronous wasm call,
   * and the host callbacks it made.
   */
  host?: {
    /** Compiling onnxfold.wasm, reading it included. */
    compile_ms: number;
    /** Instantiating it, the glue's start-up included. */
    instantiate_ms: number;
    /** The whole synchronous call into wasm (read, optimize and write, and the callbacks below). */
    call_ms: number;
    /** host.read: time, bytes and calls (source bytes into the wasm heap). */
    read_ms: number;
    read_bytes: number;
    reads: number;
    /** host.output: time, bytes written from the heap, and bytes copied source to output. */
    write_ms: number;
    write_bytes: number;
    copy_bytes: number;
    /** With options.spill: the file in that folder this call wrote, and its bytes. */
    spill_file?: string;
    spill_bytes?: number;
  };
  passes: PassRun[];
  warnings: string[];
  not_folded: NodeNote[];
  /** The input's module tree, three levels deep; absent when its nodes carry no module scopes. */
  modules?: ModuleTree;
  [key: string]: unknown;
}

export interface OptimizeResult {
  /** The optimized .onnx (a Blob when an input was a Blob, or with output: 'blob'). */
  model: Output;
  /** External-data files of the output by location ({} when everything is inline). */
  externalData: Record<string, Output>;
  report: Report;
}

export interface OptimizeFileResult {
  report: Report;
  /** Absolute paths written: the model first, then its external-data files. */
  outputs: string[];
}

/** Module tree (onnxfold::moduleTree), recovered from node names. */
export interface ModuleTree {
  path: string;
  name: string;
  class: string;
  /** All nodes below this module. */
  nodes: number;
  /** Nodes directly in this module. */
  own_nodes: number;
  /** Initializer bytes used below this module. */
  param_bytes: number;
  ops: Record<string, number>;
  /** How many times this module was called (1 normally). */
  calls: number;
  children: ModuleTree[];
}

/** One module of GraphView.modules (flat, parents first). */
export interface GraphModule {
  path: string;
  name: string;
  class: string;
  /** The parent's path; null for the root. */
  parent: string | null;
  depth: number;
  nodes: number;
  own_nodes: number;
  param_bytes: number;
  ops: Record<string, number>;
}

/** One node of the main graph, for display. */
export interface GraphNode {
  /** Its name, or "op:first output" when unnamed: the key that matches a node before and after optimize. */
  id: string;
  name: string;
  op: string;
  domain: string;
  inputs: string[];
  outputs: string[];
  /** Short summaries: numbers and lists (8 items), tensors as dtype[dims], graphs as "subgraph". */
  attributes: Record<string, string>;
  /** Its module path ("" for the root). */
  module: string;
}

/** The main graph for display (onnxfold::graphJson). */
export interface GraphView {
  nodes_total: number;
  node_limit: number;
  /** "modules": above the node limit (or modulesOnly), only `modules` is given. */
  level: 'nodes' | 'modules';
  inputs: { name: string; type: string }[];
  outputs: { name: string; type: string }[];
  modules: GraphModule[];
  nodes?: GraphNode[];
  /** Type of every value the nodes use, e.g. "float32[1,3,224,224]" ("?" when unknown). */
  values?: Record<string, string>;
  initializers?: string[];
}

export interface GraphOptions extends InspectOptions {
  /** Above this many nodes only the module summary is given (default 5000). */
  nodeLimit?: number;
  modulesOnly?: boolean;
}

export interface SplitConstantsResult {
  prep: Output;
  main: Output;
  report: SplitReport;
}

/** What splitConstants did (the C++ SplitReport). */
export interface SplitReport {
  original_nodes: number;
  /** Nodes computing from weights only. */
  prep_nodes: number;
  main_nodes: number;
  /** Weights prep reads (its inputs, also its initializers). */
  prep_inputs: number;
  /** prep's outputs = main's inputs that carry the computed values as initializers. */
  values: string[];
  value_bytes: number;
  /** Constant nodes left in main by the size budgets. */
  skipped_over_budget: number;
  prep_bytes: number;
  main_bytes: number;
  /** Why nothing was split, when nothing was ("" otherwise): prep is then empty and main is the model. */
  nothing_to_split: string;
}

export interface PassList {
  available: string[];
  default: string[];
}

/** Where the .wasm comes from; set before the first call. */
export const env: {
  /** Overrides the default `new URL('../dist/onnxfold.wasm', import.meta.url)`. */
  wasmUrl: string | URL | undefined;
  /** The module's bytes (skips fetching). */
  wasmBinary: ArrayBuffer | Uint8Array | undefined;
  /** A compiled module (skips fetching and compiling). */
  wasmModule: WebAssembly.Module | undefined;
};

/** Problems with the model, the options or resources (message says what and where). */
export class OnnxfoldError extends Error {
  name: 'OnnxfoldError';
}

/** Loads the wasm module now (otherwise the first call does). */
export function init(): Promise<void>;

export function optimize(bytes: Bytes, options?: OptimizeOptions): Promise<OptimizeResult>;

/**
 * Node only: optimizes a model file and writes the result to `outputPath`, with its external
 * data as `<output file name>.data` (`.data.1`, ... with externalDataFileLimit) beside it. The
 * input's external data is read from its folder range by range; unchanged weights are copied
 * file to file, never through the heap. An output that is a file the call reads (the model or
 * one of its data files) or another output is refused before anything is written, and the
 * outputs are renamed into place only once all were written (a failed call leaves nothing).
 */
export function optimizeFile(inputPath: string, outputPath: string, options?: OptimizeFileOptions): Promise<OptimizeFileResult>;

export interface OptimizeFileOptions extends OptimizeOptions {
  /** Also write the JSON report to this file, as one of the call's outputs (checked and committed with them). */
  report?: string;
}

/** A variant transformers.js loads, by its dtype ('fp32', 'fp16', ...). */
export type VariantDtype = 'fp32' | 'fp16' | 'int8' | 'q8' | 'q4' | 'q4f16';

export interface VariantsOptions extends OptimizeOptions {
  /** Which variants (default: all), written in this order. */
  dtypes?: VariantDtype[];
  /** The model's file name without .onnx (default 'model'; variantsFile: the input's). */
  name?: string;
  /**
   * Judge each variant against the input model: the input runs once (graph optimizations off)
   * on seeded inputs (onnxfold/accuracy makeInputs), then each variant on the same inputs, one
   * session at a time; each row gets `accuracy`. The package has no runtime of its own: pass one.
   */
  accuracy?: VariantAccuracyOptions;
}

export interface VariantAccuracyOptions {
  /** An ONNX Runtime module: `import * as ort from 'onnxruntime-node'` (or 'onnxruntime-web'). */
  ort: unknown;
  /** Seed of the inputs (default 1). */
  seed?: number;
  /** Sizes of symbolic input dimensions by name (default: 8 for sequence-like names, else 2). */
  dims?: Record<string, number>;
}

export type { OutputAccuracy, Accuracy } from './accuracy.js';
import type { Accuracy } from './accuracy.js';

export interface VariantRow {
  dtype: VariantDtype;
  /** The model file, e.g. 'model_fp16.onnx'; its external data, if any, is `<file>_data`, `_data_1`, ... */
  file: string;
  /** Model and external-data bytes together. */
  bytes: number;
  report: Report;
  /**
   * With options.accuracy: each output against the input model's, or `error` saying which model
   * could not be loaded or run and why (e.g. a model past onnxruntime-web's 4 GiB heap).
   */
  accuracy?: Accuracy | { error: string };
}

/**
 * The variants transformers.js loads (model.onnx, model_fp16.onnx, ...), from one read of the
 * model and one run of the float32 pipeline; each variant's bytes are what optimize() with its
 * options (float16, quantization, external data as `<file>_data`, `_data_1`, ... under 2 GB
 * each) over the caller's writes. `onProgress` sees the whole job, with `variant` while one is
 * being made (none while the shared read and pipeline run).
 */
export function variants(bytes: Bytes, options?: VariantsOptions): Promise<{ files: Record<string, Output>; variants: VariantRow[] }>;

/**
 * Node only: writes the variants of a model file into `outDir` (made if missing), as variants()
 * makes them: every file, or none if any variant fails.
 */
export function variantsFile(inputPath: string, outDir: string, options?: VariantsOptions): Promise<{ variants: VariantRow[]; outputs: string[] }>;

export function inspect(bytes: Bytes, options?: InspectOptions): Promise<ModelSummary>;

/** The same summary as text, as the CLI's `info` prints it. */
export function inspectText(bytes: Bytes, options?: InspectOptions): Promise<string>;

/**
 * Checks a model against ONNX's rules: op schemas at the imported opset (input and output
 * counts, attributes, type constraints), graph structure, names, tensors, functions and
 * subgraphs, and contradictions shape inference finds. optimize() and splitConstants() run
 * the same checks first and reject an invalid model with an OnnxfoldError.
 */
export function validate(bytes: Bytes, options?: InspectOptions): Promise<ValidationResult>;

export interface ValidationResult {
  valid: boolean;
  /** The first problem found: where (graph > node > field) and what. */
  error?: string;
}

export function moduleTree(bytes: Bytes, options?: InspectOptions): Promise<ModuleTree>;

export function graph(bytes: Bytes, options?: GraphOptions): Promise<GraphView>;

export function splitConstants(bytes: Bytes, options?: Pick<OptimizeOptions, 'foldDequantizeWeights' | 'sizeBudget' | 'constructorBudget' | 'memoryLimit' | 'externalData' | 'output'>): Promise<SplitConstantsResult>;

export function passes(): Promise<PassList>;

/** One option of optimize as the C++ side defines it (the CLI flag is `flag`). */
export interface OptionSpec {
  name: string;
  flag: string;
  type: 'integer' | 'boolean' | 'string' | 'string[]' | 'object';
  help: string;
  /** splitConstants takes it too. */
  splitConstants: boolean;
  /** The value an option left out has. */
  default: number | boolean | string | string[] | Record<string, string>;
  /** An enumeration's values (empty for other options; '' means off where the default is ''). */
  values: string[];
}

/** The options optimize takes, from the one table the CLI and the bindings use. */
export function optionSchema(): Promise<OptionSpec[]>;

/** The options graph() takes (nodeLimit, modulesOnly), from the same table's graph part. */
export function graphOptionSchema(): Promise<OptionSpec[]>;

/** The variants variants() can make, with the file name each has for the model name 'model'. */
export function variantSchema(): Promise<{ dtype: VariantDtype; file: string; help: string }[]>;

export function version(): Promise<string>;

// onnxfold/accuracy: seeded inputs, output comparison and reference runs (js/accuracy.js). `ort`
// is the caller's ONNX Runtime module (onnxruntime-node or onnxruntime-web); its types are not
// restated here.

/** Seed, tolerances of the equivalence check, and the size of an unnamed symbolic dim. */
export const DEFAULTS: { seed: number; rtol: number; atol: number; dimValue: number };

/** The size a symbolic dim gets by its name: 16000 for audio samples, 8 for sequences, else 2. */
export function defaultDim(name: string): number;
/** A dim as the runtime reports it: a number, a name sized by `dims` or by defaultDim, or unnamed (`dimValue`). */
export function resolveDim(d: number | string, dims?: Record<string, number>, dimValue?: number): number;
/** A small deterministic PRNG: returns floats in [0, 1). */
export function mulberry32(seed: number): () => number;
export function toHalfBits(f: number): number;
export function halfToNumber(h: number): number;

/** A tensor as ONNX Runtime gives one, or any { type, dims, data }. */
export interface TensorLike {
  readonly type: string;
  readonly dims: readonly number[];
  readonly data: ArrayLike<unknown>;
}

/** One seeded input of `meta`'s type (`Tensor`: the runtime's tensor class). */
export function makeTensor(Tensor: unknown, meta: { name: string; type: string }, shape: number[], rand: () => number): TensorLike;
/** Seeded inputs for a session's inputMetadata: floats in [-1, 1), masks all ones, integer ids in [0, 10). */
export function makeInputs(Tensor: unknown, inputMetadata: readonly { name: string; isTensor: boolean; type?: string; shape?: readonly (number | string)[] }[],
  options?: { seed?: number; dims?: Record<string, number> }): { feeds: Record<string, TensorLike>; shapes: InputShape[] };

export interface InputShape { name: string; type: string; dims: number[] }

export interface TensorComparison {
  name: string;
  type: string;
  dims: number[];
  size: number;
  maxAbsDiff: number;
  maxRelDiff: number;
  /** Elements outside |actual - expected| <= atol + rtol * |expected| (integers: not equal). */
  mismatches: number;
  worst: { index: number; coord: number[]; expected: unknown; actual: unknown } | null;
  error: string | null;
  /** Float outputs: cosine of the two as vectors (NaN when either holds a NaN or an infinity). */
  cosine?: number;
  /** Float outputs: maxAbsDiff / the range (max - min) of the expected values. */
  relRange?: number;
  /** Float outputs whose last axis is longer than 1: the share of rows whose largest element is at the same index. */
  argmax?: number;
}

/** `expected` (the original's output) against `actual`. */
export function compareTensors(name: string, expected: TensorLike, actual: TensorLike,
  tolerance?: { rtol?: number; atol?: number }): TensorComparison;

/** One output of a model judged against the reference model's. */
export interface OutputAccuracy {
  name: string;
  type?: string;
  dims?: number[];
  maxAbsDiff?: number;
  relRange?: number;
  cosine?: number;
  argmax?: number;
  /** Non-float outputs: elements not equal. */
  mismatches?: number;
  /** The output is missing, or its type or shape differs. */
  error?: string;
}

export interface Accuracy {
  seed: number;
  inputs: InputShape[];
  outputs: OutputAccuracy[];
}

/** A model for the runtime: a path (node), or bytes with their external data by location. */
export type ModelSource =
  | { path: string }
  | { bytes: Uint8Array | ArrayBuffer | Blob; externalData?: Record<string, Uint8Array | ArrayBuffer | Blob> };

export interface Reference {
  seed: number;
  inputs: InputShape[];
  feeds: Record<string, TensorLike>;
  outputNames: string[];
  outputs: Record<string, TensorLike>;
}

/** 'onnxruntime-node 1.30.0' or 'onnxruntime-web 1.30.0'. */
export function runtimeName(ort: unknown): string;
export function readModel(model: ModelSource): Promise<{ path?: string; bytes?: Uint8Array; external: { path: string; data: Uint8Array }[]; size?: number }>;
export function createSession(ort: unknown, model: Awaited<ReturnType<typeof readModel>>, options?: object): Promise<unknown>;
/** Runs `model` once (graph optimizations off) on seeded inputs and keeps its outputs. Throws saying why it cannot load or run. */
export function runReference(ort: unknown, model: ModelSource, options?: { seed?: number; dims?: Record<string, number>; sessionOptions?: object }): Promise<Reference>;
/** `model` on the reference's inputs against its outputs. Throws saying why it cannot load or run. */
export function accuracyOf(ort: unknown, reference: Reference, model: ModelSource, options?: { sessionOptions?: object }): Promise<Accuracy>;
/** The worst output's figures (lowest cosine and argmax, largest relRange), or the error. */
export function worstOutput(accuracy: Accuracy | { error: string }): { error?: string; cosine?: number; relRange?: number; argmax?: number };

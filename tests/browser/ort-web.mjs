// onnxruntime-web in a page of the served repository root, for the browser variants tests: each
// model (with its external data, as transformers.js passes it) is created, run once and released.
//
//   const web = await page.evaluate(runInPage, { ortUrl, models, seed, inputs, packed });
//
// `models`: { key: { url, data: [{ name, url }] } } served URLs. Inputs are the page's seeded
// ones (onnxfold/accuracy's makeInputs, the oracle's) unless `inputs` gives them ({ name: { type, data:
// numbers or decimal strings for 64-bit ints, dims } }). Outputs come back as plain numbers
// (float16 decoded), or with `packed` as base64 of their float32 bytes (fast for large logits;
// unpack() turns them back into a Float32Array). A model that fails gives { error }.
import { relative } from 'node:path';

import { repoRoot } from './harness.mjs';

/** The URL path of a file under the served repository root. */
export const servedUrl = (p) => `/${relative(repoRoot, p).split('\\').join('/')}`;

/** { url, data } of `file` in `dir`, its external data files being those whose names start with it. */
export function servedModel(dir, file, names) {
  return {
    url: servedUrl(`${dir}/${file}`),
    data: names
      .filter((x) => x.startsWith(file) && x !== file)
      .map((name) => ({ name, url: servedUrl(`${dir}/${name}`) })),
  };
}

export const unpack = (b64) => {
  const bytes = Buffer.from(b64, 'base64');
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
};

// Runs in the page (passed to page.evaluate: self-contained).
export async function runInPage({ ortUrl, models, seed, inputs, packed = false }) {
  const ort = await import(ortUrl);
  const { makeInputs } = await import('/js/accuracy.js');
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.wasmPaths = ortUrl.slice(0, ortUrl.lastIndexOf('/') + 1);
  ort.env.logLevel = 'error';
  const half = (h) => {
    const s = h & 0x8000 ? -1 : 1;
    const e = (h >> 10) & 0x1f;
    const f = h & 0x3ff;
    if (e === 0) return s * f * 2 ** -24;
    if (e === 31) return f ? NaN : s * Infinity;
    return s * (1 + f / 1024) * 2 ** (e - 15);
  };
  const base64 = (f32) => {
    const bytes = new Uint8Array(f32.buffer, f32.byteOffset, f32.byteLength);
    let s = '';
    for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return btoa(s);
  };
  const tensor = ({ type, data, dims }) => {
    const big = type === 'int64' || type === 'uint64';
    const Ctor = { int64: BigInt64Array, uint64: BigUint64Array, int32: Int32Array, float32: Float32Array }[
      type
    ];
    return new ort.Tensor(type, Ctor.from(data, big ? (x) => BigInt(x) : Number), dims);
  };
  const results = {};
  const get = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());
  for (const [key, { url, data }] of Object.entries(models)) {
    try {
      // External data as transformers.js passes it: each file under the name the model refers to.
      const externalData = await Promise.all(
        data.map(async (d) => ({ path: d.name, data: await get(d.url) })),
      );
      const bytes = await get(url);
      const t0 = performance.now();
      const session = await ort.InferenceSession.create(bytes, {
        executionProviders: ['wasm'],
        externalData,
      });
      const t1 = performance.now();
      const feeds = inputs
        ? Object.fromEntries(Object.entries(inputs).map(([name, v]) => [name, tensor(v)]))
        : makeInputs(ort.Tensor, session.inputMetadata, { seed }).feeds;
      const out = await session.run(feeds);
      const t2 = performance.now();
      results[key] = {
        loadMs: t1 - t0,
        runMs: t2 - t1,
        outputs: Object.fromEntries(
          Object.entries(out).map(([name, t]) => {
            const numbers =
              t.type === 'float16' && !(typeof Float16Array !== 'undefined' && t.data instanceof Float16Array)
                ? Float32Array.from(t.data, half)
                : t.data;
            const values = packed
              ? base64(numbers instanceof Float32Array ? numbers : Float32Array.from(numbers, Number))
              : Array.from(numbers, Number);
            return [name, { type: t.type, dims: [...t.dims], [packed ? 'packed' : 'data']: values }];
          }),
        ),
      };
      await session.release();
    } catch (e) {
      results[key] = { error: String(e?.message ?? e) };
    }
  }
  return results;
}

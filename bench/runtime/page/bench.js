// The runtime benchmark's page: the procedure of timing.mjs, as measure-node.mjs, with onnxruntime-web's
// wasm provider (one thread: no cross-origin isolation needed, and comparable with node's).
// Model bytes are fetched once, outside the timings: session creation is what is timed.
import * as ort from '/node_modules/onnxruntime-web/dist/ort.wasm.min.mjs';
import { makeInputs } from '/js/accuracy.js';
import { timeModels } from '/bench/runtime/timing.mjs';

ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = '/node_modules/onnxruntime-web/dist/';
ort.env.logLevel = 'error';

const bytesOf = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());

async function webgpu() {
  if (!('gpu' in navigator)) return 'navigator.gpu is not available';
  const adapter = await navigator.gpu.requestAdapter().catch((e) => null);
  if (!adapter) return 'no WebGPU adapter';
  const info = adapter.info ?? {};
  return `adapter ${info.vendor ?? '?'} ${info.architecture ?? ''} ${info.description ?? ''}`.trim();
}

window.measure = async ({ variants, ...options }) => {
  const models = [];
  for (const v of variants) {
    const externalData = [];
    for (const f of v.data ?? []) externalData.push({ path: f, data: await bytesOf(`${v.dir}/${f}`) });
    models.push({
      name: v.name,
      bytes: await bytesOf(`${v.dir}/${v.file}`),
      options: { executionProviders: ['wasm'], externalData, logSeverityLevel: 3 },
    });
  }
  const { samples, repeat } = await timeModels(models, {
    ...options,
    create: (m) => ort.InferenceSession.create(m.bytes, m.options),
    makeInputs,
    Tensor: ort.Tensor,
  });
  return { samples, repeat, webgpu: await webgpu(), userAgent: navigator.userAgent };
};
document.body.dataset.ready = '1';

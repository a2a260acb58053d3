// ONNX Runtime at graphOptimizationLevel 'all', in a child process: the second reference for QDQ
// models (check.mjs). ORT's QDQ fusions fail some valid models with an error and abort the
// process on others (an assertion in its graph transformers: seen with a per-row-quantized MatMul
// weight), so they run where an abort costs one reference, not the campaign. One child serves a
// whole campaign; it is started on first use, started again after it died, and does not keep the
// parent alive while idle.
//
//   const r = await runAll(bytes, feeds);   // {outputs: {name: ort.Tensor-like}} | {error, crashed?}
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const self = fileURLToPath(import.meta.url);

/**
 * ORT's error text, first line, without the source path and function signature its kernels put
 * before the reason.
 */
export const ortMessage = (e) => e.message.split('\n')[0]
  .replace(/\/onnxruntime_src\/\S+ (virtual )?[^()]*\([^)]*\)( const)? /, '').slice(0, 300);

if (process.argv[2] === '--child') {
  const { default: ort } = await import('onnxruntime-node');
  ort.env.logLevel = 'fatal';
  process.on('message', async ({ id, bytes, feeds }) => {
    let s;
    try {
      s = await ort.InferenceSession.create(bytes, { executionProviders: ['cpu'], graphOptimizationLevel: 'all', logSeverityLevel: 4 });
      const inputs = Object.fromEntries(Object.entries(feeds).map(([k, t]) => [k, new ort.Tensor(t.type, t.data, t.dims)]));
      const out = await s.run(inputs);
      const outputs = Object.fromEntries(Object.entries(out).map(([k, t]) => [k, { type: t.type, data: t.data, dims: [...t.dims], size: t.size }]));
      process.send({ id, outputs });
    } catch (e) {
      process.send({ id, error: ortMessage(e) });
    } finally {
      await s?.release();
    }
  });
}

let child = null;
let nextId = 1;
const pending = new Map();

function idle(c) {
  c.unref();
  c.channel?.unref();
}

function start() {
  const c = fork(self, ['--child'], { serialization: 'advanced', stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
  c.on('message', ({ id, ...r }) => {
    const p = pending.get(id);
    if (!p) return;
    pending.delete(id);
    if (!pending.size) idle(c);
    p(r);
  });
  c.on('exit', (code, signal) => {
    if (child === c) child = null;
    for (const [id, p] of pending) {
      pending.delete(id);
      p({ error: `ONNX Runtime ('all') ended the process (${signal ?? `exit ${code}`})`, crashed: true });
    }
  });
  idle(c);
  return c;
}

/** The outputs of ORT 'all' on `bytes` for `feeds` ({name: ort.Tensor}). */
export function runAll(bytes, feeds) {
  child ??= start();
  const c = child;
  const id = nextId++;
  const plain = Object.fromEntries(Object.entries(feeds).map(([k, t]) => [k, { type: t.type, data: t.data, dims: [...t.dims] }]));
  return new Promise((resolve) => {
    pending.set(id, resolve);
    c.ref();
    c.channel?.ref();
    c.send({ id, bytes, feeds: plain });
  });
}

/** Ends the child (a campaign that is done). */
export function closeAll() {
  child?.kill();
  child = null;
}

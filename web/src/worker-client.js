// Worker client for the page's workers (the optimizer, worker.js; verify, verify-worker.js): one
// request id per call; cancel() terminates the worker (a synchronous wasm call cannot be
// interrupted otherwise) and the next call starts a fresh one. The worker is created on the
// first call, so a worker that is never used is never fetched.

export class AbortError extends Error {
  constructor(message = 'Cancelled') {
    super(message);
    this.name = 'AbortError';
  }
}

export class WorkerClient {
  #script;
  #name;
  #label;
  #worker = null;
  #pending = new Map();
  #nextId = 1;

  /** `script` is relative to the page's bundles (they all sit in one folder); `label` names it in errors. */
  constructor(script, name, label = name) {
    this.#script = script;
    this.#name = name;
    this.#label = label;
  }

  #ensure() {
    if (this.#worker) return this.#worker;
    const w = new Worker(new URL(this.#script, import.meta.url), { type: 'module', name: this.#name });
    w.onmessage = ({ data }) => {
      const p = this.#pending.get(data.id);
      if (!p) return;
      if (data.type === 'progress') {
        p.onProgress?.(data.progress);
        return;
      }
      this.#pending.delete(data.id);
      if (data.type === 'result') p.resolve(data.value);
      else p.reject(Object.assign(new Error(data.error.message), { name: data.error.name }));
    };
    // Load failures (a missing script or .wasm, a syntax error) arrive here, not as messages.
    w.onerror = (ev) => {
      ev.preventDefault();
      this.#failAll(
        new Error(
          `The ${this.#label} failed to start: ${ev.message || 'worker error'}` +
            (ev.filename ? ` (${ev.filename}:${ev.lineno})` : ''),
        ),
      );
      this.#terminate();
    };
    this.#worker = w;
    return w;
  }

  #terminate() {
    this.#worker?.terminate();
    this.#worker = null;
  }

  #failAll(err) {
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
  }

  call(op, args, { onProgress } = {}) {
    const w = this.#ensure();
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress });
      w.postMessage({ id, op, args });
    });
  }

  cancel() {
    this.#terminate();
    this.#failAll(new AbortError('Cancelled.'));
  }
}

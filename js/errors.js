// onnxfold's errors: the package's own error type, the AbortError of an aborted call, and how a
// message names the type of a wrong argument. Used by every module of js/.

/** Errors from onnxfold itself (bad model, bad option, out of memory...). */
export class OnnxfoldError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = 'OnnxfoldError';
  }
}

// The error of an aborted call: the signal's reason when it is an AbortError, else a new one
// with the reason as its cause.
export function abortError(signal) {
  const reason = signal && signal.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  const e =
    typeof DOMException === 'function'
      ? new DOMException('onnxfold: the operation was aborted', 'AbortError')
      : Object.assign(new Error('onnxfold: the operation was aborted'), { name: 'AbortError' });
  if (reason !== undefined) {
    try {
      Object.defineProperty(e, 'cause', { value: reason, configurable: true });
    } catch {
      /* frozen */
    }
  }
  return e;
}

// A value's type as messages name it: 'null', 'number', 'Array', ...
export function describe(x) {
  if (x === null) return 'null';
  if (typeof x !== 'object') return typeof x;
  return (x.constructor && x.constructor.name) || 'object';
}

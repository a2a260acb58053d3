// One call: the host object of wasm-bindings/host.h (sources in, output plan out, progress and
// cancellation), around one synchronous call of the wasm module.
import { OnnxfoldError, abortError, describe } from './errors.js';
import { getModule, moduleLoad, now, wrapError } from './module.js';
import { openSource } from './sources.js';

// Runs fn(M, modelSize, host, output) with the model as source 0 and every other file as a
// source after it (wasm reads what it needs through host.read), then closes the sources. `resolve(location)` returns a source for an external-data
// location the model names (or undefined); makeOutput(M, sources) makes the plan's receiver;
// `options` gives externalData, onProgress and signal.
// `stats`, when given, receives the host side's profile (the report's `host`): time spent
// loading the module in this call, and time and bytes of host reads and output-plan entries.
export async function withCall(what, modelData, { resolve, makeOutput, options, stats }, fn) {
  const M = await getModule();
  const io = stats || {};
  Object.assign(io, {
    compile_ms: moduleLoad.compile_ms,
    instantiate_ms: moduleLoad.instantiate_ms,
    call_ms: 0,
    read_ms: 0,
    read_bytes: 0,
    reads: 0,
    write_ms: 0,
    write_bytes: 0,
    copy_bytes: 0,
  });
  const sources = [];
  const output = makeOutput ? makeOutput(M, sources) : undefined;
  const byLocation = new Map();
  let hostError;
  const keep = (e) => {
    hostError ??= e;
    return false;
  };
  const pending = []; // external data given up front, opened before the synchronous call
  try {
    const model = await openSource(modelData, `${what}: model`);
    sources.push(model);
    const given = options && options.externalData;
    if (given !== undefined && given !== null) {
      if (typeof given !== 'object') {
        throw new TypeError(
          `onnxfold: options.externalData must be an object { [location]: data }, not ${describe(given)}`,
        );
      }
      for (const [location, data] of Object.entries(given)) {
        pending.push([location, await openSource(data, `${what}: externalData['${location}']`)]);
      }
    }
    for (const [location, src] of pending) {
      byLocation.set(location, sources.length);
      sources.push(src);
    }
    const signal = options && options.signal;
    if (signal && signal.aborted) throw abortError(signal);
    let last = 0;
    const onProgress = options && options.onProgress;
    const host = {
      external(location) {
        try {
          if (!byLocation.has(location)) {
            const data = resolve ? resolve(location) : undefined;
            if (data === undefined) {
              const names = [...byLocation.keys()].map((l) => `'${l}'`).join(', ');
              throw new OnnxfoldError(
                `${what}: the model refers to external data '${location}', which was not supplied ` +
                  `(options.externalData has ${names || 'no files'})`,
              );
            }
            byLocation.set(location, sources.length);
            sources.push(data);
          }
          const id = byLocation.get(location);
          return { id, size: sources[id].size };
        } catch (e) {
          keep(e);
          return undefined;
        }
      },
      read(id, offset, n, ptr) {
        const t = now();
        try {
          sources[id].read(offset, n, M.HEAPU8, ptr);
          return true;
        } catch (e) {
          return keep(e);
        } finally {
          io.read_ms += now() - t;
          io.read_bytes += n;
          io.reads++;
        }
      },
      output(location, kind, a, b, c) {
        const t = now();
        try {
          if (kind === 0) output.start(location, a);
          else if (kind === 1) output.heap(location, a, b);
          else output.range(location, a, b, c);
          return true;
        } catch (e) {
          return keep(
            e instanceof OnnxfoldError
              ? e
              : new OnnxfoldError(`${what}: writing '${location || 'the model'}': ${e.message}`, {
                  cause: e,
                }),
          );
        } finally {
          io.write_ms += now() - t;
          if (kind === 1) io.write_bytes += b;
          else if (kind === 2) io.copy_bytes += c;
        }
      },
      // The C++ side reports a fraction per pass of each fixpoint round, so it can step back
      // when a new round starts; users get a fraction that never decreases.
      progress:
        onProgress &&
        ((stage, pass, fraction, variant) => {
          last = Math.max(last, Math.min(1, fraction));
          try {
            onProgress({ stage, pass, fraction: last, ...(variant ? { variant } : {}) });
          } catch (e) {
            keep(e);
          }
        }),
      // Polled between passes. A synchronous wasm call keeps the event loop busy, so an abort
      // from elsewhere is seen only if it happens in onProgress or before the call.
      cancelled: (onProgress || signal) && (() => hostError !== undefined || !!(signal && signal.aborted)),
    };
    const tc = now();
    try {
      return fn(M, model.size, host, output);
    } catch (e) {
      if (hostError !== undefined) throw hostError;
      if (signal && signal.aborted) throw abortError(signal);
      throw wrapError(what, e);
    } finally {
      io.call_ms = now() - tc;
    }
  } catch (e) {
    output && output.discard();
    throw e;
  } finally {
    for (const s of sources) s.close();
  }
}

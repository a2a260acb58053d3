// Outputs: the plan wasm writes (heap bytes and ranges of the sources), assembled here: in memory
// (one Uint8Array, or a Blob of parts, the computed ones optionally spilled to the origin private
// file system), or in node as files written to temporaries and renamed into place (writePlan).
import { OnnxfoldError } from './errors.js';
import { isBlob, readRange } from './sources.js';

// Each output file arrives as kind 0 (its size), then pieces: heap bytes (kind 1) and ranges of
// input sources (kind 2). `mode` says what a finished file becomes:
//   'bytes': one Uint8Array (ranges copied from their sources);
//   'blob':  a Blob of parts (heap bytes copied out, or written to `spill`; ranges as Blob
//            slices, not read at all).
export function memoryOutput(M, sources, mode, spill) {
  const files = new Map();
  return {
    start(location, size) {
      files.set(
        location,
        mode === 'bytes' ? { bytes: new Uint8Array(size), size: 0 } : { parts: [], size: 0 },
      );
    },
    heap(location, ptr, len) {
      const f = files.get(location);
      if (mode === 'bytes') {
        if (f.size + len > f.bytes.length)
          throw new OnnxfoldError(`output '${location}' is larger than announced`);
        f.bytes.set(M.HEAPU8.subarray(ptr, ptr + len), f.size);
      } else if (spill) {
        const at = spill.write(M.HEAPU8.subarray(ptr, ptr + len));
        // Heap pieces of one file in a row are one slice of the spill file.
        const last = f.parts[f.parts.length - 1];
        if (last instanceof SpillRange && last.end === at) last.end += len;
        else f.parts.push(new SpillRange(at, at + len));
      } else {
        f.parts.push(M.HEAPU8.slice(ptr, ptr + len));
      }
      f.size += len;
    },
    range(location, id, offset, len) {
      const f = files.get(location);
      const src = sources[id];
      if (mode === 'bytes') {
        if (f.size + len > f.bytes.length)
          throw new OnnxfoldError(`output '${location}' is larger than announced`);
        src.read(offset, len, f.bytes, f.size);
      } else {
        f.parts.push(src.part ? src.part(offset, len) : readRange(src, offset, len));
      }
      f.size += len;
    },
    take(location) {
      const f = files.get(location);
      if (mode === 'bytes') return f ? f.bytes.subarray(0, f.size) : new Uint8Array(0);
      const parts = f ? f.parts.map((p) => (p instanceof SpillRange ? spill.slice(p.start, p.end) : p)) : [];
      return new Blob(parts, { type: 'application/octet-stream' });
    },
    locations: () => [...files.keys()],
    commit() {},
    discard() {},
  };
}

class SpillRange {
  constructor(start, end) {
    this.start = start;
    this.end = end;
  }
}

// options.spill: the computed bytes of a Blob result go to a new file in that folder of the
// origin private file system instead of JS memory, so a result of several GB (float16 of a
// 1B decoder) is held on disk; the result's parts are slices of that file. host.output is
// synchronous, so the writes need a FileSystemSyncAccessHandle: dedicated Workers only. The
// file stays as long as the caller keeps it (the results read from it); removed on failure.
export const canSpill = () =>
  typeof FileSystemFileHandle === 'function' &&
  typeof FileSystemFileHandle.prototype.createSyncAccessHandle === 'function';

export async function openSpill(dir, what) {
  const name = `onnxfold-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}.bin`;
  const handle = await dir.getFileHandle(name, { create: true });
  let access;
  try {
    access = await handle.createSyncAccessHandle();
  } catch (e) {
    await dir.removeEntry(name).catch(() => {});
    throw new OnnxfoldError(`${what}: options.spill: cannot write '${name}' in the folder: ${e.message}`, {
      cause: e,
    });
  }
  let size = 0;
  let file = null;
  return {
    name,
    get size() {
      return size;
    },
    write(bytes) {
      const at = size;
      for (let done = 0; done < bytes.length;) {
        const n = access.write(bytes.subarray(done), { at: at + done });
        if (!(n > 0)) throw new OnnxfoldError(`options.spill: '${name}' took no more bytes at ${at + done}`);
        done += n;
      }
      size += bytes.length;
      return at;
    },
    // After the call: the file is complete and read only through its snapshot.
    async finish() {
      access.flush();
      access.close();
      file = await handle.getFile();
      if (file.size !== size)
        throw new OnnxfoldError(`${what}: options.spill: '${name}' has ${file.size} of ${size} bytes`);
    },
    slice: (start, end) => file.slice(start, end),
    async remove() {
      try {
        access.close();
      } catch {
        /* closed */
      }
      await dir.removeEntry(name).catch(() => {});
    },
  };
}

// Node: each output file is written as the plan comes, to a temporary name renamed into place
// once everything succeeded (a failed run leaves no partial files). Ranges of input files are
// copied file to file through one 16 MiB buffer, never through the wasm heap.
export function fileOutput(M, sources, fs, path, plan, targets) {
  const open = new Map(); // location -> { fd, tmp, target }
  let copyBuffer;
  const fileFor = (location) => {
    const f = open.get(location);
    if (!f) throw new OnnxfoldError(`output '${location}' was not started`);
    return f;
  };
  const writeAll = (fd, bytes, off, len) => {
    for (let done = 0; done < len;)
      done += fs.writeSync(fd, bytes, off + done, Math.min(len - done, 1 << 30));
  };
  return {
    start(location) {
      const target = targets(location);
      const tmp = path.join(
        path.dirname(target),
        `.${path.basename(target)}.tmp-${process.pid}-${open.size}`,
      );
      open.set(location, { fd: fs.openSync(tmp, 'wx'), tmp, target });
    },
    heap(location, ptr, len) {
      writeAll(fileFor(location).fd, M.HEAPU8, ptr, len);
    },
    range(location, id, offset, len) {
      const f = fileFor(location);
      const src = sources[id];
      copyBuffer ??= Buffer.allocUnsafe(1 << 24);
      for (let done = 0; done < len;) {
        const n = Math.min(len - done, copyBuffer.length);
        src.read(offset + done, n, copyBuffer, 0);
        writeAll(f.fd, copyBuffer, 0, n);
        done += n;
      }
    },
    // `extra`: more [temporary, target] renames (the report), after the model. `isModel`: which
    // locations are models (optimize's is ''; variants' are their file names).
    commit(extra = [], isModel = (location) => location === '') {
      for (const f of open.values()) fs.closeSync(f.fd);
      // Data files first, the models last: a model never points at missing data.
      const entries = [...open.entries()].sort(([a], [b]) => isModel(a) - isModel(b));
      plan.commit([...entries.map(([, f]) => [f.tmp, f.target]), ...extra]);
    },
    discard() {
      for (const f of open.values()) {
        try {
          fs.closeSync(f.fd);
        } catch {
          /* already closed */
        }
        try {
          fs.unlinkSync(f.tmp);
        } catch {
          /* gone */
        }
      }
    },
    locations: () => [...open.keys()],
    paths: () => [...open.entries()].sort(([a], [b]) => (b === '') - (a === '')).map(([, f]) => f.target),
  };
}

// The files one call reads and writes (the native side's WritePlan, api/file_io.h). Before
// anything is written, every output is compared with every input and with the other outputs:
// by device and inode for files that exist, by real path otherwise (a new file: its folder's
// real path and its name). Outputs go to temporaries that commit() renames into place once
// all of them were written, so a failed call leaves nothing behind and never replaces a file
// the user did not name. Errors are OnnxfoldErrors starting with `what`.
export function writePlan(fs, path, what) {
  const inputs = [];
  const outputs = [];
  const fail = (message) => {
    throw new OnnxfoldError(`${what}: ${message}`);
  };
  const identify = (file, role) => {
    const e = { path: file, role, exists: false };
    const st = fs.statSync(file, { bigint: true, throwIfNoEntry: false });
    if (st) {
      Object.assign(e, {
        exists: true,
        dev: st.dev,
        ino: st.ino,
        real: fs.realpathSync(file),
        isDir: st.isDirectory(),
        isFile: st.isFile(),
      });
      return e;
    }
    const dir = path.dirname(file);
    try {
      e.real = path.join(fs.realpathSync(dir), path.basename(file));
    } catch (err) {
      fail(`${role} '${file}': cannot use its folder '${dir}': ${err.message}`);
    }
    return e;
  };
  const same = (a, b) => (a.exists && b.exists ? a.dev === b.dev && a.ino === b.ino : a.real === b.real);
  const collision = (out, other, verb) =>
    `${out.role} '${out.path}' is ${verb}${other.role}${other.path === out.path ? '' : ` '${other.path}'`}`;
  const NEVER = '; onnxfold never overwrites its input';
  return {
    addInput(file, role) {
      if (!fs.existsSync(file)) return; // nothing to overwrite; reading it will fail
      const input = identify(file, role);
      for (const out of outputs) if (same(out, input)) fail(collision(out, input, 'the ') + NEVER);
      inputs.push(input);
    },
    addOutput(file, role) {
      const out = identify(file, role);
      if (out.exists && !out.isFile)
        fail(`${role} '${file}' is ${out.isDir ? 'a directory' : 'not a regular file'}`);
      for (const input of inputs) if (same(out, input)) fail(collision(out, input, 'the ') + NEVER);
      for (const other of outputs) if (same(out, other)) fail(collision(out, other, 'also the '));
      outputs.push(out);
    },
    // Renames [temporary, target] pairs in order; the targets must have been added.
    commit(renames) {
      // Checked again just before: a folder made since would stop the renames half-way.
      for (const [, target] of renames) {
        if (fs.statSync(target, { throwIfNoEntry: false })?.isDirectory()) {
          fail(`${outputs.find((o) => o.path === target)?.role ?? 'output'} '${target}' is a directory`);
        }
      }
      const done = [];
      try {
        for (const [tmp, target] of renames) {
          fs.renameSync(tmp, target);
          done.push(target);
        }
      } catch (e) {
        // Take back the files this call created (a file it replaced cannot be brought back).
        for (const target of done) {
          if (!outputs.find((o) => o.path === target)?.exists) fs.rmSync(target, { force: true });
        }
        throw e;
      }
    },
  };
}

// 'blob' when any input is a Blob (the result can then refer to its slices without reading them).
export function outputMode(bytes, options) {
  if (options && options.output) return options.output;
  if (options && options.spill) return 'blob';
  const given = Object.values((options && options.externalData) || {});
  return [bytes, ...given].some(isBlob) ? 'blob' : 'bytes';
}

// Sources: the files a call reads (the model and its external data), as bytes in memory, Blobs
// (read range by range with FileReaderSync in a Worker) or, in node, file paths (fs.readSync on
// descriptors shared by file, at most MAX_OPEN_FILES open).
import { OnnxfoldError, describe } from './errors.js';
import { isNode, nodeModule } from './module.js';

function asView(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (
    bytes instanceof ArrayBuffer ||
    (typeof SharedArrayBuffer === 'function' && bytes instanceof SharedArrayBuffer)
  ) {
    return new Uint8Array(bytes);
  }
  return undefined;
}

export const isBlob = (x) => typeof Blob === 'function' && x instanceof Blob;
// FileReaderSync exists in Workers only: there a Blob is read range by range, on demand.
const canReadBlobSync = () => typeof FileReaderSync === 'function';

const KINDS = 'a Uint8Array, an ArrayBuffer, a Blob or File' + (isNode ? ' or a file path' : '');

// A source: { size, read(offset, n, heap, at) (synchronous), part(offset, n) (a Blob part for
// an output that refers to this range, or undefined), close() }.
export async function openSource(data, what) {
  const view = asView(data);
  if (view) {
    return {
      size: view.length,
      read: (off, n, heap, at) => heap.set(view.subarray(off, off + n), at),
      part: (off, n) => view.subarray(off, off + n),
      close() {},
    };
  }
  if (isBlob(data)) {
    if (canReadBlobSync()) {
      const reader = new FileReaderSync();
      return {
        size: data.size,
        read(off, n, heap, at) {
          const got = new Uint8Array(reader.readAsArrayBuffer(data.slice(off, off + n)));
          if (got.length !== n)
            throw new OnnxfoldError(`${what}: read ${got.length} of ${n} bytes (did the file change?)`);
          heap.set(got, at);
          nudgeCollector(n);
        },
        part: (off, n) => data.slice(off, off + n),
        close() {},
      };
    }
    // No synchronous Blob reads here (a page's main thread, node): the bytes are read into JS
    // memory first (not into the wasm heap); outputs still refer to slices of the Blob.
    if (data.size > MAX_JS_BYTES) {
      throw new OnnxfoldError(
        `${what}: a Blob of ${gib(data.size)} cannot be read synchronously here; ` +
          `call onnxfold from a Web Worker (FileReaderSync reads it range by range)` +
          (isNode ? ', or pass a file path' : ''),
      );
    }
    const bytes = await blobBytes(data, what);
    return {
      size: bytes.length,
      read: (off, n, heap, at) => heap.set(bytes.subarray(off, off + n), at),
      part: (off, n) => data.slice(off, off + n),
      close() {},
    };
  }
  if (isNode && (typeof data === 'string' || data instanceof URL)) return openFileSource(data, what);
  throw new TypeError(`onnxfold: ${what} must be ${KINDS}, not ${describe(data)}`);
}

// Each FileReaderSync read is a new ArrayBuffer, dead once copied into the heap. V8 frees dead
// young buffers at a scavenge, which runs when its young generation fills with JS objects;
// inside one long wasm call almost none are made, so a 1B decoder's reads piled up as GBs of
// dead buffers in the Worker. A short-lived array per 16 MiB read lets the scavenges run.
let unscavenged = 0;
function nudgeCollector(n) {
  unscavenged += n;
  if (unscavenged < 16 << 20) return;
  unscavenged = 0;
  new Array(1 << 20).fill(0);
}

// The largest Uint8Array engines make (V8: 2^32 - 1 elements on 64-bit hosts).
const MAX_JS_BYTES = 2 ** 32 - 1;
const gib = (n) => `${(n / 2 ** 30).toFixed(2)} GiB`;

async function blobBytes(blob, what) {
  const bytes = new Uint8Array(blob.size);
  let off = 0;
  const reader = blob.stream().getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (off + value.length > bytes.length) throw new OnnxfoldError(`${what}: the Blob grew while being read`);
    bytes.set(value, off);
    off += value.length;
  }
  if (off !== bytes.length)
    throw new OnnxfoldError(`${what}: read ${off} of the Blob's ${bytes.length} bytes`);
  return bytes;
}

// The descriptors of the files sources read, by file (device and inode): at most
// MAX_OPEN_FILES stay open, the most recently read, and the others are opened again when
// read; the rule of the native side (src/api/file_io.cpp, Descriptors). A model may name
// thousands of data files, more than a process may hold open.
const MAX_OPEN_FILES = 64;
const openFiles = new Map(); // key -> { path, users, fd (null when closed) }
const recentFiles = new Map(); // keys of the files with an open fd, least recently read first

function keepOpen(key, entry) {
  recentFiles.delete(key);
  recentFiles.set(key, entry);
  for (const [k, e] of recentFiles) {
    if (recentFiles.size <= MAX_OPEN_FILES) break;
    nodeModule('fs').closeSync(e.fd);
    e.fd = null;
    recentFiles.delete(k);
  }
}

export function openFileSource(file, what) {
  const fs = nodeModule('fs');
  let fd;
  try {
    // Checked before opening: opening a FIFO for reading would wait for a writer forever.
    if (!fs.statSync(file).isFile()) throw new OnnxfoldError(`${what}: ${file} is not a regular file`);
    fd = fs.openSync(file, 'r');
  } catch (e) {
    if (e instanceof OnnxfoldError) throw e;
    throw new OnnxfoldError(`${what}: cannot open ${file}: ${e.message}`, { cause: e });
  }
  const st = fs.fstatSync(fd, { bigint: true });
  if (!st.isFile()) {
    fs.closeSync(fd);
    throw new OnnxfoldError(`${what}: ${file} is not a regular file`);
  }
  const key = `${st.dev}:${st.ino}`;
  let entry = openFiles.get(key);
  if (!entry) openFiles.set(key, (entry = { path: String(file), users: 0, fd: null }));
  entry.users += 1;
  if (entry.fd === null) entry.fd = fd;
  else fs.closeSync(fd);
  keepOpen(key, entry);
  const descriptor = () => {
    if (entry.fd === null) {
      const again = fs.openSync(entry.path, 'r');
      const now = fs.fstatSync(again, { bigint: true });
      if (`${now.dev}:${now.ino}` !== key) {
        fs.closeSync(again);
        throw new OnnxfoldError(`${what}: ${file} was replaced while onnxfold read it`);
      }
      entry.fd = again;
    }
    keepOpen(key, entry);
    return entry.fd;
  };
  let closed = false;
  return {
    size: Number(st.size),
    path: String(file),
    read(off, n, heap, at) {
      const d = descriptor();
      for (let done = 0; done < n;) {
        // At most 1 GiB per read (node's limit is 2 GiB - 1).
        const got = fs.readSync(d, heap, at + done, Math.min(n - done, 1 << 30), off + done);
        if (got === 0) throw new OnnxfoldError(`${what}: ${file} ended early (did it change?)`);
        done += got;
      }
    },
    part: undefined,
    close() {
      if (closed) return;
      closed = true;
      if (--entry.users > 0) return;
      openFiles.delete(key);
      if (entry.fd !== null) {
        recentFiles.delete(key);
        try {
          fs.closeSync(entry.fd);
        } catch {
          /* closed */
        }
      }
    },
  };
}

export function readRange(src, offset, len) {
  const bytes = new Uint8Array(len);
  src.read(offset, len, bytes, 0);
  return bytes;
}

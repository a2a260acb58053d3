// Minimal static file server for the bundled page (build/web): no dependencies, GET/HEAD only,
// correct MIME types (application/wasm lets the browser compile the module while it downloads).
// Used by scripts/serve-web, scripts/demo and the browser test.
//
//   import { serveStatic } from './serve.mjs';
//   const { url, close } = await serveStatic({ root: 'build/web', port: 0 });

import { createServer } from 'node:http';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';

export const MIME_TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.onnx': 'application/octet-stream',
};

/** Maps a URL path to a file under root, or null when it would leave root. */
function fileFor(root, urlPath) {
  let p;
  try {
    p = decodeURIComponent(urlPath.split('?')[0].split('#')[0]);
  } catch {
    return null;
  }
  if (p.includes('\0')) return null;
  if (p.endsWith('/')) p += 'index.html';
  const full = resolve(join(root, p));
  return full === root || full.startsWith(root + sep) ? full : null;
}

/**
 * Starts serving `root` on host:port (port 0 = any free port). Resolves to
 * { url, port, close() } once listening. `log` (default: nothing) receives one line per request.
 */
export function serveStatic({ root, port = 0, host = '127.0.0.1', log } = {}) {
  const rootDir = resolve(root);
  const server = createServer(async (req, res) => {
    const done = (status, body, headers = {}) => {
      res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
      res.end(req.method === 'HEAD' ? undefined : body);
      log?.(`${status} ${req.method} ${req.url}`);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      done(405, 'method not allowed\n', { allow: 'GET, HEAD' });
      return;
    }
    const file = fileFor(rootDir, new URL(req.url, 'http://x').pathname);
    if (!file) {
      done(403, 'forbidden\n');
      return;
    }
    let st;
    try {
      st = await stat(file);
    } catch {
      done(404, 'not found\n');
      return;
    }
    if (!st.isFile()) {
      done(404, 'not found\n');
      return;
    }
    res.writeHead(200, {
      'content-type': MIME_TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream',
      'content-length': st.size,
      // A rebuilt page must never be mixed with a cached older wasm module.
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
    });
    log?.(`200 ${req.method} ${req.url}`);
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    createReadStream(file).on('error', () => res.destroy()).pipe(res);
  });
  return new Promise((resolvePromise, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const actual = server.address().port;
      resolvePromise({
        url: `http://${host}:${actual}/`,
        port: actual,
        server,
        close: () => new Promise((r) => {
          server.closeAllConnections?.();
          server.close(() => r());
        }),
      });
    });
  });
}

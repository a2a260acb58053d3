// Prepended (--extern-pre-js) to the ES6 module emitted by emscripten 3.1.6, outside the module
// factory. That glue uses CommonJS `require` / `__dirname` / `__filename` on node, which do not
// exist in ES module scope; provide them. process.getBuiltinModule (node >= 20.16) avoids a
// static or dynamic import of 'node:module', so browser bundlers (esbuild) accept this file.
// In browsers and workers this block does nothing.
var require, __dirname, __filename;
if (typeof process == 'object' && process.versions && process.versions.node) {
  require = process.getBuiltinModule('module').createRequire(import.meta.url);
  __filename = require('url').fileURLToPath(import.meta.url);
  __dirname = require('path').dirname(__filename);
}

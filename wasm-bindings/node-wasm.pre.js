// --pre-js: runs inside the module factory, before ENVIRONMENT_IS_NODE is assigned, hence its own
// check. On node, emscripten 3.1.6 would fetch() the .wasm, which node's fetch cannot do for files;
// read it from beside this module instead. `_scriptDir` is import.meta.url in ES6 mode (import.meta
// itself must not appear in a pre-js: 3.1.6's terser crashes on it). Callers may still pass their
// own wasmBinary / instantiateWasm.
if (typeof process == 'object' && process.versions && process.versions.node &&
    !Module['wasmBinary'] && !Module['instantiateWasm']) {
  Module['wasmBinary'] = require('fs').readFileSync(new URL('onnxfold.wasm', _scriptDir));
}

// Web Worker: lays out the graph view with elkjs (layered, top to bottom). Its own bundle, so
// elk (about 1.5 MB) is fetched only when the user opens the graph view, and a layout of a few
// thousand nodes never blocks the page. Protocol as worker.js: { id, op: 'layout', args: { graph } }
// -> { id, type: 'result', value: laid-out graph } | { id, type: 'error', error }.
import ELK from 'elkjs/lib/elk.bundled.js';

const elk = new ELK();

self.onmessage = async ({ data: { id, op, args } }) => {
  try {
    if (op !== 'layout') throw new Error(`graph layout worker: unknown operation '${op}'`);
    const value = await elk.layout(args.graph);
    self.postMessage({ id, type: 'result', value });
  } catch (e) {
    self.postMessage({
      id,
      type: 'error',
      error: { name: e?.name ?? 'Error', message: e?.message ?? String(e) },
    });
  }
};

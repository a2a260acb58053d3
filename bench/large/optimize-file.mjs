#!/usr/bin/env node
// onnxfold's npm package in node: optimizeFile(IN, OUT) with the default pipeline; prints the
// report's memory figures (peak wasm heap, bytes read from sources) and a per-phase profile
// (report.host, timing_ms, io, the slowest passes) as JSON on stdout.
//   node bench/large/optimize-file.mjs IN OUT [--calls N]
// --calls N: N calls in this one process; the profile is the last call's, and `calls_ms` gives
// each call's wasm time: the first pays V8's compilation of the code it runs (baseline, then
// optimized in the background), the later ones run warm code.
import { optimizeFile } from '../../js/index.js';

const [input, output, flag, count] = process.argv.slice(2);
const calls = flag === '--calls' ? Number(count) : 1;
let report;
const callsMs = [];
for (let i = 0; i < calls; i++) {
  ({ report } = await optimizeFile(input, output));
  callsMs.push(report.host.call_ms);
}
// The per-phase profile: module load (JS), the C++ stages, host I/O (JS callbacks) and the
// C++ side's source reads and sink writes, and the slowest passes (summed over iterations).
const passMs = {};
for (const p of report.passes) passMs[p.pass] = (passMs[p.pass] ?? 0) + p.ms;
const profile = {
  compile_ms: report.host.compile_ms,
  instantiate_ms: report.host.instantiate_ms,
  call_ms: report.host.call_ms,
  ...Object.fromEntries(Object.entries(report.timing_ms).map(([k, v]) => [`${k}_ms`, v])),
  source_read_ms: report.io.source_read_ms,
  write_source_read_ms: report.io.write_source_read_ms,
  sink_write_ms: report.io.sink_write_ms,
  sink_write_bytes: report.io.sink_write_bytes,
  host_read_ms: report.host.read_ms,
  host_read_bytes: report.host.read_bytes,
  host_reads: report.host.reads,
  host_write_ms: report.host.write_ms,
  host_write_bytes: report.host.write_bytes,
  host_copy_bytes: report.host.copy_bytes,
  passes: Object.fromEntries(
    Object.entries(passMs)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5),
  ),
};
process.stdout.write(
  JSON.stringify({
    ...report.memory,
    nodes: [report.before.nodes, report.after.nodes],
    profile,
    ...(calls > 1 ? { calls_ms: callsMs } : {}),
  }) + '\n',
);

// Shrinks a model spec (gen.mjs) while a finding persists: drop graph outputs, then cut nodes one
// by one (their results become graph inputs, or constants holding the values ORT computed for
// them on the seeded inputs), removing whatever no output needs, until nothing more goes.
//
//   const small = await minimize(spec, async (s) => stillFails(s));
//
// Specs of either generator (gen.mjs, gen-qdq.mjs: `quant` is kept, so a QDQ model is checked in
// its own modes and tolerance all along); an integer value (a QuantizeLinear's) is only ever cut
// into a constant, never into a random input.
import { buildModel } from '../../node/onnx-builder.mjs';
import { makeInputs } from '../../node/oracle.mjs';
import { createSession } from './check.mjs';

const clone = (spec) => ({ ...spec, inputs: [...spec.inputs], outputs: [...spec.outputs],
  initializers: [...spec.initializers], nodes: [...spec.nodes] });

/** Removes the nodes, initializers and inputs no graph output needs. */
export function prune(spec) {
  const need = new Set(spec.outputs.map((o) => o.name));
  const nodes = [];
  for (const n of [...spec.nodes].reverse()) {
    if (!n.outputs.some((o) => need.has(o))) continue;
    nodes.push(n);
    for (const i of [...n.inputs, ...(n.implicit ?? [])]) if (i) need.add(i);   // implicit: read by a body
  }
  const s = clone(spec);
  s.nodes = nodes.reverse();
  s.initializers = spec.initializers.filter((t) => need.has(t.name));
  s.inputs = spec.inputs.filter((i) => need.has(i.name));
  s.ops = [...new Set(s.nodes.map((n) => n.op))].sort();
  return s;
}

// Every value's contents on the oracle's seeded inputs, computed by ORT (null if it cannot).
async function valuesOf(spec) {
  const names = spec.nodes.flatMap((n) => n.outputs).filter((n) => n && spec.types[n]);
  const probe = { ...spec, outputs: names.map((name) => ({ name, type: spec.types[name].type })) };
  try {
    const s = await createSession(buildModel(probe));
    try {
      return await s.run(makeInputs(s, { seed: 1, dims: spec.dims }));
    } finally {
      await s.release();
    }
  } catch {
    return null;
  }
}

// The node at `index` removed; its results become inputs ('input') or constants ('const').
function cut(spec, index, how, values) {
  const node = spec.nodes[index];
  const s = clone(spec);
  s.nodes.splice(index, 1);
  for (const o of node.outputs) {
    if (!o) continue;
    const { type, shape } = spec.types[o];
    if (how === 'input') {
      s.inputs.push({ name: o, type, shape });
    } else {
      const t = values?.[o];
      if (!t || t.dims.join() !== shape.join()) return null;
      s.initializers.push({ name: o, type, dims: shape, data: t.data });
    }
  }
  return prune(s);
}

// The node at `index` removed, its readers reading its first input instead (when that has the
// type and shape of its result, the others unread and no body reads it).
function bypass(spec, index) {
  const node = spec.nodes[index];
  const [out, ...rest] = node.outputs;
  const src = node.inputs[0];
  if (!src || !out || spec.types[src]?.type !== spec.types[out]?.type) return null;
  if (spec.types[src].shape.join() !== spec.types[out].shape.join()) return null;
  const readers = spec.nodes.flatMap((n) => [...n.inputs, ...(n.implicit ?? [])]);
  if (rest.some((o) => o && readers.includes(o)) || spec.nodes.some((n) => n.implicit?.includes(out))) return null;
  if (spec.outputs.some((o) => rest.includes(o.name))) return null;
  const s = clone(spec);
  s.nodes = spec.nodes.filter((_, i) => i !== index).map((n) => ({ ...n, inputs: n.inputs.map((x) => (x === out ? src : x)) }));
  s.outputs = spec.outputs.filter((o) => o.name !== out || !spec.outputs.some((p) => p.name === src));
  if (s.outputs.some((o) => o.name === out)) {   // a graph output keeps its name: an Identity
    s.nodes.push({ op: 'Identity', inputs: [src], outputs: [out] });
  }
  return prune(s);
}

/**
 * The smallest spec found for which `fails(spec)` stays true (greedy; at most `budget` checks).
 * Values cut into inputs are only floats: random integers could divide by zero or index out of
 * range, which would be another finding, or none.
 */
export async function minimize(spec, fails, { budget = 400 } = {}) {
  let best = prune(spec);
  let checks = 0;
  // Every accepted step makes the model smaller: fewer nodes, or (outputs phase) fewer outputs.
  const attempt = async (s) => {
    if (!s || checks >= budget) return false;
    if (s.nodes.length >= best.nodes.length && s.outputs.length >= best.outputs.length) return false;
    checks++;
    if (!(await fails(s))) return false;
    best = s;
    return true;
  };
  for (let i = best.outputs.length - 1; i >= 0 && best.outputs.length > 1; i--) {
    const s = clone(best);
    s.outputs.splice(i, 1);
    await attempt(prune(s));
  }
  for (let progress = true; progress && checks < budget;) {
    progress = false;
    const values = await valuesOf(best);
    for (let i = 0; i < best.nodes.length && checks < budget; i++) {
      const node = best.nodes[i];
      const floats = node.outputs.every((o) => !o || best.types[o]?.type === 'float32');
      if (await attempt(bypass(best, i)) || (floats && await attempt(cut(best, i, 'input'))) ||
          await attempt(cut(best, i, 'const', values))) {
        progress = true;   // start over: indices moved, and new inputs change the seeded values
        break;
      }
    }
  }
  return { spec: best, checks };
}

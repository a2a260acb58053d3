// Size budget explorer. The report lists each fold the size budget refused with the bytes it
// would add and the nodes it would remove (not_folded[].would_add_bytes, .would_remove_nodes:
// the node and those feeding only it), so the former are the budgets at which the result
// changes. "Explore" optimizes the model at each of them (at most MAX_POINTS, spread over the
// range) and plots the nodes left against the output's size; picking a point puts its budget in
// the form and runs the optimizer with it, which gives exactly the plotted result (the
// optimizer is deterministic). One budget serves both kinds of fold: sizeBudget and
// constructorBudget (Range, ConstantOfShape, Expand, ... have a smaller default of their own).
//
//   const budget = setupBudget({ client, getModel, readOptions, setBudget, run })
//   budget.setResult(model, options, result)   after each optimize; null hides the section

import { humanBytes } from './dom.js';

const MAX_POINTS = 12;
const $ = (sel) => document.querySelector(sel);
const SVG = 'http://www.w3.org/2000/svg';

const sizeOf = (b) => (b instanceof Blob ? b.size : b.byteLength);
const outputBytes = (result) =>
  sizeOf(result.model) + Object.values(result.externalData ?? {}).reduce((a, b) => a + sizeOf(b), 0);

// The budgets worth trying: each refused fold's size, at most `max` of them spread evenly
// (always the largest, which lets every refused fold happen).
export function candidateBudgets(refused, max = MAX_POINTS) {
  const sizes = [...new Set(refused)].sort((a, b) => a - b);
  if (sizes.length <= max) return sizes;
  const picked = new Set();
  for (let i = 1; i <= max; ++i) picked.add(sizes[Math.round((i * sizes.length) / max) - 1]);
  return [...picked].sort((a, b) => a - b);
}

export function setupBudget({ client, getModel, readOptions, setBudget, run }) {
  const section = $('#budget');
  const status = $('#budget-status');
  let base = null; // { model, options, point, refused }
  let exploring = false;

  function setResult(model, options, result) {
    base = null;
    section.hidden = !model;
    $('#budget-plot').replaceChildren();
    $('#budget-points tbody').replaceChildren();
    $('#budget-table').hidden = true;
    if (!model) return;
    const notes = (result.report.not_folded ?? []).filter(
      (n) => Number.isFinite(n.would_add_bytes) && n.would_add_bytes >= 0,
    );
    const refused = notes.map((n) => n.would_add_bytes);
    const removes = notes.map((n) => n.would_remove_nodes).filter(Number.isFinite);
    const point = {
      budget: options.sizeBudget ?? 1024,
      bytes: outputBytes(result),
      nodes: result.report.after?.nodes ?? 0,
      current: true,
    };
    base = { model, options, point, refused };
    $('#budget-explore').disabled = refused.length === 0;
    status.textContent =
      refused.length === 0
        ? 'The size budget refused no fold: a larger budget would change nothing.'
        : `The size budget refused ${refused.length} fold${refused.length > 1 ? 's' : ''}, ` +
          `each adding ${humanBytes(Math.min(...refused))} to ${humanBytes(Math.max(...refused))}` +
          (removes.length ? ` and removing ${Math.min(...removes)} to ${Math.max(...removes)} nodes.` : '.');
  }

  async function explore() {
    if (!base || exploring) return;
    const { model, options } = base;
    const budgets = candidateBudgets(base.refused).filter((b) => b > (options.sizeBudget ?? 1024));
    const points = [base.point];
    exploring = true;
    $('#budget-explore').disabled = true;
    section.setAttribute('aria-busy', 'true');
    try {
      for (const [i, budget] of budgets.entries()) {
        status.textContent = `Optimizing at budget ${budget} bytes (${i + 1} of ${budgets.length})…`;
        const result = await client.call('optimize', {
          bytes: model.bytes,
          externalData: model.externalData,
          options: { ...options, sizeBudget: budget, constructorBudget: budget },
        });
        if (getModel() !== model) return; // another model was loaded meanwhile
        points.push({ budget, bytes: outputBytes(result), nodes: result.report.after?.nodes ?? 0 });
      }
      status.textContent = `${points.length} budgets: pick one to optimize with it.`;
      render(points);
    } catch (e) {
      status.textContent = e.name === 'AbortError' ? 'Cancelled.' : `Exploring failed: ${e.message}`;
    } finally {
      exploring = false;
      section.removeAttribute('aria-busy');
      $('#budget-explore').disabled = !base;
    }
  }

  function pick(point) {
    setBudget(point.budget);
    document.body.dataset.budgetPicked = JSON.stringify(point);
    run();
  }

  // Nodes left (y) against the output's size (x): a step to the right is bytes spent, a step
  // down nodes saved. Each point is a button too (keyboard, screen readers); the table says
  // the same in words.
  function render(points) {
    const w = 560,
      h = 240,
      pad = 48;
    const xs = points.map((p) => p.bytes),
      ys = points.map((p) => p.nodes);
    const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
    const [y0, y1] = [Math.min(...ys), Math.max(...ys)];
    const sx = (v) => pad + (x1 > x0 ? ((v - x0) / (x1 - x0)) * (w - 2 * pad) : (w - 2 * pad) / 2);
    const sy = (v) => h - pad + (y1 > y0 ? -((v - y0) / (y1 - y0)) * (h - 2 * pad) : -(h - 2 * pad) / 2);
    const node = (tag, attrs, text) => {
      const e = document.createElementNS(SVG, tag);
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
      if (text) e.textContent = text;
      return e;
    };
    const svg = node('svg', {
      viewBox: `0 0 ${w} ${h}`,
      role: 'group',
      'aria-label': 'Nodes left against output size, one point per budget',
    });
    svg.append(
      node('line', { x1: pad, y1: h - pad, x2: w - pad, y2: h - pad, class: 'axis' }),
      node('line', { x1: pad, y1: pad, x2: pad, y2: h - pad, class: 'axis' }),
      node('text', { x: w / 2, y: h - 10, 'text-anchor': 'middle' }, 'output size'),
      node(
        'text',
        { x: 12, y: h / 2, transform: `rotate(-90 12 ${h / 2})`, 'text-anchor': 'middle' },
        'nodes',
      ),
      node('text', { x: pad, y: h - pad + 16 }, humanBytes(x0)),
      node('text', { x: w - pad, y: h - pad + 16, 'text-anchor': 'end' }, humanBytes(x1)),
      node('text', { x: pad - 6, y: h - pad, 'text-anchor': 'end' }, String(y0)),
      node('text', { x: pad - 6, y: pad + 4, 'text-anchor': 'end' }, String(y1)),
    );
    const sorted = [...points].sort((a, b) => a.budget - b.budget);
    svg.append(
      node('polyline', {
        class: 'curve',
        points: sorted.map((p) => `${sx(p.bytes)},${sy(p.nodes)}`).join(' '),
      }),
    );
    const tbody = $('#budget-points tbody');
    tbody.replaceChildren();
    for (const p of sorted) {
      const label = `budget ${p.budget} bytes: ${p.nodes} nodes, ${humanBytes(p.bytes)}`;
      const dot = node('circle', {
        cx: sx(p.bytes),
        cy: sy(p.nodes),
        r: 7,
        tabindex: 0,
        role: 'button',
        class: p.current ? 'point current' : 'point',
        'aria-label': `Optimize with ${label}`,
        'data-budget': p.budget,
        'data-bytes': p.bytes,
        'data-nodes': p.nodes,
      });
      dot.append(node('title', {}, label));
      dot.addEventListener('click', () => pick(p));
      dot.addEventListener('keydown', (ev) => {
        if (ev.key === 'Enter' || ev.key === ' ') {
          ev.preventDefault();
          pick(p);
        }
      });
      svg.append(dot);
      const use = document.createElement('button');
      use.type = 'button';
      use.textContent = p.current ? 'Current' : 'Use';
      use.disabled = Boolean(p.current);
      use.addEventListener('click', () => pick(p));
      const row = document.createElement('tr');
      for (const text of [String(p.budget), String(p.nodes), humanBytes(p.bytes)]) {
        const td = document.createElement('td');
        td.textContent = text;
        row.append(td);
      }
      const td = document.createElement('td');
      td.append(use);
      row.append(td);
      tbody.append(row);
    }
    $('#budget-plot').replaceChildren(svg);
    $('#budget-table').hidden = false;
  }

  $('#budget-explore').addEventListener('click', explore);
  return { setResult, explore, isExploring: () => exploring, readOptions };
}

// The graph view: the model's main graph before and after optimizing, as SVG laid out by elkjs
// (in graph-layout-worker.js, fetched only when the view is first opened), with pan (drag), zoom
// (wheel, +/- buttons) and node details (click or Enter). Nodes the optimizer removed are marked
// in "before", new nodes in "after" (nodes are matched by name: graphJson's `id`). Graphs above
// NODE_LIMIT nodes, or when the user picks "By module", show the module tree as nested boxes
// instead, so the page never lays out a huge graph.
import { el, humanBytes } from './dom.js';
import { WorkerClient } from './worker-client.js';

const NODE_LIMIT = 1500;
const SVG_NS = 'http://www.w3.org/2000/svg';
const NODE_H = 28;
const $ = (sel) => document.querySelector(sel);

function svg(tag, attrs = {}) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

/** The elk graph of a graphJson view: one box per node, graph inputs and outputs, one edge per producer -> user pair. */
export function toElk(view) {
  const children = [];
  const edges = [];
  const producer = new Map();
  const width = (label) => Math.max(56, label.length * 7.2 + 18);
  view.inputs.forEach((v, i) => {
    const id = `i${i}`;
    producer.set(v.name, id);
    children.push({ id, width: width(v.name), height: NODE_H });
  });
  view.nodes.forEach((n, i) => {
    const id = `n${i}`;
    for (const o of n.outputs) if (o) producer.set(o, id);
    children.push({ id, width: width(n.op), height: NODE_H });
  });
  const seen = new Set();
  const edge = (from, to) => {
    const key = `${from}>${to}`;
    if (seen.has(key) || from === to) return;
    seen.add(key);
    edges.push({ id: `e${edges.length}`, sources: [from], targets: [to] });
  };
  view.nodes.forEach((n, i) => {
    for (const v of n.inputs) if (producer.has(v)) edge(producer.get(v), `n${i}`);
  });
  view.outputs.forEach((v, i) => {
    const id = `o${i}`;
    children.push({ id, width: width(v.name), height: NODE_H });
    if (producer.has(v.name)) edge(producer.get(v.name), id);
  });
  return {
    id: 'root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      'elk.edgeRouting': 'POLYLINE',
      'elk.spacing.nodeNode': '14',
      'elk.layered.spacing.nodeNodeBetweenLayers': '22',
      'elk.layered.thoroughness': '2',
    },
    children,
    edges,
  };
}

export function setupGraphView({ client, getNotFolded }) {
  const box = $('#graph-view');
  const canvas = box.querySelector('.graph-canvas');
  const details = $('#graph-details');
  const status = $('#graph-status');
  const layout = new WorkerClient('./graph-layout-worker.js', 'onnxfold-graph-layout', 'graph layout');
  let source = null; // { before: {bytes, externalData}, after: {bytes} }
  let views = null; // { before, after } graphJson objects, once fetched
  let token = 0; // the latest render; older ones drop their results
  const laidOut = new Map(); // 'before' | 'after' -> elk result

  const side = () => box.querySelector('input[name="graph-side"]:checked')?.value ?? 'before';
  const byModule = () => $('#graph-by-module').checked;
  const setStatus = (text) => {
    status.textContent = text;
  };

  async function fetchViews() {
    if (views) return views;
    const options = { nodeLimit: NODE_LIMIT };
    const before = await client.call('graph', {
      bytes: source.before.bytes,
      externalData: source.before.externalData,
      options,
    });
    const after = await client.call('graph', { bytes: source.after.bytes, externalData: {}, options });
    views = { before, after };
    return views;
  }

  async function render() {
    if (!source || !box.open) return;
    const mine = ++token;
    details.replaceChildren();
    try {
      setStatus('Reading the graph…');
      const { before, after } = await fetchViews();
      if (mine !== token) return;
      const which = side();
      const view = which === 'before' ? before : after;
      const other = which === 'before' ? after : before;
      if (view.level === 'modules' || byModule()) {
        renderModules(view);
        setStatus(
          view.level === 'modules'
            ? `${view.nodes_total} nodes: above ${view.node_limit}, shown by module.`
            : `${view.nodes_total} nodes, by module.`,
        );
        return;
      }
      const otherIds = other.nodes ? new Map(other.nodes.map((n) => [n.id, n])) : null;
      if (!laidOut.has(which)) {
        setStatus(`Laying out ${view.nodes.length} nodes…`);
        laidOut.set(which, await layout.call('layout', { graph: toElk(view) }));
        if (mine !== token) return;
      }
      renderSvg(view, laidOut.get(which), which, otherIds, new Set(other.initializers ?? []));
      const marked = canvas.querySelectorAll(which === 'before' ? '.gnode.removed' : '.gnode.added').length;
      const rewritten = canvas.querySelectorAll('.gnode.rewritten').length;
      setStatus(
        `${which === 'before' ? 'Before' : 'After'}: ${view.nodes.length} nodes; ` +
          (which === 'before' ? `${marked} removed by the optimizer (marked).` : `${marked} new (marked).`) +
          (rewritten
            ? ` ${rewritten} rewritten in place (another op, or other weights: fused or a pooled constant).`
            : ''),
      );
    } catch (e) {
      if (mine !== token) return;
      setStatus(`No graph: ${e.message}`);
    }
  }

  // --- SVG with pan and zoom

  let transform = { x: 0, y: 0, k: 1 };
  let viewport = null;
  const apply = () =>
    viewport?.setAttribute('transform', `translate(${transform.x},${transform.y}) scale(${transform.k})`);

  function zoomAt(factor, cx, cy) {
    const k = Math.min(4, Math.max(0.05, transform.k * factor));
    transform = {
      k,
      x: cx - ((cx - transform.x) * k) / transform.k,
      y: cy - ((cy - transform.y) * k) / transform.k,
    };
    apply();
  }

  function fit(root) {
    const w = canvas.clientWidth || 800;
    const h = canvas.clientHeight || 600;
    // Fit the whole graph, but not below a readable scale: a large graph starts at its first
    // input, centred.
    const k = Math.max(0.6, Math.min(1, w / (root.width + 20), h / (root.height + 20)));
    const first = (root.children ?? []).find((c) => c.id === 'i0') ?? root.children?.[0];
    const x =
      root.width * k <= w - 20 || !first ? (w - root.width * k) / 2 : w / 2 - (first.x + first.width / 2) * k;
    transform = { k, x, y: 10 - (root.height * k > h && first ? first.y * k : 0) };
    apply();
  }

  function centerOn(c) {
    const r = canvas.getBoundingClientRect();
    const g = viewport?.querySelector(`[data-elk="${c.id}"]`)?.getBoundingClientRect();
    if (g && g.top >= r.top && g.bottom <= r.bottom && g.left >= r.left && g.right <= r.right) return;
    const k = transform.k;
    transform = { k, x: r.width / 2 - (c.x + c.width / 2) * k, y: r.height / 2 - (c.y + c.height / 2) * k };
    apply();
  }

  function renderSvg(view, root, which, otherIds, otherInits) {
    const inits = new Set(view.initializers ?? []);
    // A node's constant inputs, by name (a folded Constant keeps its name, so it does not count).
    const weights = (n) => n.inputs.filter((v) => inits.has(v) || otherInits.has(v)).join();
    const s = svg('svg', { class: 'graph-svg', role: 'group', 'aria-label': `${which} graph` });
    viewport = svg('g', { class: 'viewport' });
    s.append(viewport);
    const edgesG = svg('g', { class: 'edges' });
    viewport.append(edgesG);
    for (const e of root.edges ?? []) {
      for (const sec of e.sections ?? []) {
        const pts = [sec.startPoint, ...(sec.bendPoints ?? []), sec.endPoint];
        edgesG.append(
          svg('path', {
            d: `M${pts.map((p) => `${p.x},${p.y}`).join('L')}`,
            'marker-end': 'url(#graph-arrow)',
          }),
        );
      }
    }
    const defs = svg('defs');
    const marker = svg('marker', {
      id: 'graph-arrow',
      viewBox: '0 0 6 6',
      refX: 6,
      refY: 3,
      markerWidth: 6,
      markerHeight: 6,
      orient: 'auto',
    });
    marker.append(svg('path', { d: 'M0,0L6,3L0,6z' }));
    defs.append(marker);
    s.prepend(defs);
    const pos = new Map((root.children ?? []).map((c) => [c.id, c]));
    const addBox = (id, label, cls, title, onPick) => {
      const c = pos.get(id);
      if (!c) return;
      const g = svg('g', { class: cls, transform: `translate(${c.x},${c.y})`, 'data-elk': id });
      g.append(svg('rect', { width: c.width, height: c.height, rx: cls.includes('io') ? 14 : 4 }));
      const t = svg('text', { x: c.width / 2, y: c.height / 2 + 4, 'text-anchor': 'middle' });
      t.textContent = label;
      const tip = svg('title');
      tip.textContent = title;
      g.append(t, tip);
      if (onPick) {
        g.setAttribute('tabindex', '0');
        g.setAttribute('role', 'button');
        g.setAttribute('aria-label', title);
        g.addEventListener('click', onPick);
        // A node reached with Tab comes into sight (keyboard users cannot drag).
        g.addEventListener('focus', () => centerOn(c));
        g.addEventListener('keydown', (ev) => {
          if (ev.key === 'Enter' || ev.key === ' ') {
            ev.preventDefault();
            onPick();
          }
        });
      }
      viewport.append(g);
    };
    view.inputs.forEach((v, i) => addBox(`i${i}`, v.name, 'gnode io', `input ${v.name}: ${v.type}`));
    view.outputs.forEach((v, i) => addBox(`o${i}`, v.name, 'gnode io', `output ${v.name}: ${v.type}`));
    view.nodes.forEach((n, i) => {
      const twin = otherIds?.get(n.id);
      const changed = otherIds && !twin;
      // Kept under its name but with another op or other weights: a fusion rewrote it (a Conv
      // that took in a BatchNormalization reads new weights). A node that only reads another
      // value (its producer was removed) is not.
      const rewritten = Boolean(twin) && (twin.op !== n.op || weights(twin) !== weights(n));
      const cls = `gnode op${changed ? (which === 'before' ? ' removed' : ' added') : ''}${rewritten ? ' rewritten' : ''}`;
      addBox(`n${i}`, n.op, cls, `${n.op} ${n.name || n.id}`, () =>
        showNode(view, n, which, changed, rewritten),
      );
    });
    canvas.classList.remove('modules');
    canvas.replaceChildren(s);
    fit(root);
  }

  function showNode(view, n, which, changed, rewritten) {
    const typeOf = (v) => view.values?.[v] ?? '?';
    const inits = new Set(view.initializers ?? []);
    const state = changed
      ? which === 'before'
        ? 'removed by the optimizer'
        : 'new (made by the optimizer)'
      : rewritten
        ? 'rewritten by the optimizer (another op, or other weights: fused or a pooled constant)'
        : 'kept';
    const rows = (names, isInput) =>
      names.map((v) =>
        el(
          'tr',
          {},
          el('td', { class: 'mono', text: v || '(none)' }),
          el('td', { class: 'mono', text: v ? typeOf(v) : '' }),
          el('td', { text: isInput && inits.has(v) ? 'initializer' : '' }),
        ),
      );
    const attrs = Object.entries(n.attributes ?? {});
    const note = !changed ? (getNotFolded() ?? []).find((x) => x.node && x.node === n.name) : null;
    canvas.querySelectorAll('.gnode.selected').forEach((g) => g.classList.remove('selected'));
    details.replaceChildren(
      ...[
        el(
          'h4',
          {},
          el('span', { class: 'mono', text: n.name || n.id }),
          ` ${n.op}${n.domain ? ` (${n.domain})` : ''}`,
        ),
        el('p', { class: 'muted', text: `${state}; module ${n.module || '(model)'}` }),
        note ? el('p', { class: 'not-folded', text: `Not folded: ${note.reason}` }) : null,
        attrs.length
          ? el(
              'table',
              {},
              el('caption', { text: 'Attributes' }),
              el(
                'tbody',
                {},
                ...attrs.map(([k, v]) =>
                  el('tr', {}, el('th', { scope: 'row', text: k }), el('td', { class: 'mono', text: v })),
                ),
              ),
            )
          : null,
        el('table', {}, el('caption', { text: 'Inputs' }), el('tbody', {}, ...rows(n.inputs, true))),
        el('table', {}, el('caption', { text: 'Outputs' }), el('tbody', {}, ...rows(n.outputs, false))),
      ].filter(Boolean),
    );
  }

  // --- Module boxes

  function renderModules(view) {
    viewport = null;
    const kids = new Map();
    for (const m of view.modules) {
      if (m.parent === null) continue;
      if (!kids.has(m.parent)) kids.set(m.parent, []);
      kids.get(m.parent).push(m);
    }
    const boxFor = (m, depth) => {
      const ops = Object.entries(m.ops ?? {}).sort((a, b) => b[1] - a[1]);
      const title = `${m.name || '(model)'}${m.class ? ` ${m.class}` : ''}`;
      return el(
        'details',
        { class: 'gmod', open: depth < 1 },
        el(
          'summary',
          {},
          el('span', { class: 'mono', text: title }),
          el('span', {
            class: 'muted',
            text: ` ${m.nodes} node${m.nodes === 1 ? '' : 's'}, ${humanBytes(m.param_bytes)}`,
          }),
        ),
        el(
          'div',
          { class: 'gops' },
          ...ops.map(([op, c]) => el('span', { class: 'gop', text: `${op} ×${c}` })),
        ),
        ...(kids.get(m.path) ?? []).map((k) => boxFor(k, depth + 1)),
      );
    };
    const root = view.modules.find((m) => m.parent === null);
    canvas.classList.add('modules');
    canvas.replaceChildren(
      el('div', { class: 'gmods' }, root ? boxFor(root, 0) : el('p', { text: 'No modules.' })),
    );
  }

  // --- Controls

  let drag = null;
  canvas.addEventListener('pointerdown', (ev) => {
    if (!viewport || ev.target.closest('.gnode')) return;
    drag = { x: ev.clientX - transform.x, y: ev.clientY - transform.y };
    canvas.setPointerCapture(ev.pointerId);
  });
  canvas.addEventListener('pointermove', (ev) => {
    if (!drag) return;
    transform = { ...transform, x: ev.clientX - drag.x, y: ev.clientY - drag.y };
    apply();
  });
  canvas.addEventListener('pointerup', () => {
    drag = null;
  });
  canvas.addEventListener(
    'wheel',
    (ev) => {
      if (!viewport) return;
      ev.preventDefault();
      const r = canvas.getBoundingClientRect();
      zoomAt(ev.deltaY < 0 ? 1.15 : 1 / 1.15, ev.clientX - r.left, ev.clientY - r.top);
    },
    { passive: false },
  );
  const center = () => [canvas.clientWidth / 2, canvas.clientHeight / 2];
  $('#graph-zoom-in').addEventListener('click', () => viewport && zoomAt(1.25, ...center()));
  $('#graph-zoom-out').addEventListener('click', () => viewport && zoomAt(1 / 1.25, ...center()));
  $('#graph-fit').addEventListener('click', () => {
    const root = laidOut.get(side());
    if (viewport && root) fit(root);
  });
  for (const r of box.querySelectorAll('input[name="graph-side"]')) r.addEventListener('change', render);
  $('#graph-by-module').addEventListener('change', render);
  box.addEventListener('toggle', render);

  return {
    /** A new result: the view shows `model` (the input) and `result.model` once opened. */
    setResult(model, result) {
      source = {
        before: { bytes: model.bytes, externalData: model.externalData },
        after: { bytes: result.model },
      };
      views = null;
      laidOut.clear();
      token++;
      box.hidden = false;
      canvas.replaceChildren();
      details.replaceChildren();
      setStatus('');
      render();
    },
  };
}

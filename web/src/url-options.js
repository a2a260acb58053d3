// Options in the URL: every option on the page is read from the query string on load and written
// back (history.replaceState) when it changes, so a link shares a setting. Only values that
// differ from the page's defaults are written, which keeps links short. Unknown keys and invalid
// values are ignored and listed in a notice.
//
//   setupUrlOptions({ fields, notice })   fields: [{ key, el, kind, label }]
//   kind: 'uint' (whole number >= 0, empty allowed), 'int' (whole number, empty allowed),
//         'number' (>= 0), 'text', 'bool', 'select',
//         'passes' (el is the fieldset of name=pass checkboxes; the value is a comma list)

const BOOL = { 1: true, true: true, yes: true, on: true, 0: false, false: false, no: false, off: false };

const kinds = {
  uint: {
    get: (el) => el.value.trim(),
    check: (v) => (v === '' || /^\d+$/.test(v) ? null : 'not a whole number'),
    set: (el, v) => {
      el.value = v;
    },
  },
  int: {
    get: (el) => el.value.trim(),
    check: (v) => (v === '' || /^-?\d+$/.test(v) ? null : 'not a whole number'),
    set: (el, v) => {
      el.value = v;
    },
  },
  number: {
    get: (el) => el.value.trim(),
    check: (v) => (v !== '' && Number.isFinite(Number(v)) && Number(v) >= 0 ? null : 'not a number >= 0'),
    set: (el, v) => {
      el.value = v;
    },
  },
  text: {
    get: (el) => el.value,
    check: () => null,
    set: (el, v) => {
      el.value = v;
    },
  },
  bool: {
    get: (el) => (el.checked ? '1' : '0'),
    check: (v) => (Object.hasOwn(BOOL, v.toLowerCase()) ? null : 'not 1 or 0'),
    set: (el, v) => {
      el.checked = BOOL[v.toLowerCase()];
    },
  },
  select: {
    get: (el) => el.value,
    check: (v, el) => {
      const values = [...el.options].map((o) => o.value);
      return values.includes(v) ? null : `not one of ${values.filter(Boolean).join(', ')}`;
    },
    set: (el, v) => {
      el.value = v;
    },
  },
  passes: {
    partial: true, // the known passes of a list apply, the unknown ones are reported
    boxes: (el) => [...el.querySelectorAll('input[name=pass]')],
    get(el) {
      return this.boxes(el)
        .filter((c) => c.checked)
        .map((c) => c.value)
        .join(',');
    },
    check(v, el) {
      const known = this.boxes(el).map((c) => c.value);
      const unknown = v
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s && !known.includes(s));
      return unknown.length ? `unknown pass${unknown.length > 1 ? 'es' : ''} ${unknown.join(', ')}` : null;
    },
    set(el, v) {
      const on = new Set(v.split(',').map((s) => s.trim()));
      for (const c of this.boxes(el)) c.checked = on.has(c.value);
    },
  },
};

function writeUrl(fields, defaults) {
  const params = new URLSearchParams();
  for (const f of fields) {
    const v = kinds[f.kind].get(f.el);
    if (v !== defaults.get(f.key)) params.set(f.key, v);
  }
  const query = params.toString().replaceAll('%2C', ','); // commas stay readable in pass lists
  const url = `${location.pathname}${query ? `?${query}` : ''}${location.hash}`;
  if (url !== `${location.pathname}${location.search}${location.hash}`)
    history.replaceState(history.state, '', url);
}

/**
 * Applies the URL's options to the fields and keeps the URL in sync from then on. Call it once
 * the fields exist (the pass checkboxes come from the optimizer). Returns the ignored entries.
 */
export function setupUrlOptions({ fields, notice }) {
  const defaults = new Map(fields.map((f) => [f.key, kinds[f.kind].get(f.el)]));
  const ignored = [];
  for (const [key, value] of new URLSearchParams(location.search)) {
    const f = fields.find((x) => x.key === key);
    if (!f) {
      ignored.push(`${key} (unknown option)`);
      continue;
    }
    const why = kinds[f.kind].check(value, f.el);
    if (why) ignored.push(`${key}=${value} (${f.label}: ${why})`);
    if (!why || kinds[f.kind].partial) kinds[f.kind].set(f.el, value);
  }
  if (ignored.length && notice) {
    notice.textContent = `Ignored from the link: ${ignored.join('; ')}.`;
    notice.hidden = false;
  }
  writeUrl(fields, defaults);
  const update = () => writeUrl(fields, defaults);
  for (const f of fields) {
    f.el.addEventListener('input', update);
    f.el.addEventListener('change', update);
    // Buttons inside a field (the passes' "Default pipeline" / "None") change it without an event;
    // their own handlers run first, this one after the click bubbles up.
    f.el.addEventListener('click', update);
  }
  return ignored;
}

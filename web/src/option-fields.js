// The optimizer's options on the page, from the package's optionSchema() (the C++ table,
// src/api/options.cpp): a few have hand-tuned controls in index.html (friendlier help, their own
// layout), the page decides some itself, and every other one is rendered here into the
// "All options" section, so an option added to the table shows on the page without an edit.
//
//   renderOptionFields(schema, container)  -> the rendered fields [{ option, el }]
//   readRenderedOptions(fields, options)   adds the fields that are set (empty = package default)
//   renderedUrlFields(fields)              for url-options.js; the URL key is the option name
//
// Every control of an option carries data-option="<name>" (the browser test checks that each
// schema option is either a control or in PAGE_DECIDED_OPTIONS).

/** Options with a hand-tuned control in index.html: option name -> the control's selector. */
export const HAND_TUNED_OPTIONS = {
  sizeBudget: '#size-budget',
  constructorBudget: '#constructor-budget',
  growthBudget: '#growth-budget',
  preserve: '#preserve',
  quant: '#quant',
  quantize: '#quantize',
  quantFormat: '#quant-format',
  targetOpset: '#target-opset',
  float16: '#float16',
  externalDataThreshold: '#external-threshold',
};

/**
 * Options the page sets itself rather than from a field, and why.
 */
export const PAGE_DECIDED_OPTIONS = {
  // The pass checkboxes (#passes), listed from passes(); an empty list is refused by the page.
  passes: 'the pass checkboxes',
  // Named after the model (<name>.opt.onnx.data) so the download's data file matches the model.
  externalDataLocation: 'named after the model',
  // Refers to data files beside the input; the page's result is a download, never beside it.
  reuseInputData: 'not for downloads',
};

const isSet = (text) => text.trim() !== '';

function fieldId(name) {
  return `opt-${name}`;
}

function control(o) {
  const id = fieldId(o.name);
  const common = { id, 'data-option': o.name, 'aria-describedby': `${id}-help` };
  const dflt = o.default;
  if (o.type === 'boolean') {
    const input = document.createElement('input');
    Object.assign(input, { type: 'checkbox', checked: Boolean(dflt) });
    return attrs(input, common);
  }
  if (o.type === 'string' && o.values?.length) {
    const select = document.createElement('select');
    const values = dflt === '' ? ['', ...o.values] : o.values;
    for (const v of values) {
      const opt = document.createElement('option');
      opt.value = v;
      opt.textContent = v === '' ? 'default (off)' : v === dflt ? `${v} (default)` : v;
      select.append(opt);
    }
    select.value = dflt;
    return attrs(select, common);
  }
  if (o.type === 'object') {
    const area = document.createElement('textarea');
    Object.assign(area, {
      rows: 2,
      placeholder: 'KEY=VALUE, one per line',
      autocomplete: 'off',
      spellcheck: false,
    });
    return attrs(area, common);
  }
  const input = document.createElement('input');
  if (o.type === 'integer') {
    Object.assign(input, { type: 'number', step: 1, placeholder: String(dflt) });
  } else {
    const shown = Array.isArray(dflt) ? dflt.join(', ') : dflt;
    Object.assign(input, {
      type: 'text',
      autocomplete: 'off',
      placeholder: shown || (o.type === 'string[]' ? 'comma-separated' : ''),
    });
  }
  return attrs(input, common);
}

function attrs(node, map) {
  for (const [k, v] of Object.entries(map)) node.setAttribute(k, v);
  return node;
}

/** Renders every schema option not hand-tuned nor decided by the page into `container`. */
export function renderOptionFields(schema, container) {
  const fields = [];
  for (const o of schema) {
    if (Object.hasOwn(HAND_TUNED_OPTIONS, o.name) || Object.hasOwn(PAGE_DECIDED_OPTIONS, o.name)) continue;
    const input = control(o);
    const label = document.createElement('label');
    label.setAttribute('for', input.id);
    const code = document.createElement('code');
    code.textContent = o.name;
    label.append(code);
    const help = document.createElement('p');
    help.id = `${input.id}-help`;
    help.className = 'help';
    help.textContent = `${o.help} (${o.flag})`;
    const div = document.createElement('div');
    div.className = 'field';
    if (o.type === 'boolean') {
      const check = document.createElement('div');
      check.className = 'check';
      check.append(input, label);
      div.append(check, help);
    } else {
      div.append(label, input, help);
    }
    container.append(div);
    fields.push({ option: o, el: input });
  }
  return fields;
}

/** Adds to `options` each rendered field that is set; throws a message naming a bad value. */
export function readRenderedOptions(fields, options) {
  for (const { option: o, el } of fields) {
    const { name, type } = o;
    if (type === 'boolean') {
      if (el.checked !== Boolean(o.default)) options[name] = el.checked;
    } else if (type === 'integer') {
      const text = el.value.trim();
      if (!isSet(text)) continue;
      const n = Number(text);
      if (!Number.isSafeInteger(n)) throw new Error(`${name} must be a whole number, got '${text}'.`);
      options[name] = n;
    } else if (type === 'string[]') {
      const list = el.value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      if (list.length) options[name] = list;
    } else if (type === 'object') {
      const lines = el.value
        .split('\n')
        .map((s) => s.trim())
        .filter(Boolean);
      if (!lines.length) continue;
      const obj = {};
      for (const line of lines) {
        const eq = line.indexOf('=');
        if (eq <= 0) throw new Error(`${name}: expected KEY=VALUE, got '${line}'.`);
        obj[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
      }
      options[name] = obj;
    } else if (el.value !== o.default && el.value !== '') {
      options[name] = el.value;
    }
  }
  return options;
}

const URL_KIND = { boolean: 'bool', integer: 'int', 'string[]': 'text', object: 'text' };

/** The rendered fields for url-options.js, each under its option's name. */
export function renderedUrlFields(fields) {
  return fields.map(({ option: o, el }) => ({
    key: o.name,
    el,
    kind: URL_KIND[o.type] ?? (el.tagName === 'SELECT' ? 'select' : 'text'),
    label: o.name,
  }));
}

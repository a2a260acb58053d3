#!/usr/bin/env node
// `npx onnxfold`: the native CLI's commands (info, check, optimize, variants, passes) over the
// WebAssembly module, so no native build is needed. The optimizer's flags come from the one
// option table (optionSchema(), api/options.cpp), as the native CLI's do.
import { parseArgs } from 'node:util';
import * as onnxfold from '../js/index.js';
import { worstOutput } from '../js/accuracy.js';

const USAGE = `usage: onnxfold <command> [options]

commands:
  info MODEL [--json]                 summarize a model; exit 1 if it is invalid
  check MODEL                         check a model against ONNX's rules; exit 1 if invalid
  optimize INPUT -o OUTPUT [flags]    optimize a model (--report FILE, -q, and the flags below)
  variants INPUT --out DIR [flags]    write the variants transformers.js loads (--dtypes, --name)
                                      --accuracy [--seed N]: each against INPUT (onnxruntime-node)
  passes                              list the passes and the default pipeline

Run 'onnxfold optimize --help' for the optimizer's flags.`;

class UsageError extends Error {}

// parseArgs options for the option table's flags: name -> { spec, parse }.
function tableFlags(schema) {
  const flags = {};
  for (const spec of schema) {
    const flag = spec.flag.replace(/^--/, '');
    const multiple = spec.type === 'string[]' || spec.type === 'object';
    flags[flag] = { spec, config: { type: spec.type === 'boolean' ? 'boolean' : 'string', multiple } };
  }
  return flags;
}

// The values given for table flags as the options object the npm API takes.
function optionsOf(values, flags) {
  const options = {};
  for (const [flag, { spec }] of Object.entries(flags)) {
    const v = values[flag];
    if (v === undefined) continue;
    if (spec.type === 'integer') {
      const n = Number(v);
      if (
        !/^-?\d+$/.test(v) ||
        !Number.isSafeInteger(n) ||
        (n < 0 && spec.type_help?.includes('non-negative'))
      ) {
        throw new UsageError(`${spec.flag} expects an integer, got '${v}'`);
      }
      options[spec.name] = n;
    } else if (spec.type === 'string[]') {
      options[spec.name] = v.flatMap((s) => s.split(',')).filter(Boolean);
    } else if (spec.type === 'object') {
      options[spec.name] = Object.fromEntries(
        v.map((kv) => {
          const eq = kv.indexOf('=');
          if (eq <= 0) throw new UsageError(`${spec.flag} expects KEY=VALUE, got '${kv}'`);
          return [kv.slice(0, eq), kv.slice(eq + 1)];
        }),
      );
    } else {
      options[spec.name] = v;
    }
  }
  return options;
}

function flagHelp(flags) {
  return Object.entries(flags)
    .map(
      ([flag, { spec }]) =>
        `  --${flag}${spec.type === 'boolean' ? '' : ` ${spec.type.toUpperCase()}`}\n      ${spec.help}`,
    )
    .join('\n');
}

const mib = (b) => `${(b / 2 ** 20).toFixed(2)} MiB`;

async function main(argv) {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h') {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  if (command === '--version') {
    console.log(`onnxfold ${await onnxfold.version()} (wasm)`);
    return 0;
  }
  const flags = ['optimize', 'variants'].includes(command) ? tableFlags(await onnxfold.optionSchema()) : {};
  const own = {
    info: { json: { type: 'boolean' } },
    check: {},
    passes: {},
    optimize: {
      output: { type: 'string', short: 'o' },
      report: { type: 'string' },
      quiet: { type: 'boolean', short: 'q' },
    },
    variants: {
      out: { type: 'string' },
      dtypes: { type: 'string', multiple: true },
      name: { type: 'string' },
      json: { type: 'boolean' },
      accuracy: { type: 'boolean' },
      seed: { type: 'string' },
    },
  }[command];
  if (!own) throw new UsageError(`unknown command '${command}'\n${USAGE}`);
  const config = { help: { type: 'boolean', short: 'h' }, ...own };
  for (const [flag, f] of Object.entries(flags)) config[flag] = f.config;
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options: config, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError(e.message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(`usage: onnxfold ${command} ...\n${flagHelp(flags)}`);
    return 0;
  }
  const wantOne = (what) => {
    if (positionals.length !== 1) throw new UsageError(`${command} takes one ${what}`);
    return positionals[0];
  };

  if (command === 'passes') {
    const p = await onnxfold.passes();
    console.log(
      `available passes:\n${p.available.map((n) => `  ${n}`).join('\n')}\ndefault pipeline: ${p.default.join(' ')}`,
    );
    return 0;
  }
  if (command === 'check' || command === 'info') {
    const model = wantOne('model');
    if (command === 'info') {
      process.stdout.write(
        values.json
          ? `${JSON.stringify(await onnxfold.inspect(model), null, 2)}\n`
          : await onnxfold.inspectText(model),
      );
    }
    const v = await onnxfold.validate(model);
    if (!v.valid) throw new Error(v.error);
    if (command === 'check') console.log(`${model}: valid`);
    return 0;
  }
  const options = optionsOf(values, flags);
  if (command === 'optimize') {
    const input = wantOne('input model');
    if (!values.output) throw new UsageError('optimize needs -o OUTPUT');
    const { report } = await onnxfold.optimizeFile(input, values.output, {
      ...options,
      ...(values.report && { report: values.report }),
    });
    for (const w of report.warnings ?? []) console.error(`onnxfold: warning: ${w}`);
    if (!values.quiet) {
      const b = report.before;
      const a = report.after;
      const { read, optimize, write } = report.timing_ms;
      const ms = read + optimize + write;
      console.log(
        `${values.output}: ${b.nodes} -> ${a.nodes} nodes, ${b.initializers} -> ${a.initializers} initializers, ` +
          `${mib(report.input_bytes + (report.input_external_bytes ?? 0))} -> ${mib(report.output_bytes + (report.external_bytes ?? 0))}, ${ms.toFixed(0)} ms`,
      );
    }
    return 0;
  }
  // variants
  const input = wantOne('input model');
  if (!values.out) throw new UsageError('variants needs --out DIR');
  const dtypes = values.dtypes?.flatMap((s) => s.split(',')).filter(Boolean);
  if (values.seed !== undefined && !values.accuracy)
    throw new UsageError("--seed is the seed of --accuracy's inputs: give --accuracy too");
  if (values.seed !== undefined && !/^\d+$/.test(values.seed))
    throw new UsageError(`--seed expects a non-negative integer, got '${values.seed}'`);
  const accuracy = values.accuracy && {
    ort: await onnxruntimeNode(),
    ...(values.seed !== undefined && { seed: Number(values.seed) }),
  };
  const { variants } = await onnxfold.variantsFile(input, values.out, {
    ...options,
    dtypes,
    name: values.name,
    ...(accuracy && { accuracy }),
  });
  if (values.json) {
    console.log(
      JSON.stringify(
        Object.fromEntries(
          variants.map((v) => [v.dtype, v.accuracy ? { ...v.report, accuracy: v.accuracy } : v.report]),
        ),
        null,
        2,
      ),
    );
  } else {
    const width = Math.max(4, ...variants.map((v) => v.file.length));
    const head = `${'dtype'.padEnd(6)} ${'file'.padEnd(width)} ${'bytes'.padStart(12)} ${'nodes'.padStart(8)} ${'ms'.padStart(9)}`;
    console.log(accuracy ? `${head} ${'cosine'.padStart(9)} ${'|diff|/range'.padStart(12)}` : head);
    const errors = [];
    for (const v of variants) {
      const r = v.report;
      let line = `${v.dtype.padEnd(6)} ${v.file.padEnd(width)} ${String(v.bytes).padStart(12)} ${String(r.after.nodes).padStart(8)} ${(r.timing_ms.read + r.timing_ms.optimize + r.timing_ms.write).toFixed(0).padStart(9)}`;
      if (accuracy) {
        const w = worstOutput(v.accuracy);
        if (w.error) errors.push(`${v.dtype}: ${w.error}`);
        line += ` ${(w.error ? 'error' : fmtAcc(w.cosine, 6)).padStart(9)} ${(w.error ? '' : fmtAcc(w.relRange)).padStart(12)}`;
      }
      console.log(line);
    }
    if (accuracy) {
      console.log(
        `cosine and max |diff| / range of the worst output against ${input}, both run with onnxruntime-node ` +
          `(graph optimizations off) on seeded inputs (seed ${accuracy.seed ?? 1})`,
      );
    }
    for (const e of errors) console.error(`onnxfold: accuracy: ${e}`);
  }
  return 0;
}

// onnxruntime-node is the caller's to install: the package has no dependencies.
async function onnxruntimeNode() {
  try {
    return (await import('onnxruntime-node')).default;
  } catch (e) {
    if (e?.code !== 'ERR_MODULE_NOT_FOUND') throw e;
    throw new Error(
      '--accuracy runs the models with onnxruntime-node, which is not installed: npm install onnxruntime-node',
    );
  }
}

const fmtAcc = (x, digits) =>
  x === undefined ? '–' : !Number.isFinite(x) ? String(x) : digits ? x.toFixed(digits) : x.toExponential(2);

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    console.error(`onnxfold: error: ${e.message}`);
    process.exitCode = e instanceof UsageError ? 2 : 1;
  },
);

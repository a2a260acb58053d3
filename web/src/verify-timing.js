// Verify's timings, the runtime-free part: how many loads and runs to time, their summary
// (median, quartiles, range) and how two models compare, in words. The verify worker measures;
// the page describes. Times are in milliseconds.

export const TIMING = {
  loadBudgetMs: 2000, // session creations of both models and their first runs, in all
  maxLoadRounds: 5, // a round creates each model once
  minRuns: 5, // timed runs of each model, at least
  runBudgetMs: 2000, // timed runs of both models, in all (past minRuns)
  maxRuns: 50,
  minSampleMs: 2, // a timed sample repeats a fast model's run up to this (timer resolution)
  maxReps: 1000,
  // Above this (both models with their external data) the two are timed one after the other,
  // not loaded together for interleaved runs.
  togetherLimit: 512 * 2 ** 20,
};

/** Whether another round of loads (and first runs) fits: `spentMs` so far, `lastMs` the last round's. */
export function moreLoads(rounds, spentMs, lastMs, t = TIMING) {
  return rounds < t.maxLoadRounds && spentMs + lastMs <= t.loadBudgetMs;
}

/** Whether another timed run (of each model) is due: at least minRuns, then within the budget. */
export function moreRuns(runs, spentMs, t = TIMING) {
  return runs < t.minRuns || (runs < t.maxRuns && spentMs < t.runBudgetMs);
}

/** How many runs one timed sample repeats so that it takes at least minSampleMs. */
export function repsFor(runMs, t = TIMING) {
  if (!(runMs > 0)) return t.maxReps;
  return Math.min(t.maxReps, Math.max(1, Math.ceil(t.minSampleMs / runMs)));
}

// Quantile of sorted values, linear between the closest ranks.
function quantile(sorted, q) {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/** { n, median, q1, q3, min, max, times } of a list of times. */
export function summarize(times) {
  const sorted = [...times].sort((a, b) => a - b);
  if (!sorted.length) return { n: 0, median: NaN, q1: NaN, q3: NaN, min: NaN, max: NaN, times: [] };
  return {
    n: sorted.length,
    median: quantile(sorted, 0.5),
    q1: quantile(sorted, 0.25),
    q3: quantile(sorted, 0.75),
    min: sorted[0],
    max: sorted[sorted.length - 1],
    times: [...times],
  };
}

/**
 * Original against optimized: { ratio (original / optimized median), verdict: 'faster' | 'slower' |
 * 'same', withinNoise, noise: 'iqr' | 'range' | 'none' }. The noise is the spread of each model's
 * times: the interquartile range from 5 times on, the whole range below; the two are the same
 * speed when their spreads overlap (or the ratio rounds to 1.00). One time each: no noise estimate.
 */
export function compareSpeed(original, optimized) {
  const ratio = original.median / optimized.median;
  const n = Math.min(original.n, optimized.n);
  const noise = n >= 5 ? 'iqr' : n >= 2 ? 'range' : 'none';
  const [lo, hi] = noise === 'iqr' ? ['q1', 'q3'] : ['min', 'max'];
  const withinNoise = noise !== 'none' && original[lo] <= optimized[hi] && optimized[lo] <= original[hi];
  const verdict = withinNoise || fmtRatio(ratio) === '1.00' ? 'same' : ratio > 1 ? 'faster' : 'slower';
  return { ratio, verdict, withinNoise, noise };
}

// A time in ms without its unit, three significant digits or so: '0.412', '12.1', '412'.
function msNumber(ms) {
  if (ms >= 100) return ms.toFixed(0);
  if (ms >= 10) return ms.toFixed(1);
  if (ms >= 1) return ms.toFixed(2);
  return ms.toFixed(3);
}

/** A time for people: '0.412 ms', '12.1 ms', '412 ms', '1.23 s'. */
export function fmtMs(ms) {
  if (!Number.isFinite(ms)) return '–';
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${msNumber(ms)} ms`;
}

/** A range of times in one unit: '11.9–12.4 ms', '0.98–1.21 s'. */
export function fmtRange(a, b) {
  if (!Number.isFinite(a) || !Number.isFinite(b)) return '–';
  return b >= 1000
    ? `${(a / 1000).toFixed(2)}–${(b / 1000).toFixed(2)} s`
    : `${msNumber(a)}–${msNumber(b)} ms`;
}

/** A speed ratio (>= 1): '1.03', '4.2', '12'. */
export function fmtRatio(r) {
  if (!Number.isFinite(r)) return '–';
  return r >= 10 ? r.toFixed(0) : r >= 2 ? r.toFixed(1) : r.toFixed(2);
}

/** '4.2x faster', '1.25x slower' (optimized / original), 'same speed (within noise)'. */
export function speedWords(c) {
  if (c.verdict === 'same') return c.withinNoise ? 'same speed, within noise' : 'same speed';
  return c.verdict === 'faster' ? `${fmtRatio(c.ratio)}x faster` : `${fmtRatio(1 / c.ratio)}x slower`;
}

const spreadText = (s, noise) => (noise === 'iqr' ? fmtRange(s.q1, s.q3) : fmtRange(s.min, s.max));
const counted = (a, b, what) => (a === b ? `${a} ${what} each` : `${a} and ${b} ${what}`);

/**
 * What the page shows for a worker's timings ({ mode, load, firstRun, run }, summaries): a line for session
 * creation and one for the runs, each { key, label, times ('412 ms → 98 ms'), words ('4.2x faster'),
 * details, text (the whole line), comparison (compareSpeed()) }, and a note when the two were not
 * timed alternately.
 */
export function describeTimings(t) {
  const { original: lo, optimized: lc } = t.load;
  const { original: ro, optimized: rc } = t.run;
  const load = compareSpeed(lo, lc);
  const run = compareSpeed(ro, rc);
  const [ra, rb] = [ro.reps ?? 1, rc.reps ?? 1];
  const reps =
    ra === 1 && rb === 1 ? '' : `; each time the mean of ${ra === rb ? ra : `${ra} and ${rb}`} runs in a row`;
  const spread = (c, a, b) =>
    c.noise === 'none'
      ? 'no estimate of the noise'
      : `${c.noise === 'iqr' ? 'interquartile range' : 'range'} ${spreadText(a, c.noise)} → ${spreadText(b, c.noise)}`;
  const lines = [
    {
      key: 'load',
      label: 'Load',
      comparison: load,
      times: `${fmtMs(lo.median)} → ${fmtMs(lc.median)}`,
      details:
        `${lo.n === 1 && lc.n === 1 ? 'one load each' : `median of ${counted(lo.n, lc.n, 'loads')}`}; ` +
        spread(load, lo, lc),
    },
    {
      key: 'run',
      label: 'Run',
      comparison: run,
      times: `median ${fmtMs(ro.median)} → ${fmtMs(rc.median)} over ${counted(ro.n, rc.n, 'runs')}`,
      details:
        spread(run, ro, rc) +
        reps +
        `; first run after loading ${fmtMs(t.firstRun.original.median)} → ${fmtMs(t.firstRun.optimized.median)}`,
    },
  ];
  for (const l of lines) {
    l.words = speedWords(l.comparison);
    l.text = `${l.label}: ${l.times} (${l.words}; ${l.details}).`;
  }
  const note =
    t.mode === 'apart'
      ? 'The two models were timed one after the other, not alternately: together ' +
        'they are too large to hold both.'
      : '';
  return { lines, note };
}

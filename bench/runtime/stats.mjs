// Summaries of timing samples: median, interquartile range, and a bootstrap confidence interval
// for the ratio of two medians (resampling each sample on its own, seeded so a report is
// reproducible from its samples).
import { mulberry32 } from '../../tests/node/oracle.mjs';

export function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return NaN;
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

export const median = (xs) => quantile(xs, 0.5);

export function summary(xs) {
  return {
    n: xs.length,
    median: median(xs),
    q1: quantile(xs, 0.25),
    q3: quantile(xs, 0.75),
    min: Math.min(...xs),
    max: Math.max(...xs),
  };
}

/**
 * median(a) / median(b) with a 95% bootstrap interval: above 1 means b is faster. The interval
 * says how far noise alone moves the ratio: a ratio whose interval holds 1 is no difference.
 */
export function ratioOfMedians(a, b, { resamples = 2000, seed = 1 } = {}) {
  const rand = mulberry32(seed);
  const draw = (xs) => {
    const r = new Array(xs.length);
    for (let i = 0; i < xs.length; i++) r[i] = xs[Math.floor(rand() * xs.length)];
    return median(r);
  };
  const ratios = [];
  for (let k = 0; k < resamples; k++) ratios.push(draw(a) / draw(b));
  return { ratio: median(a) / median(b), lo: quantile(ratios, 0.025), hi: quantile(ratios, 0.975) };
}

// The runtime-free part of Verify's timings (web/src/verify-timing.js): how many loads and runs,
// their summary, and the comparison in words. The page's use of it is tested in Chromium
// (tests/browser/verify-timings.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  TIMING,
  compareSpeed,
  describeTimings,
  fmtMs,
  fmtRange,
  fmtRatio,
  moreLoads,
  moreRuns,
  repsFor,
  speedWords,
  summarize,
} from '../../web/src/verify-timing.js';

test('summarize: median, quartiles (linear between ranks) and range, times kept in order', () => {
  const s = summarize([5, 1, 4, 2, 3]);
  assert.deepEqual(
    { ...s, times: undefined },
    { n: 5, median: 3, q1: 2, q3: 4, min: 1, max: 5, times: undefined },
  );
  assert.deepEqual(s.times, [5, 1, 4, 2, 3]);
  assert.equal(summarize([1, 2, 3, 4]).median, 2.5);
  assert.equal(summarize([1, 2, 3, 4]).q1, 1.75);
  assert.equal(summarize([7]).median, 7);
  assert.ok(Number.isNaN(summarize([]).median));
});

test('how many: at least minRuns, then within the budget, at most maxRuns; loads within their budget', () => {
  assert.equal(moreRuns(0, 1e9), true);
  assert.equal(moreRuns(TIMING.minRuns - 1, 1e9), true);
  assert.equal(moreRuns(TIMING.minRuns, TIMING.runBudgetMs), false);
  assert.equal(moreRuns(TIMING.minRuns, TIMING.runBudgetMs - 1), true);
  assert.equal(moreRuns(TIMING.maxRuns, 0), false);
  assert.equal(moreLoads(1, 100, 100), true);
  assert.equal(moreLoads(1, 1500, 1500), false, 'the next round would pass the budget');
  assert.equal(moreLoads(TIMING.maxLoadRounds, 0, 0), false);
  assert.equal(repsFor(10), 1);
  assert.equal(repsFor(0.5), 4);
  assert.equal(repsFor(0), TIMING.maxReps);
});

const times = (median, spread, n = 9) =>
  summarize(Array.from({ length: n }, (_, i) => median + spread * (i / (n - 1) - 0.5)));

test('compareSpeed: faster, slower, same within noise, same when the ratio shows as 1.00', () => {
  const fast = compareSpeed(times(40, 4), times(10, 1));
  assert.equal(fast.verdict, 'faster');
  assert.equal(fast.ratio, 4);
  assert.equal(speedWords(fast), '4.0x faster');
  const slow = compareSpeed(times(10, 1), times(12.5, 1));
  assert.equal(slow.verdict, 'slower');
  assert.equal(speedWords(slow), '1.25x slower');
  const noisy = compareSpeed(times(10.3, 2), times(10, 2));
  assert.deepEqual([noisy.verdict, noisy.withinNoise, noisy.noise], ['same', true, 'iqr']);
  assert.equal(speedWords(noisy), 'same speed, within noise');
  const exact = compareSpeed(times(10.001, 0), times(10, 0));
  assert.deepEqual([exact.verdict, exact.withinNoise], ['same', false]);
  assert.equal(speedWords(exact), 'same speed');
  assert.equal(
    compareSpeed(times(5, 2, 3), times(3, 0.5, 3)).noise,
    'range',
    'fewer than 5 times: the range',
  );
  const once = compareSpeed(summarize([20]), summarize([10]));
  assert.deepEqual([once.noise, once.verdict], ['none', 'faster']);
});

test('formatting', () => {
  assert.deepEqual([0.4123, 1.5, 12.14, 412.4, 1234].map(fmtMs), [
    '0.412 ms',
    '1.50 ms',
    '12.1 ms',
    '412 ms',
    '1.23 s',
  ]);
  assert.equal(fmtRange(11.94, 12.41), '11.9–12.4 ms');
  assert.equal(fmtRange(980, 1210), '0.98–1.21 s');
  assert.deepEqual([1.034, 4.21, 12.4].map(fmtRatio), ['1.03', '4.2', '12']);
});

test('describeTimings: the lines the page shows', () => {
  const run = (median, spread) => ({ ...times(median, spread, 20), reps: 1 });
  const { lines, note } = describeTimings({
    mode: 'together',
    load: { original: summarize([405, 412, 420]), optimized: summarize([95, 98, 101]) },
    firstRun: { original: summarize([30.1, 31, 29]), optimized: summarize([25.2]) },
    run: { original: run(12.1, 0.5), optimized: run(12.0, 0.5) },
  });
  assert.equal(note, '');
  assert.equal(
    lines[0].text,
    'Load: 412 ms → 98.0 ms (4.2x faster; median of 3 loads each; range 405–420 ms → 95.0–101 ms).',
  );
  assert.equal(
    lines[1].text,
    'Run: median 12.1 ms → 12.0 ms over 20 runs each (same speed, within noise; ' +
      'interquartile range 12.0–12.2 ms → 11.9–12.1 ms; first run after loading 30.1 ms → 25.2 ms).',
  );
});

test('describeTimings: one load each, timed one after the other', () => {
  const { lines, note } = describeTimings({
    mode: 'apart',
    load: { original: summarize([2400]), optimized: summarize([600]) },
    firstRun: { original: summarize([900]), optimized: summarize([850]) },
    run: {
      original: { ...summarize([0.2, 0.21, 0.2, 0.19, 0.2]), reps: 10 },
      optimized: { ...summarize([0.3, 0.31, 0.3, 0.29, 0.3, 0.3]), reps: 7 },
    },
  });
  assert.equal(
    lines[0].text,
    'Load: 2.40 s → 600 ms (4.0x faster; one load each; no estimate of the noise).',
  );
  assert.equal(
    lines[1].text,
    'Run: median 0.200 ms → 0.300 ms over 5 and 6 runs (1.50x slower; interquartile ' +
      'range 0.200–0.200 ms → 0.300–0.300 ms; each time the mean of 10 and 7 runs in a row; first run after ' +
      'loading 900 ms → 850 ms).',
  );
  assert.match(note, /one after the other/);
});

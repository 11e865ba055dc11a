// The dashboard's latency figures: samples go into fixed buckets and percentiles are read as bucket upper bounds.
import { expect } from 'chai';
import { LATENCY_BOUNDS_MS, latencyBucketOf as bucketOf, latencyPercentile as percentileOf } from '@mcp-tasks/engine';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const indexOfBound = (ms: number) => (LATENCY_BOUNDS_MS as readonly number[]).indexOf(ms);

describe('activity figures (dashboard charts)', () => {
  it('puts a duration into the first bucket whose upper bound holds it; beyond the last bound into the last', () => {
    expect(bucketOf(0)).to.equal(0);
    expect(bucketOf(5)).to.equal(0);
    expect(bucketOf(6)).to.equal(1);
    expect(bucketOf(1000)).to.equal(LATENCY_BOUNDS_MS.indexOf(1000));
    expect(bucketOf(30 * DAY)).to.equal(LATENCY_BOUNDS_MS.length - 1);
  });

  it('shows the tail: a run of hours lands in a bucket of hours, not in the last hour-long one', () => {
    expect(bucketOf(90 * 60_000)).to.equal(indexOfBound(2 * HOUR));
    expect(bucketOf(3 * HOUR)).to.equal(indexOfBound(4 * HOUR));
    expect(bucketOf(10 * HOUR)).to.equal(indexOfBound(12 * HOUR));
    expect(bucketOf(20 * HOUR)).to.equal(indexOfBound(DAY));
    // The default TASK_TTL_MAX_MS is a day: no task outlives the bounds unless an operator allows it.
    expect(LATENCY_BOUNDS_MS.at(-1)).to.be.greaterThan(DAY);
    const counts = LATENCY_BOUNDS_MS.map(() => 0);
    counts[bucketOf(800)] = 90;
    counts[bucketOf(3 * HOUR)] = 10;
    expect(percentileOf(counts, 0.5)).to.equal(1000);
    expect(percentileOf(counts, 0.95)).to.equal(4 * HOUR);
  });

  it('keeps the bounds of earlier releases at their indexes (stored fields name buckets by index)', () => {
    expect(LATENCY_BOUNDS_MS.slice(0, 16)).to.deep.equal([
      5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000,
    ]);
  });

  it('reads percentiles as the upper bound of the bucket holding the rank; none without samples', () => {
    const counts = LATENCY_BOUNDS_MS.map(() => 0);
    expect(percentileOf(counts, 0.5)).to.equal(null);
    counts[bucketOf(40)] = 90; // 90 samples at <= 50 ms
    counts[bucketOf(2000)] = 10; // 10 samples at <= 2.5 s
    expect(percentileOf(counts, 0.5)).to.equal(50);
    expect(percentileOf(counts, 0.9)).to.equal(50);
    expect(percentileOf(counts, 0.95)).to.equal(2500);
    expect(percentileOf(counts, 0.99)).to.equal(2500);
  });
});

// The dashboard's latency figures: samples go into fixed buckets and percentiles are read as bucket upper bounds.
import { expect } from 'chai';
import { LATENCY_BOUNDS_MS, latencyBucketOf as bucketOf, latencyPercentile as percentileOf } from '@mcp-tasks/engine';

describe('activity figures (dashboard charts)', () => {
  it('puts a duration into the first bucket whose upper bound holds it; beyond the last bound into the last', () => {
    expect(bucketOf(0)).to.equal(0);
    expect(bucketOf(5)).to.equal(0);
    expect(bucketOf(6)).to.equal(1);
    expect(bucketOf(1000)).to.equal(LATENCY_BOUNDS_MS.indexOf(1000));
    expect(bucketOf(10 * 3_600_000)).to.equal(LATENCY_BOUNDS_MS.length - 1);
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

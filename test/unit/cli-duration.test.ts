// Durations and tables of the operator CLI: the pure parts, without Redis.
import { expect } from 'chai';
import { formatDuration, parseDuration } from '@mcp-tasks/cli';

describe('CLI durations', () => {
  it('parses a number with a unit, and sums of them', () => {
    expect(parseDuration('500ms')).to.equal(500);
    expect(parseDuration('90s')).to.equal(90_000);
    expect(parseDuration('15m')).to.equal(900_000);
    expect(parseDuration('2h')).to.equal(7_200_000);
    expect(parseDuration('7d')).to.equal(604_800_000);
    expect(parseDuration('1w')).to.equal(604_800_000);
    expect(parseDuration('1h30m')).to.equal(5_400_000);
    expect(parseDuration('1.5s')).to.equal(1500);
  });

  it('refuses anything else and says what it accepts', () => {
    for (const text of ['', '10', 'h', '5 m', '-1s', '1h 30m', 'soon', '1y']) {
      expect(() => parseDuration(text), text).to.throw(
        /is not a duration: use a number and a unit \(ms, s, m, h, d, w\)/,
      );
    }
  });

  it('formats compactly for tables', () => {
    expect(formatDuration(42)).to.equal('42ms');
    expect(formatDuration(5_000)).to.equal('5s');
    expect(formatDuration(302_000)).to.equal('5m 2s');
    expect(formatDuration(7_380_000)).to.equal('2h 3m');
    expect(formatDuration(4 * 86_400_000 + 3_600_000)).to.equal('4d 1h');
  });
});

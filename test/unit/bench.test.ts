// The pure parts of scripts/bench: statistics, option parsing, Redis INFO parsing and the printed tables. The
// whole bench runs end to end in test/integration/bench.test.ts.
import { expect } from 'chai';
import { parseReply } from '../../scripts/bench/mcp.ts';
import { OptionsError, parseCount, parseOptions } from '../../scripts/bench/options.ts';
import { keyKind, parseCommandStats, parseInfo, storedPerTask } from '../../scripts/bench/redis-info.ts';
import {
  buildTables,
  fmt,
  fmtRatio,
  fmtSigned,
  renderReport,
  renderTable,
  type Table,
} from '../../scripts/bench/report.ts';
import type { BenchResults, ThroughputSample } from '../../scripts/bench/results.ts';
import { tallySteps, type Monitored } from '../../scripts/bench/steps.ts';
import { counterDelta, median, percentile, perSecond, ratio, summarizeLatency } from '../../scripts/bench/stats.ts';

describe('bench: statistics', () => {
  it('median of odd and even counts, ignoring non-finite values', () => {
    expect(median([3, 1, 2])).to.equal(2);
    expect(median([4, 1, 3, 2])).to.equal(2.5);
    expect(median([5, Number.NaN, 1])).to.equal(3);
    expect(median([])).to.be.NaN;
  });

  it('percentiles interpolate between closest ranks', () => {
    const values = Array.from({ length: 101 }, (_, i) => i);
    expect(percentile(values, 0)).to.equal(0);
    expect(percentile(values, 99)).to.equal(99);
    expect(percentile(values, 100)).to.equal(100);
    expect(percentile([10, 20], 50)).to.equal(15);
    expect(percentile([7], 99)).to.equal(7);
    expect(() => percentile([1], 101)).to.throw(RangeError);
    expect(summarizeLatency([1, 2, 3, 4, 100])).to.deep.equal({
      p50: 3,
      p99: percentile([1, 2, 3, 4, 100], 99),
      samples: 5,
    });
  });

  it('ratios and rates refuse to divide by nothing', () => {
    expect(ratio(1, 2)).to.equal(0.5);
    expect(ratio(1, 0)).to.be.NaN;
    expect(ratio(Number.NaN, 2)).to.be.NaN;
    expect(perSecond(500, 250)).to.equal(2000);
    expect(perSecond(1, 0)).to.be.NaN;
  });

  it('counter deltas keep what grew', () => {
    expect(counterDelta({ get: 5, set: 2 }, { get: 9, set: 2, hset: 3 })).to.deep.equal({ get: 4, hset: 3 });
  });
});

describe('bench: options', () => {
  it('defaults, --quick, and both flag spellings', () => {
    const full = parseOptions([]);
    expect(full).to.include({ quick: false, large: 100_000, jsonOnly: false, logLevel: 'info' });
    const quick = parseOptions(['--quick']);
    expect(quick.quick).to.equal(true);
    expect(quick.reps).to.be.below(full.reps);
    expect(quick.large).to.be.below(full.large);
    expect(quick.expiry).to.be.below(full.expiry);
    expect(full.only).to.include('expiry');
    const custom = parseOptions(['--quick', '--tasks=2k', '--clients', '8', '--workers', '1,3', '--only', 'reads']);
    expect(custom).to.include({ tasks: 2000, clients: 8 });
    expect(custom.workers).to.deep.equal([1, 3]);
    expect(custom.only).to.deep.equal(['reads']);
  });

  it('refuses what it does not understand, naming the flag', () => {
    expect(() => parseOptions(['--tasks', 'many'])).to.throw(OptionsError, /--tasks/);
    expect(() => parseOptions(['--nope'])).to.throw(OptionsError, /--nope/);
    expect(() => parseOptions(['--only', 'everything'])).to.throw(OptionsError, /--only/);
    expect(() => parseOptions(['--small', '10', '--large', '5'])).to.throw(OptionsError, /--large/);
    expect(() => parseOptions(['--reps'])).to.throw(OptionsError, /needs a value/);
    expect(() => parseOptions(['stray'])).to.throw(OptionsError, /stray/);
  });

  it('counts accept separators and suffixes', () => {
    expect(parseCount('100_000')).to.equal(100_000);
    expect(parseCount('100k')).to.equal(100_000);
    expect(parseCount('1.5m')).to.equal(1_500_000);
    expect(parseCount('1.5')).to.equal(undefined);
    expect(parseCount('-3')).to.equal(undefined);
  });
});

describe('bench: Redis INFO', () => {
  it('parses fields and command counts', () => {
    const text =
      '# Commandstats\r\ncmdstat_hset:calls=12,usec=40,usec_per_call=3.33\r\ncmdstat_evalsha:calls=3,usec=9\r\n';
    expect(parseCommandStats(text)).to.deep.equal({ hset: 12, evalsha: 3 });
    expect(parseInfo('# Memory\r\nused_memory:1024\r\n')).to.deep.equal({ used_memory: '1024' });
  });

  it('groups keys by kind', () => {
    expect(keyKind('p:task:786512e2-9e0d-44bd-8f29-789f320fe840')).to.equal('p:task:*');
    expect(keyKind('raw:noop:123')).to.equal('raw:noop:*');
    expect(keyKind('p:session:786512e2-9e0d-44bd-8f29-789f320fe840:events')).to.equal('p:session:*:events');
  });

  it('memory that grows with tasks leaves capped event streams out', () => {
    expect(storedPerTask({ 'task:*': 1000, expiries: 200, 'session:*:events': 800, 'tools:events': 300 })).to.equal(
      1200,
    );
  });
});

describe('bench: replies', () => {
  it('reads a JSON body or finds the response among SSE events', () => {
    expect(parseReply('{"jsonrpc":"2.0","id":3,"result":{"a":1}}', 3).result).to.deep.equal({ a: 1 });
    const sse =
      'event: message\nid: 1\ndata: {"jsonrpc":"2.0","method":"notifications/tasks/status","params":{}}\n\n' +
      'event: message\nid: 2\ndata: {"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"no"}}\n\n';
    expect(parseReply(sse, 3).error?.code).to.equal(-32602);
    expect(() => parseReply(sse, 4)).to.throw(/id 4/);
  });
});

describe('bench: report', () => {
  it('renders an aligned Markdown table', () => {
    const text = renderTable({
      title: 'T',
      columns: ['name', 'value'],
      rows: [
        ['a', '1'],
        ['longer', '1,000'],
      ],
    });
    expect(text.split('\n')).to.deep.equal([
      '### T',
      '',
      '| name   | value |',
      '| ------ | ----: |',
      '| a      |     1 |',
      '| longer | 1,000 |',
    ]);
  });

  it('formats numbers, ratios and signed differences', () => {
    expect(fmt(1234.5)).to.equal('1,235');
    expect(fmt(1.234, 2)).to.equal('1.23');
    expect(fmt(Number.NaN)).to.equal('n/a');
    expect(fmtRatio(0.5)).to.equal('0.50x');
    expect(fmtSigned(-0.25, 'ms')).to.equal('-0.25 ms');
    expect(fmtSigned(1.5, 'ms', 1)).to.equal('+1.5 ms');
  });

  it('builds every table from a run, with medians, ratios and goal verdicts', () => {
    const sample = (tasksPerSecond: number, commandsPerTask: number): ThroughputSample => ({
      tasksPerSecond,
      tasks: 100,
      commandsPerTask,
      commands: { evalsha: commandsPerTask * 100 },
      cpu: { api: 1, worker: 0.5, redis: 0.25, client: 0.2 },
    });
    const results: BenchResults = {
      machine: { cores: 2, cpu: 'CPU', node: 'v20', redis: '7.0', bullmq: '6.7.0', platform: 'linux x64' },
      options: { reps: 3, clients: 32, quick: true },
      durationSeconds: 42,
      truncated: [],
      throughput: {
        ours: [sample(500, 20), sample(600, 20), sample(700, 20)],
        raw: [sample(1000, 10), sample(1200, 10), sample(1100, 10)],
      },
      latency: {
        ours: [{ p50: 3, p99: 9, samples: 10, createP50: 1.5 }],
        raw: [{ p50: 1, p99: 4, samples: 10, createP50: 0.25 }],
      },
      reads: {
        small: 1000,
        large: 100_000,
        pageSize: 50,
        seedSeconds: 3,
        atSmall: [{ get: 1, listFirst: 2, listMiddle: 2 }],
        atLarge: [{ get: 1.1, listFirst: 2.2, listMiddle: 4 }],
      },
      footprint: {
        tasks: 100,
        resultBytes: 48,
        finished: { ours: 3000, raw: 1200, oursStored: 1900, rawStored: 1000, oursRecord: 1400, rawJob: 950 },
        waiting: { ours: 3000, raw: 700, oursStored: 2500, rawStored: 600 },
        byKind: { oursFinished: { 'task:*': 1400 }, oursWaiting: {}, rawFinished: { 'noop:*': 950 }, rawWaiting: {} },
      },
      expiry: {
        tasks: 20_000,
        workers: 2,
        intervalMs: 5000,
        samples: [
          { tasksPerSecond: 9000, secondsFromExpiry: 4, leftovers: {} },
          { tasksPerSecond: 7000, secondsFromExpiry: 3, leftovers: {} },
          { tasksPerSecond: 8000, secondsFromExpiry: 5, leftovers: {} },
        ],
      },
      scaleout: {
        primesBelow: 1_000_000,
        tasks: 50,
        points: [
          { workers: 1, ours: [10], raw: [20] },
          { workers: 2, ours: [18], raw: [30] },
        ],
      },
    };
    const tables = buildTables(results);
    expect(tables.map((table) => table.columns[0])).to.deep.equal([
      'measure',
      'side',
      'request',
      'measure',
      'worker processes',
      'process',
      'command',
    ]);
    const [comparison, , reads, expiry, scale] = tables;
    expect(comparison?.rows[0]).to.deep.equal([
      'throughput, no-op tasks, 32 clients (tasks/s)',
      '600',
      '1,100',
      '0.55x',
      '',
    ]);
    expect(comparison?.rows[1]?.slice(3)).to.deep.equal(['+2.00 ms', '']);
    expect(comparison?.rows[2]?.slice(1, 4)).to.deep.equal(['1.50', '0.25', '+1.25 ms']);
    expect(comparison?.rows.find((row) => row[0]?.startsWith('Redis memory per finished'))?.[4]).to.equal(
      '<= 2 KiB + result: ok',
    );
    expect(reads?.rows[2]?.slice(3)).to.deep.equal(['2.00x', '<= 1.5x: MISSED']);
    expect(expiry?.rows[0]?.slice(1)).to.deep.equal(['8,000', '>= 2,000 tasks/s, keyspace back to baseline: ok']);
    expect(expiry?.rows[2]?.[1]).to.equal('3/3');
    expect(scale?.rows[1]).to.deep.equal(['2', '18.0', '30.0', '0.60x', '1.80x']);
    const text = renderReport(results);
    expect(text).to.match(/^## mcp-task-runner bench: 2 cores \(CPU\)/);
    expect(text).to.include('tasks/s per core');
  });

  it('puts ours beside the bare-HTTP endpoint, the SDK peer and raw BullMQ, with the goals of issue 16', () => {
    const sample = (tasksPerSecond: number, commandsPerTask: number): ThroughputSample => ({
      tasksPerSecond,
      tasks: 100,
      commandsPerTask,
      commands: {},
      cpu: { api: 1, worker: 0.5, redis: 0.25, client: 0.2 },
    });
    const latency = (p50: number) => ({ p50, p99: p50 * 3, samples: 10, createP50: p50 / 2 });
    const results: BenchResults = {
      machine: { cores: 2, cpu: 'CPU', node: 'v20', redis: '7.0', bullmq: '6.7.0', platform: 'linux x64' },
      options: { reps: 1, clients: 20 },
      durationSeconds: 1,
      truncated: [],
      throughput: { ours: [sample(900, 54)], bare: [sample(1000, 41)], sdk: [sample(850, 0)], raw: [sample(4000, 40)] },
      latency: { ours: [latency(3)], bare: [latency(2)], sdk: [latency(2.5)], raw: [latency(1)] },
      plain: { ours: [latency(2.5)], bare: [latency(2)], sdk: [], raw: [] },
    };
    const [alternatives] = buildTables(results);
    expect(alternatives?.title).to.match(/^Ours beside the alternatives/);
    expect(alternatives?.rows[0]).to.deep.equal([
      'throughput, no-op tasks, 20 clients (tasks/s)',
      '900',
      '1,000',
      '850',
      '4,000',
      '0.90x',
      '1.06x',
      '>= 0.80x bare, >= 1.00x SDK: ok',
    ]);
    const named = (start: string) => alternatives?.rows.find((row) => row[0]?.startsWith(start));
    expect(named('plain call (no task)')?.slice(1, 3)).to.deep.equal(['2.50', '2.00']);
    expect(named('plain call (no task)')?.slice(5)).to.deep.equal(['1.25x', '', '<= 1.5x bare, <= 3 ms: ok']);
    expect(named('latency p50, create')?.slice(5)).to.deep.equal(['+1.00 ms', '+0.50 ms', '<= +1.5 ms over bare: ok']);
    expect(named('Redis commands per task')?.[7]).to.equal('<= 55: ok');
    // api 1 + worker 0.5 per task: more than half of the 1.57 ms before.
    expect(named('CPU per task: api + workers')?.slice(1, 2)).to.deep.equal(['1.500']);
    expect(named('CPU per task: api + workers')?.[7]).to.equal('<= 0.785 (half of 1.57 before): MISSED');
  });

  it('misses the throughput goal below 0.8x bare or below the SDK, and the plain-call goal over 3 ms', () => {
    const sample = (tasksPerSecond: number): ThroughputSample => ({
      tasksPerSecond,
      tasks: 100,
      commandsPerTask: 60,
      commands: {},
      cpu: { api: 0.3, worker: 0.3, redis: 0.25, client: 0.2 },
    });
    const latency = (p50: number) => ({ p50, p99: p50 * 3, samples: 10 });
    const results: BenchResults = {
      machine: { cores: 2, cpu: 'CPU', node: 'v20', redis: '7.0', bullmq: '6.7.0', platform: 'linux x64' },
      options: { reps: 1, clients: 20 },
      durationSeconds: 1,
      truncated: [],
      throughput: { ours: [sample(900)], bare: [sample(1000)], sdk: [sample(950)], raw: [sample(4000)] },
      plain: { ours: [latency(3.2)], bare: [latency(2.5)], sdk: [], raw: [] },
    };
    const [alternatives] = buildTables(results);
    const named = (start: string) => alternatives?.rows.find((row) => row[0]?.startsWith(start));
    expect(named('throughput')?.[7]).to.equal('>= 0.80x bare, >= 1.00x SDK: MISSED');
    expect(named('plain call (no task)')?.[7]).to.equal('<= 1.5x bare, <= 3 ms: MISSED');
    expect(named('Redis commands per task')?.[7]).to.equal('<= 55: MISSED');
    expect(named('CPU per task: api + workers')?.[7]).to.equal('<= 0.785 (half of 1.57 before): ok');
  });

  it('misses the expiry goal when the sweep is slow, or when a repetition left anything behind', () => {
    const run = (samples: NonNullable<BenchResults['expiry']>['samples']): Table => {
      const results: BenchResults = {
        machine: { cores: 2, cpu: 'CPU', node: 'v20', redis: '7.0', bullmq: '6.7.0', platform: 'linux x64' },
        options: { reps: samples.length },
        durationSeconds: 1,
        truncated: [],
        expiry: { tasks: 1000, workers: 2, intervalMs: 5000, samples },
      };
      return buildTables(results)[0] as Table;
    };
    expect(run([{ tasksPerSecond: 1500, secondsFromExpiry: 6, leftovers: {} }]).rows[0]?.[2]).to.equal(
      '>= 2,000 tasks/s, keyspace back to baseline: MISSED',
    );
    const leaky = run([
      { tasksPerSecond: 5000, secondsFromExpiry: 3, leftovers: {} },
      { tasksPerSecond: 5000, secondsFromExpiry: 3, leftovers: { 'all-tasks': 12 } },
    ]);
    expect(leaky.rows[0]?.[2]).to.equal('>= 2,000 tasks/s, keyspace back to baseline: MISSED');
    expect(leaky.rows[2]?.[1]).to.equal('1/2');
    expect(leaky.notes?.join(' ')).to.include('#2 all-tasks +12');
  });
});

describe('bench steps: round trips from MONITOR (tallySteps)', () => {
  const at = (atUs: number, source: string, name: string): Monitored => ({ atUs, source, name });
  const tally = (seen: Monitored[]) => tallySteps(seen, () => 'worker').steps['worker'];

  it("a command written right after a script, in the same write, is the same round trip: the gap counts from the script's last command (issue 41)", () => {
    // The settling transition (three commands inside) and moveToFinished, read by Redis from one write.
    const ahead = [
      at(0, 'w', 'evalsha'),
      at(40, 'lua:w', 'hgetall'),
      at(70, 'lua:w', 'hset'),
      at(110, 'lua:w', 'xadd'),
      at(125, 'w', 'evalsha'),
      at(160, 'lua:w', 'del'),
    ];
    expect(tally(ahead)).to.deep.equal({ commands: 6, roundTrips: 1 });
    // The same commands with the reply awaited in between: two round trips.
    const awaited = ahead.map((entry, i) => (i >= 4 ? { ...entry, atUs: entry.atUs + 300 } : entry));
    expect(tally(awaited)).to.deep.equal({ commands: 6, roundTrips: 2 });
  });

  it('counts each connection apart, a MULTI ... EXEC as one, and plain commands within 30 us as one pipeline', () => {
    const seen = [
      at(0, 'a', 'get'),
      at(10, 'b', 'get'),
      at(20, 'a', 'get'),
      at(500, 'a', 'multi'),
      at(600, 'a', 'incr'),
      at(700, 'a', 'exec'),
      at(1000, 'b', 'set'),
    ];
    const { steps, commands } = tallySteps(seen, () => 'all');
    expect(steps['all']).to.deep.equal({ commands: 7, roundTrips: 4 });
    expect(commands).to.deep.equal({ get: 3, multi: 1, incr: 1, exec: 1, set: 1 });
  });
});

// The dashboard's per-minute figures (activity.ts, docs/observability.md) against a Redis of its own, counted with
// INFO commandstats: a process sums its figures in memory and sends them as one pipeline per flush, so a burst of
// tasks costs a few dozen Redis writes instead of nine per task (issue 16); the figures are exact once flushed, land
// in the minute their event happened, are sent at close (engine close, process stop), and what waits for a flush
// stays bounded while Redis does not answer.
import { expect } from 'chai';
import {
  ActivityRecorder,
  closeRedis,
  createEngine,
  createRedis,
  KeySpace,
  type ActivityReport,
} from '@mcp-tasks/engine';
import { Redis } from 'ioredis';
import { eventually, McpTestClient } from '../support/mcp-client.ts';
import { startSystem } from '../support/in-process.ts';
import { startRedisServer, uniquePrefix, type RedisServer } from '../support/redis-server.ts';
import { track } from '../support/resources.ts';

const MINUTE_MS = 60_000;
/** What the recorder writes; reads (the dashboard's) are left out of the counts. */
const WRITES = ['hincrby', 'zincrby', 'zremrangebyrank', 'pexpireat', 'hset'] as const;

const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

describe('dashboard figures: summed in memory, one pipeline per flush (own redis-server, INFO commandstats)', function () {
  this.timeout(60_000);
  let server: RedisServer;
  let redis: Redis;
  let inspect: Redis;
  const releases: (() => Promise<void>)[] = [];

  /** Calls of each write command since the last CONFIG RESETSTAT. */
  async function writeCalls(): Promise<Record<(typeof WRITES)[number], number>> {
    const info = await inspect.info('commandstats');
    const calls = (name: string) => Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
    return Object.fromEntries(WRITES.map((name) => [name, calls(name)])) as Record<(typeof WRITES)[number], number>;
  }

  before(async () => {
    server = await startRedisServer();
    redis = createRedis(server.url, 'activity-test');
    releases.push(track('activity test redis', () => closeRedis(redis)));
    inspect = new Redis(server.url, { maxRetriesPerRequest: null });
    releases.push(track('activity inspect redis', () => inspect.disconnect()));
  });
  after(async () => {
    for (const release of releases.reverse()) await release();
    await server?.stop();
  });

  it('a burst of 1000 tasks costs a few dozen Redis writes, not nine per task; flushed, every figure is exact', async () => {
    const keys = new KeySpace(uniquePrefix());
    const recorder = new ActivityRecorder(redis, keys, { flushMs: 100 });
    // A dashboard on another replica: its read() sends only its own (no) figures, so the figures seen are flushed.
    const dashboard = new ActivityRecorder(redis, keys);
    const TASKS = 1000;
    await inspect.config('RESETSTAT');
    for (let i = 0; i < TASKS; i += 1) {
      const tool = i % 4 === 0 ? 'echo' : 'wait';
      const owner = `principal-${i % 3}`;
      recorder.created(tool, owner);
      recorder.started(i % 2 === 0 ? 3 : 40); // buckets <= 5 ms and <= 50 ms
      recorder.finished(tool, owner, i % 10 === 0 ? 'failed' : 'completed', Date.now(), 200);
    }
    const report = await eventually(async () => {
      const read = await dashboard.read();
      return sum(read.created) === TASKS && sum(read.finished.completed) + sum(read.finished.failed) === TASKS
        ? read
        : undefined;
    });
    const writes = await writeCalls();
    // Before: 9 commands per task (9000 here). Now one pipeline (two if a minute ended during the burst): per minute
    // 14 hash fields, 3 + 3 principals, 2 trims and 3 expiries.
    expect(writes.hincrby + writes.zincrby + writes.zremrangebyrank + writes.pexpireat).to.be.at.most(2 * 25);
    expect(writes.hincrby).to.be.at.most(2 * 14);

    expect(sum(report.finished.failed)).to.equal(100);
    expect(sum(report.finished.cancelled)).to.equal(0);
    const tools = Object.fromEntries(report.tools.map((tool) => [tool.tool, tool]));
    expect(tools['wait']?.created).to.equal(750);
    expect(tools['echo']?.created).to.equal(250);
    expect(tools['echo']?.finished).to.deep.equal({ completed: 200, failed: 50, cancelled: 0 });
    expect(tools['wait']?.runP95Ms).to.equal(250);
    expect(report.owners).to.have.deep.members([
      { owner: 'principal-0', created: 334, finished: 334 },
      { owner: 'principal-1', created: 333, finished: 333 },
      { owner: 'principal-2', created: 333, finished: 333 },
    ]);
    // Half the waits <= 5 ms, half <= 50 ms: the median is the lower bucket, p95 the upper.
    expect(report.queueWaitMs.p50.filter((value) => value !== null)).to.satisfy((values: number[]) =>
      values.every((value) => value === 5 || value === 50),
    );
    expect(report.queueWaitMs.p95.filter((value) => value !== null)).to.include(50);
    await recorder.close();
  });

  it('an event is counted in the minute it happened, not the minute it is sent; its keys expire an hour after it', async () => {
    const keys = new KeySpace(uniquePrefix());
    const recorder = new ActivityRecorder(redis, keys, { flushMs: 100 });
    const now = Date.now();
    const earlier = now - 2 * MINUTE_MS;
    recorder.created('wait', 'principal-a', earlier);
    recorder.created('wait', 'principal-a', earlier);
    recorder.finished('wait', 'principal-a', 'completed', now);
    const dashboard = new ActivityRecorder(redis, keys);
    const report = await eventually(async () => {
      const read = await dashboard.read(now);
      return sum(read.created) === 2 && sum(read.finished.completed) === 1 ? read : undefined;
    });
    expect(report.created.slice(-3)).to.deep.equal([2, 0, 0]);
    expect(report.finished.completed.slice(-3)).to.deep.equal([0, 0, 1]);
    const minute = Math.floor(earlier / MINUTE_MS);
    for (const key of [keys.activityMinute(minute), keys.activityOwners(minute, 'created')]) {
      expect(await inspect.call('PEXPIRETIME', key)).to.equal((minute + 62) * MINUTE_MS);
    }
    await recorder.close();
  });

  it('a run of hours and a wait of hours show in their own buckets: the percentiles read hours, not the hour bound', async () => {
    const keys = new KeySpace(uniquePrefix());
    const recorder = new ActivityRecorder(redis, keys, { flushMs: 100 });
    const HOUR = 3_600_000;
    const now = Date.now();
    recorder.started(2.5 * HOUR, now);
    recorder.finished('render', 'principal-a', 'completed', now, 3 * HOUR);
    const report = await recorder.read(now); // its own figures are sent first
    expect(report.runTimeMs.p50.at(-1)).to.equal(4 * HOUR);
    expect(report.queueWaitMs.p95.at(-1)).to.equal(4 * HOUR);
    expect(report.tools).to.have.length(1);
    expect(report.tools[0]).to.include({ tool: 'render', runP50Ms: 4 * HOUR, runP95Ms: 4 * HOUR });
    await recorder.close();
  });

  it('a minute key that lost its expiry (Redis lost its data) gets it back within ten flushes of a process', async () => {
    const keys = new KeySpace(uniquePrefix());
    const recorder = new ActivityRecorder(redis, keys, { flushMs: 60_000 });
    const at = Date.now();
    const minute = Math.floor(at / MINUTE_MS);
    const key = keys.activityMinute(minute);
    recorder.started(1, at);
    await recorder.flush();
    expect(await inspect.call('PEXPIRETIME', key)).to.equal((minute + 62) * MINUTE_MS);
    await inspect.persist(key);
    for (let i = 0; i < 10; i += 1) {
      recorder.started(1, at);
      await recorder.flush();
    }
    expect(await inspect.call('PEXPIRETIME', key)).to.equal((minute + 62) * MINUTE_MS);
    expect(await inspect.hget(key, 'w|0')).to.equal('11');
    await recorder.close();
  });

  it('engine close sends the figures still pending (a long flush interval), and a figure counted later at once', async () => {
    const prefix = uniquePrefix();
    const keys = new KeySpace(prefix);
    const engine = createEngine(
      { redis },
      { REDIS_PREFIX: prefix, SESSION_IDLE_TTL_MS: 3_600_000, DASHBOARD_FLUSH_MS: 60_000 },
    );
    for (let i = 0; i < 5; i += 1) {
      engine.activity.created('wait', 'principal-a');
      engine.activity.finished('wait', 'principal-a', 'completed', Date.now(), 10);
    }
    await engine.close();
    const dashboard = new ActivityRecorder(redis, keys);
    const report = await dashboard.read();
    expect(sum(report.created)).to.equal(5);
    expect(sum(report.finished.completed)).to.equal(5);
    expect(report.owners).to.deep.equal([{ owner: 'principal-a', created: 5, finished: 5 }]);

    engine.activity.created('wait', 'principal-a'); // after close (a late transition): no timer, sent on its own
    await eventually(async () => (sum((await dashboard.read()).created) === 6 ? true : undefined));
  });

  it('while Redis does not answer, a process holds the busiest principals only; the counts are exact after', async () => {
    const keys = new KeySpace(uniquePrefix());
    const recorder = new ActivityRecorder(redis, keys, { flushMs: 50 });
    await inspect.config('RESETSTAT');
    await inspect.call('CLIENT', 'PAUSE', '20000', 'WRITE'); // writes wait; this connection may still unpause
    recorder.created('wait', 'first');
    const stuck = recorder.flush(); // on its way, unanswered: what follows waits in memory
    const BUSY = 300;
    const ONE_OFF = 3000;
    for (let i = 0; i < BUSY; i += 1) recorder.created('wait', 'busy');
    for (let i = 0; i < ONE_OFF; i += 1) recorder.created('wait', `one-off-${i}`);
    await inspect.call('CLIENT', 'UNPAUSE');
    await stuck;
    const dashboard = new ActivityRecorder(redis, keys);
    const report = await eventually(async () => {
      const read = await dashboard.read();
      return sum(read.created) === 1 + BUSY + ONE_OFF ? read : undefined;
    });
    // Every creation counted (hash fields are few); of the 3001 principals that waited, at most 1000 were held.
    expect((await writeCalls()).zincrby).to.be.at.most(1 + 1000);
    expect(report.owners[0]).to.deep.equal({ owner: 'busy', created: BUSY, finished: 0 });
    expect(report.owners).to.have.length(50);
    const stored = await inspect.zcard(keys.activityOwners(Math.floor(Date.now() / MINUTE_MS), 'created'));
    expect(stored).to.be.at.most(50);
    await recorder.close();
  });
});

describe('dashboard figures at stop (api and worker in process, DASHBOARD_FLUSH_MS=60000)', function () {
  this.timeout(90_000);

  it('api and worker send their pending figures when stopped (SIGTERM), before their connections close', async () => {
    const system = await startSystem({ env: { DASHBOARD_FLUSH_MS: '60000' } });
    try {
      const client = await McpTestClient.connect(system.apiUrl);
      const task = await client.createTask('wait', { seconds: 0 });
      await client.call('tasks/result', { taskId: task['taskId'] });
      for (const child of [...system.apis, ...system.workers]) expect(await child.stop('SIGTERM')).to.equal(0);
      const report: ActivityReport = await new ActivityRecorder(system.redis, new KeySpace(system.prefix)).read();
      expect(sum(report.created)).to.equal(1); // the api's
      expect(sum(report.finished.completed)).to.equal(1); // the worker's
      expect(report.queueWaitMs.p50.some((value) => value !== null)).to.equal(true);
      expect(report.runTimeMs.p50.some((value) => value !== null)).to.equal(true);
    } finally {
      await system.stop();
    }
  });
});

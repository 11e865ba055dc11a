// The expiry sweep against a Redis of its own: thousands of expired tasks are deleted with everything they left
// behind (index entries, queued jobs, session events), by several sweepers at once without double work, and a
// sweeper that dies after claiming a batch loses nothing (invariant 4 of docs/architecture.md, T-RSRC-1).
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import {
  closeRedis,
  createRedis,
  createToolQueue,
  DEFAULT_SESSION_STREAM,
  ExternalQueues,
  KeySpace,
  Maintenance,
  SessionEvents,
  TaskKeys,
  TaskStore,
  toolJobOptions,
  type MaintenanceOptions,
  type ToolJobData,
} from '@mcp-tasks/engine';
import { createLogger } from '@mcp-tasks/runtime';
import type { TaskRecord, TaskStatus } from '@mcp-tasks/protocol';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { track } from '../support/resources.ts';

const OWNERS = 16;
const HOUR = 3_600_000;

/** One worker's share of the sweep: its own connections, as a worker process has. */
interface Sweeper {
  redis: Redis;
  queue: Queue<ToolJobData>;
  maintenance: Maintenance;
}

describe('expiry sweep (T-RSRC-1, T-TTL-1)', function () {
  this.timeout(60_000);
  let server: RedisServer;
  let redis: Redis;
  let keys: KeySpace;
  let store: TaskStore;
  let events: SessionEvents;
  let queue: Queue<ToolJobData>;
  const releases: (() => Promise<void>)[] = [];
  const log = createLogger({ service: 'expiry-sweep-test', level: 'error' });
  const owners = Array.from({ length: OWNERS }, (_, i) => ({ sessionId: randomUUID(), owner: `session:owner-${i}` }));

  before(async () => {
    server = await startRedisServer();
    releases.push(() => server.stop());
    redis = createRedis(server.url, 'expiry-sweep-test');
    releases.push(track('expiry-sweep redis', () => closeRedis(redis)));
    keys = new KeySpace(`sweep${randomUUID().slice(0, 8)}`);
    store = new TaskStore(redis, keys);
    events = new SessionEvents(redis, keys, DEFAULT_SESSION_STREAM);
    queue = createToolQueue(redis, keys.prefix);
    releases.push(track('expiry-sweep queue', () => queue.close()));
    // What every owner keeps throughout: a live task with its queued job and an event, so that the keys the
    // expired tasks share with it (owner index, owner's live set, session stream, queue) exist before and after.
    for (const { sessionId, owner } of owners) {
      const record = newRecord({ sessionId, owner }, 'working', Date.now(), HOUR);
      await store.create({ record, arguments: {}, maxLiveTasksPerOwner: 1_000_000 });
      await queue.add(
        'wait',
        { taskId: record.taskId, tool: 'wait', arguments: {} },
        toolJobOptions(record.taskId, true),
      );
      await events.append(sessionId, record.taskId, { jsonrpc: '2.0', method: 'notifications/progress' });
    }
  });

  after(async () => {
    for (const release of releases.reverse()) await release();
  });

  function newRecord(
    on: { sessionId: string; owner: string },
    status: TaskStatus,
    createdAt: number,
    ttl: number,
  ): TaskRecord {
    return {
      taskId: randomUUID(),
      kind: 'task',
      status,
      createdAt,
      lastUpdatedAt: createdAt,
      ttl,
      pollInterval: 1000,
      owner: on.owner,
      sessionId: on.sessionId,
      tool: 'wait',
    };
  }

  /**
   * Stores `count` tasks that expired a minute ago, through the TaskStore as the api would have written them: one
   * in ten still live with its job queued (a tool that never ran), the others finished; each with two events.
   */
  async function seedExpired(count: number): Promise<{ live: number }> {
    const createdAt = Date.now() - 2 * 60_000;
    let live = 0;
    const batch = 500;
    for (let start = 0; start < count; start += batch) {
      const writes: Promise<unknown>[] = [];
      for (let i = start; i < Math.min(count, start + batch); i++) {
        const on = owners[i % OWNERS] as (typeof owners)[number];
        const isLive = i % 10 === 0;
        const record = newRecord(on, isLive ? 'working' : 'completed', createdAt + i, 60_000);
        const { taskId } = record;
        writes.push(
          store
            .create({ record, arguments: {}, ...(isLive ? { maxLiveTasksPerOwner: 1_000_000 } : {}) })
            .then(() =>
              Promise.all([
                isLive
                  ? queue.add('wait', { taskId, tool: 'wait', arguments: {} }, toolJobOptions(taskId, true))
                  : store.indexes.leaveLive(taskId),
                events.append(on.sessionId, taskId, { jsonrpc: '2.0', method: 'notifications/progress' }),
                events.append(on.sessionId, taskId, { jsonrpc: '2.0', method: 'notifications/tasks/status' }),
              ]),
            ),
        );
        if (isLive) live++;
      }
      await Promise.all(writes);
    }
    return { live };
  }

  /** Every count the expired tasks could leave a trace in: keys of the prefix, members, stream entries, jobs. */
  async function keyspace(): Promise<Record<string, number>> {
    const taskKeys = new TaskKeys(keys);
    let scanned = 0;
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', `${keys.prefix}:*`, 'COUNT', 1000);
      cursor = next;
      scanned += found.length;
    } while (cursor !== '0');
    const counts: Record<string, number> = {
      dbsize: await redis.dbsize(),
      'keys of the prefix (SCAN)': scanned,
      expiries: await redis.zcard(taskKeys.expiries()),
      'all-tasks': await redis.zcard(taskKeys.allTasks()),
      live: await redis.zcard(taskKeys.live()),
    };
    for (const { sessionId, owner } of owners) {
      counts[`owner index ${owner}`] = await redis.zcard(taskKeys.ownerIndex(owner));
      counts[`owner live ${owner}`] = await redis.zcard(taskKeys.ownerLive(owner));
      counts[`events of ${sessionId}`] = await redis.xlen(keys.sessionEvents(sessionId));
    }
    const jobs = await queue.getJobCounts('wait', 'delayed', 'prioritized', 'active');
    counts['queued jobs'] = Object.values(jobs).reduce((a, b) => a + b, 0);
    return counts;
  }

  function sweeper(options: Partial<MaintenanceOptions>): Sweeper {
    const connection = createRedis(server.url, 'expiry-sweeper');
    releases.push(track('sweeper redis', () => closeRedis(connection)));
    const ownQueue = createToolQueue(connection, keys.prefix);
    releases.push(track('sweeper queue', () => ownQueue.close()));
    const maintenance = new Maintenance(connection, new TaskStore(connection, keys), ownQueue, log, {
      intervalMs: 60_000,
      reconcileAfterMs: HOUR,
      batchSize: 200,
      ...options,
    });
    return { redis: connection, queue: ownQueue, maintenance };
  }

  /** Cancel messages published on the control channel while `body` runs. */
  async function cancelsDuring(body: () => Promise<void>): Promise<Set<string>> {
    const subscriber = createRedis(server.url, 'expiry-sweep-control');
    const release = track('control subscriber', () => closeRedis(subscriber));
    const cancelled = new Set<string>();
    try {
      await subscriber.subscribe(keys.controlChannel());
      subscriber.on('message', (_, raw: string) => cancelled.add((JSON.parse(raw) as { taskId: string }).taskId));
      await body();
      // The messages were published before the sweep returned; one round trip on the subscriber lets them in.
      await subscriber.ping();
    } finally {
      await release();
    }
    return cancelled;
  }

  it('two sweepers delete 5,000 expired tasks and all they left, each task once, and the keyspace is as before', async () => {
    const baseline = await keyspace();
    const count = 5000;
    const { live } = await seedExpired(count);
    const seeded = await keyspace();
    expect(seeded['expiries']).to.equal(baseline['expiries']! + count);
    expect(seeded['queued jobs']).to.equal(baseline['queued jobs']! + live);
    expect(seeded['dbsize']).to.be.above(baseline['dbsize']!);

    // Small batches and a short budget, so that the two interleave over many claims and passes.
    const sweepers = [
      sweeper({ sweepBatchSize: 250, sweepBudgetMs: 50 }),
      sweeper({ sweepBatchSize: 250, sweepBudgetMs: 50 }),
    ];
    const started = performance.now();
    let seconds = 0;
    const swept: number[] = [0, 0];
    const passes: number[] = [0, 0];
    const cancelled = await cancelsDuring(async () => {
      await Promise.all(
        sweepers.map(async ({ maintenance }, i) => {
          for (;;) {
            const pass = await maintenance.sweepExpired(Date.now());
            swept[i] = (swept[i] ?? 0) + pass.swept;
            passes[i] = (passes[i] ?? 0) + 1;
            if (!pass.more) return;
          }
        }),
      );
      seconds = (performance.now() - started) / 1000;
    });

    expect(swept[0]! + swept[1]!, `swept ${swept.join(' + ')}`).to.equal(count);
    expect(Math.min(...swept), `both sweepers took a share: ${swept.join(' + ')}`).to.be.above(0);
    expect(Math.min(...passes), 'each sweep stopped at its time budget at least once').to.be.above(1);
    expect(seconds, 'the sweep is not the 200 tasks per pass it was').to.be.below(20);
    expect(await keyspace()).to.deep.equal(baseline);
    // Work was stopped where there was some: the live tasks' jobs are gone (above), each got one cancel message,
    // and the finished ones cost no BullMQ call nor message.
    expect(cancelled.size).to.equal(live);
  });

  it('a batch claimed by a sweeper that died is swept again once its lease ends, and nothing else leaks', async () => {
    const baseline = await keyspace();
    const count = 600;
    await seedExpired(count);
    const leaseMs = 5000;
    const now = Date.now();
    // The dead sweeper: it claimed 150 tasks and dropped their events, then died before it deleted them.
    const dead = await store.indexes.claimExpired(now, 150, now + leaseMs);
    const eventsOf = new Map<string, Set<string>>();
    for (const { sessionId, taskId } of dead)
      eventsOf.set(sessionId!, (eventsOf.get(sessionId!) ?? new Set()).add(taskId));
    await events.dropTaskEvents(eventsOf);
    expect(dead).to.have.length(150);

    const { maintenance } = sweeper({ claimLeaseMs: leaseMs });
    const first = await maintenance.sweepExpired(now + 1);
    expect(first).to.deep.equal({ swept: count - 150, more: false });
    // The claimed tasks are not lost: their entries wait in the indexes for the lease to end.
    const during = await keyspace();
    expect(during['expiries']).to.equal(baseline['expiries']! + 150);
    expect(during['all-tasks']).to.equal(baseline['all-tasks']! + 150);

    const later = await maintenance.sweepExpired(now + leaseMs + 1);
    expect(later).to.deep.equal({ swept: 150, more: false });
    expect(await keyspace()).to.deep.equal(baseline);
  });

  it("an expired task's queued job is removed from its tool's queue (tool-<name>), and from the shared queue of earlier versions", async () => {
    const queues = new ExternalQueues(redis, keys.prefix);
    releases.push(track('tool queues', () => queues.close()));
    const createdAt = Date.now() - 2 * 60_000;
    const inToolQueue = newRecord(owners[0]!, 'working', createdAt, 60_000);
    const inSharedQueue = newRecord(owners[1]!, 'working', createdAt + 1, 60_000);
    for (const record of [inToolQueue, inSharedQueue]) await store.create({ record, arguments: {} });
    const data = (taskId: string): ToolJobData => ({ taskId, tool: 'wait', arguments: {} });
    await queues.get('tool-wait').add('wait', data(inToolQueue.taskId), toolJobOptions(inToolQueue.taskId, true));
    await queue.add('wait', data(inSharedQueue.taskId), toolJobOptions(inSharedQueue.taskId, true));

    const { maintenance } = sweeper({ externalQueues: queues });
    expect(await maintenance.sweepExpired(Date.now())).to.deep.equal({ swept: 2, more: false });
    expect(await queues.get('tool-wait').getJob(inToolQueue.taskId)).to.equal(undefined);
    expect(await queue.getJob(inSharedQueue.taskId)).to.equal(undefined);
  });

  it("an expired task's durable state goes with it: its checkpoint and steps, its children's set, and its child", async () => {
    const baseline = await keyspace();
    const taskKeys = new TaskKeys(keys);
    const now = Date.now();
    // What a running tool keeps (docs/durable-execution.md), written by the scripts that keep it.
    const parent = newRecord(owners[2]!, 'working', now, 60_000);
    await store.create({ record: parent, arguments: {} });
    await store.durable.save(parent, {
      attempt: 1,
      kind: 'checkpoint',
      json: '{"next":1}',
      maxEntries: 10,
      maxTotalBytes: 4096,
    });
    await store.durable.save(parent, {
      attempt: 1,
      kind: 'step',
      name: 'fetch',
      json: '1',
      maxEntries: 10,
      maxTotalBytes: 4096,
    });
    const child = { ...newRecord(owners[2]!, 'working', now, 60_000), parent: parent.taskId };
    const facts = store.durable.callFacts({ tool: 'wait', digest: 'd', attempt: 1, at: now });
    const filed = {
      taskId: parent.taskId,
      field: 'c:wait#1',
      attempt: 1,
      maxEntries: 10,
      maxChildren: 10,
      digest: 'd',
      facts,
    };
    await store.create({ record: child, arguments: {}, parent: filed });
    expect(await redis.exists(taskKeys.durable(parent.taskId), taskKeys.children(parent.taskId))).to.equal(2);

    // Swept (as if two minutes later) before the keys' own expiry, which is the record's: the sweep deletes them.
    const { maintenance } = sweeper({});
    expect(await maintenance.sweepExpired(now + 120_000)).to.deep.equal({ swept: 2, more: false });
    expect(await keyspace()).to.deep.equal(baseline);
  });

  it('a worker whose passes fall behind runs the next pass at once, not an interval later', async function () {
    this.timeout(90_000);
    const baseline = await keyspace();
    const count = 3000;
    await seedExpired(count);
    // A pass stops after 5 ms (a batch or two, never 3,000 tasks), and passes are 5 s apart: a sweeper that waited an
    // interval between passes would need minutes, one that catches up at once needs one interval and a few seconds.
    // The deadline sits far from both, so the machine's load cannot decide the outcome.
    const intervalMs = 5_000;
    const { maintenance } = sweeper({ intervalMs, sweepBatchSize: 50, sweepBudgetMs: 5 });
    const started = performance.now();
    maintenance.start();
    try {
      const deadline = started + intervalMs + 40_000;
      while ((await redis.zcard(new TaskKeys(keys).expiries())) > baseline['expiries']!) {
        expect(performance.now(), 'swept in one interval and a catch-up run').to.be.below(deadline);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await maintenance.stop();
    }
    expect(await keyspace()).to.deep.equal(baseline);
  });
});

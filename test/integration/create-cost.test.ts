// What creating a task costs in Redis (issue 16): the record, its indexes, the owner's cap, the job's fair
// priority and the job itself are one script call. Counted with INFO commandstats on a redis-server of this file's
// own (no other client runs commands meanwhile); no timings.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { closeRedis, createEngine, createRedis, type Engine, TaskKeys, TaskStore } from '@mcp-tasks/engine';
import { externalQueueName, TaskKind, toolQueueName, type TaskRecord } from '@mcp-tasks/protocol';
import { startRedisServer, type RedisServer, uniquePrefix } from '../support/redis-server.ts';
import { track } from '../support/resources.ts';
import { commandsDuring } from '../support/command-stats.ts';

describe('creating a task: one script of ours, which adds the job too (own redis-server, INFO commandstats)', function () {
  this.timeout(30_000);
  const CAP = 3;
  let server: RedisServer;
  let redis: Redis;
  let inspect: Redis;
  let engine: Engine;
  let prefix: string;
  const releases: (() => Promise<void>)[] = [];

  before(async () => {
    server = await startRedisServer();
    redis = createRedis(server.url, 'create-cost');
    releases.push(track('create-cost redis', () => closeRedis(redis)));
    inspect = new Redis(server.url, { maxRetriesPerRequest: null });
    releases.push(track('create-cost inspect', () => inspect.disconnect()));
    prefix = `{${uniquePrefix()}}`;
    engine = createEngine({ redis }, { REDIS_PREFIX: prefix, SESSION_IDLE_TTL_MS: 60_000, MAX_TASKS_PER_OWNER: CAP });
    releases.push(() => engine.close());
  });
  after(async () => {
    for (const release of releases.reverse()) await release();
    await server?.stop();
  });

  const commandsOf = (body: () => Promise<unknown>) => commandsDuring(inspect, body);

  const create = (owner: string) =>
    engine.tasks.create({
      kind: 'task',
      owner,
      sessionId: `session-of-${owner}`,
      tool: 'wait',
      arguments: { seconds: 0 },
      retrySafe: true,
      requestedTtl: 60_000,
    });

  const priorityOf = async (taskId: string) =>
    (await engine.externalQueues.get(toolQueueName('wait')).getJob(taskId))?.opts.priority;

  it('T-RSRC-1, invariant 2 and fairness: a create under the owner cap runs one script (no BullMQ add), no separate priority script and no pruning', async () => {
    // The first create defines the scripts on the connection (SCRIPT LOAD / EVAL fallback): counted from the second.
    const first = await create('alice');
    // The queue's meta, which BullMQ's Queue writes once it is ready, is not counted either.
    await engine.externalQueues.get(toolQueueName('wait')).getVersion();
    let second: TaskRecord | undefined;
    const calls = await commandsOf(async () => (second = await create('alice')));
    expect(calls['evalsha'], JSON.stringify(calls)).to.equal(1);
    expect(calls['eval'] ?? 0).to.equal(0);
    // The fair priority is read with one HMGET, inside the create; the hash's expiry, recorded in it a minute past
    // the first task's, is long enough for the second: the PEXPIREATs are the record's, the owner index's and the
    // owner cap set's only (issue 16, third round: was four).
    expect(calls['pttl'] ?? 0).to.equal(0);
    expect(calls['pexpire'] ?? 0).to.equal(0);
    expect(calls['pexpireat'], JSON.stringify(calls)).to.equal(3);
    // Entries past their expiry are dropped only when the owner's set is full.
    expect(calls['zremrangebyscore'] ?? 0).to.equal(0);
    // The job as BullMQ's prioritized add writes it, without its id counter (INCR) and duplicate check (EXISTS),
    // and with one read of the queue's meta: HMGET, HSET, two XADD, INCR of the priority counter, ZADD of the
    // prioritized entry and of the marker.
    expect(calls['exists'] ?? 0).to.equal(0);
    expect(calls['incr'], JSON.stringify(calls)).to.equal(1);
    expect(calls['hmget'], JSON.stringify(calls)).to.equal(2);
    expect(calls['xadd'], JSON.stringify(calls)).to.equal(2);
    // 13 for the record and the fair order, 7 for the job, one EVALSHA (was 25 in two scripts: 13 + 10 + 2).
    expect(
      Object.values(calls).reduce((sum, n) => sum + n, 0),
      JSON.stringify(calls),
    ).to.equal(21);
    // Principals take turns: alice's second job sits a step (12) behind her first; bob's first one starts from the
    // queue's virtual time (the head's priority - 1), so before alice's second.
    const bob = await create('bob');
    expect(await priorityOf(first.taskId)).to.equal(12);
    expect(await priorityOf((second as TaskRecord).taskId)).to.equal(24);
    expect(await priorityOf(bob.taskId)).to.equal(23);
    // The tool's fair-order hash lives at least as long as its longest-lived queued task, and at most a minute
    // more: its expiry was set by the first create, a minute past that task's.
    const fairKey = engine.keys.fairQueue('wait');
    const fairExpiry = Number(await inspect.call('PEXPIRETIME', fairKey));
    const latest = Math.max(first.createdAt, (second as TaskRecord).createdAt, bob.createdAt) + 60_000;
    expect(fairExpiry)
      .to.be.at.least(latest)
      .and.at.most(latest + 60_000);
    expect(fairExpiry).to.equal(first.createdAt + 60_000 + 60_000);
    expect(Number(await inspect.hget(fairKey, '\0x'))).to.equal(fairExpiry);
  });

  it('invariant 2: an external consumer’s task is one script too: its job goes onto ext-<tool>’s wait list in the create step, with no BullMQ add after it', async () => {
    const createExternal = () =>
      engine.tasks.create({
        kind: 'task',
        owner: 'dave',
        sessionId: 'session-of-dave',
        tool: 'shout',
        queue: externalQueueName('shout'),
        arguments: { text: 'hi' },
        retrySafe: true,
        requestedTtl: 60_000,
      });
    const queue = engine.externalQueues.get(externalQueueName('shout'));
    // The queue's meta, which BullMQ's Queue writes once it is ready, is not counted.
    await queue.getVersion();
    let created: TaskRecord | undefined;
    const calls = await commandsOf(async () => (created = await createExternal()));
    // One script: before, BullMQ's addStandardJob ran as a second EVALSHA after it, and between the two the record
    // stood without its job (the reconciler failed such a task as lost).
    expect(calls['evalsha'], JSON.stringify(calls)).to.equal(1);
    expect(calls['eval'] ?? 0).to.equal(0);
    // The job as BullMQ's standard add writes it, without its id counter (INCR) and duplicate check (EXISTS), with
    // one read of the queue's meta: HMGET, HSET, two XADD, LPUSH onto the wait list, ZADD of the marker.
    expect(calls['lpush'], JSON.stringify(calls)).to.equal(1);
    expect(calls['incr'] ?? 0, JSON.stringify(calls)).to.equal(0);
    expect(calls['exists'] ?? 0).to.equal(0);
    expect(calls['xadd'], JSON.stringify(calls)).to.equal(2);
    expect(await queue.getJobState((created as TaskRecord).taskId)).to.equal('waiting');
    // 11 for the record (dave's first: his index gets its first expiry with a second PEXPIREAT), 6 for the job, one
    // EVALSHA (was 22, in two scripts and two round trips: 12 + BullMQ's addStandardJob, 10).
    expect(
      Object.values(calls).reduce((sum, n) => sum + n, 0),
      JSON.stringify(calls),
    ).to.equal(18);
  });

  it('T-RES-2: a call created watched (a plain call) names its replica among the waiters in its create step, and its end wakes the waiter with no read before', async () => {
    const subscriber = createRedis(server.url, 'create-cost-subscriber');
    const release = track('create-cost subscriber', () => closeRedis(subscriber));
    const watching = createEngine({ redis, subscriber }, { REDIS_PREFIX: prefix, SESSION_IDLE_TTL_MS: 60_000 });
    try {
      // The replica's channel is subscribed once for the process (Subscriber.pin): not counted.
      await watching.tasks.wakeOn('warm-up');
      let created: Awaited<ReturnType<typeof watching.tasks.createWatched>> | undefined;
      const calls = await commandsOf(async () => {
        created = await watching.tasks.createWatched({
          kind: TaskKind.PlainToolCall,
          owner: 'carol',
          sessionId: 'session-of-carol',
          tool: 'wait',
          arguments: { seconds: 0 },
          retrySafe: true,
          // As short as the other tests' tasks: the tool's fair-order hash keeps the expiry they expect.
          requestedTtl: 60_000,
        });
      });
      const { record, waiter } = created as NonNullable<typeof created>;
      // The create script alone: no get-owned script, no HGETALL, no HSET of the waiters after it.
      expect(calls, JSON.stringify(calls)).to.include({ evalsha: 1 });
      expect(calls['hgetall'] ?? 0).to.equal(0);
      expect(await inspect.hget(new TaskKeys(watching.keys).record(record.taskId), 'waiters')).to.equal(
        `,${watching.tasks.watcherId},`,
      );
      // Its end wakes the waiter opened before the record was written (a lost wake-up would time the test out).
      await watching.store.transition(record, 'completed', { outcome: { result: { content: [] } } });
      await (waiter as NonNullable<typeof waiter>).next(10 * 60_000);
      await waiter?.close();
    } finally {
      await watching.close();
      await release();
    }
  });

  it('a plain call read once it ended is deleted in the same step with every key TaskStore.delete removes, and its entry by request id', async () => {
    const tasks = new TaskKeys(engine.keys);
    const created = await engine.tasks.create({
      kind: TaskKind.PlainToolCall,
      owner: 'erin',
      sessionId: 'session-of-erin',
      tool: 'wait',
      arguments: { seconds: 0 },
      retrySafe: true,
      requestedTtl: 60_000,
    });
    const { taskId } = created;
    // The keys that expire with a record, as a tool, a wait or a webhook would have left them.
    const side = [
      tasks.inputs(taskId),
      tasks.durable(taskId),
      tasks.children(taskId),
      tasks.signals(taskId),
      tasks.webhookOutbox(taskId),
      tasks.webhookLog(taskId),
    ];
    for (const key of side) await inspect.hset(key, 'x', '1');
    const calls = engine.keys.sessionCalls('session-of-erin');
    await inspect.hset(calls, '7', taskId);
    // Unfinished: read, nothing deleted.
    const live = await engine.store.takeEnded(created, 'no-watcher', '7');
    expect(live.deleted).to.equal(false);
    expect(live.record?.status).to.equal('working');
    await engine.store.transition(created, 'completed', { outcome: { result: { content: [] } } });
    const taken = await engine.store.takeEnded(created, 'no-watcher', '7');
    expect(taken.deleted).to.equal(true);
    expect(taken.record?.status).to.equal('completed');
    expect(await inspect.exists(tasks.record(taskId), ...side)).to.equal(0);
    expect(await inspect.hexists(calls, '7')).to.equal(0);
    for (const index of [tasks.live(), tasks.allTasks(), tasks.ownerIndex('erin'), tasks.ownerLive('erin')]) {
      const members = await inspect.zrange(index, '0', '-1');
      expect(
        members.some((member) => member.includes(taskId)),
        index,
      ).to.equal(false);
    }
    const expiries = await inspect.zrange(tasks.expiries(), '0', '-1');
    expect(expiries.some((entry) => entry.includes(taskId))).to.equal(false);
    // Another owner's (or a gone) record answers nothing.
    expect((await engine.store.takeEnded({ ...created, owner: 'mallory' }, 'no-watcher')).record).to.equal(undefined);
  });

  it('T-RSRC-1: a plain call is filed under its request id by its create step (no MULTI), never shortening the entries’ expiry, and a refused call files nothing', async () => {
    const calls = engine.keys.sessionCalls('session-of-frank');
    const plainCall = (filed: string, requestedTtl: number) =>
      engine.tasks.create({
        kind: TaskKind.PlainToolCall,
        owner: 'frank',
        sessionId: 'session-of-frank',
        tool: 'wait',
        arguments: { seconds: 0 },
        retrySafe: true,
        requestedTtl,
        filed,
      });
    let first: TaskRecord | undefined;
    const cost = await commandsOf(async () => (first = await plainCall('1', 60_000)));
    expect(cost, JSON.stringify(cost)).to.include({ evalsha: 1 });
    expect(cost['multi'] ?? 0, JSON.stringify(cost)).to.equal(0);
    expect(await inspect.hget(calls, '1')).to.equal(first?.taskId);
    // A shorter call's entry does not cut the longer one's short.
    const second = await plainCall('"1"', 30_000);
    expect(await inspect.hget(calls, '"1"')).to.equal(second.taskId);
    expect(await inspect.pttl(calls)).to.be.above(45_000);
    // At the owner's cap (MAX_TASKS_PER_OWNER): refused, and filed nowhere.
    await plainCall('3', 60_000);
    const refused = await plainCall('4', 60_000).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).to.be.an('error');
    expect(await inspect.hexists(calls, '4')).to.equal(0);
  });

  it('T-RSRC-1: a 2026-07-28 request context is stored by the create step itself (no round trip more), only for an admitted task, and expires with it', async () => {
    const owner = `frank-${randomUUID().slice(0, 8)}`;
    const contextOf = () => {
      const id = `m-${randomUUID()}`;
      const context = {
        id,
        owner,
        protocolVersion: '2026-07-28',
        clientCapabilities: { elicitation: {} },
        clientInfo: { name: 'costs', version: '1' },
        createdAt: Date.now(),
      };
      return { id, context };
    };
    const createWith = ({ id, context }: ReturnType<typeof contextOf>) =>
      engine.tasks.create({
        kind: 'task',
        owner,
        sessionId: id,
        tool: 'wait',
        arguments: { seconds: 0 },
        retrySafe: true,
        requestedTtl: 60_000,
        requestContext: context,
      });
    await create(owner);
    const admitted = contextOf();
    let record: TaskRecord | undefined;
    const calls = await commandsOf(async () => (record = await createWith(admitted)));
    // One round trip as without a context: its HSET and PEXPIREAT (one each more than the first test counts: the
    // record's, the fair order's and the job's HSET) run inside the create script.
    expect(calls['evalsha'], JSON.stringify(calls)).to.equal(1);
    expect(calls['multi'] ?? 0).to.equal(0);
    expect(calls['hset'], JSON.stringify(calls)).to.equal(4);
    expect(calls['pexpireat'], JSON.stringify(calls)).to.equal(4);
    const stored = await engine.sessions.get(admitted.id);
    expect(stored).to.deep.include({ sessionId: admitted.id, owner, clientCapabilities: { elicitation: {} } });
    const expiry = Number(await inspect.call('PEXPIRETIME', engine.keys.session(admitted.id)));
    expect(expiry).to.equal((record as TaskRecord).createdAt + (record as TaskRecord).ttl);
    // At the owner's cap: refused, and nothing of its context is left.
    await createWith(contextOf());
    const refused = contextOf();
    const error = await createWith(refused).catch((failure: unknown) => failure);
    expect((error as Error).message).to.match(/MAX_TASKS_PER_OWNER/);
    expect(await inspect.exists(engine.keys.session(refused.id))).to.equal(0);
  });

  it('fairness: a task that would outlive the fair-order hash moves its expiry', async () => {
    const fairKey = engine.keys.fairQueue('wait');
    const before = Number(await inspect.call('PEXPIRETIME', fairKey));
    // A ttl longer than the hash has left: the create moves the hash's expiry past this task's.
    const long = await engine.tasks.create({
      kind: 'task',
      owner: 'dave',
      sessionId: 'session-of-dave',
      tool: 'wait',
      arguments: { seconds: 0 },
      retrySafe: true,
      requestedTtl: 300_000,
    });
    const after = Number(await inspect.call('PEXPIRETIME', fairKey));
    expect(after).to.be.greaterThan(before);
    expect(after).to.equal(long.createdAt + long.ttl + 60_000);
    // An expired hash (here: deleted) is written afresh with an expiry.
    await inspect.del(fairKey);
    const again = await create('erin');
    expect(Number(await inspect.call('PEXPIRETIME', fairKey))).to.equal(again.createdAt + again.ttl + 60_000);
  });

  it('T-RSRC-1: a slot held past its task’s expiry is freed once the owner reaches MAX_TASKS_PER_OWNER', async () => {
    const store = new TaskStore(redis, engine.keys);
    const owner = `carol-${randomUUID().slice(0, 8)}`;
    const record = (createdAt: number, ttl: number): TaskRecord => ({
      taskId: randomUUID(),
      kind: 'task',
      status: 'working',
      createdAt,
      lastUpdatedAt: createdAt,
      ttl,
      pollInterval: 1000,
      owner,
      sessionId: 'carol',
      tool: 'wait',
    });
    const now = Date.now();
    await store.create({ record: record(now, 60_000), arguments: {}, maxLiveTasksPerOwner: CAP });
    // A task that left without a terminal move (its record expired, here at once): its slot is still held.
    await store.create({ record: record(now - 2000, 1000), arguments: {}, maxLiveTasksPerOwner: CAP });
    const ownerLive = new TaskKeys(engine.keys).ownerLive(owner);
    expect(await inspect.zcard(ownerLive)).to.equal(2);
    await store.create({ record: record(now, 60_000), arguments: {}, maxLiveTasksPerOwner: CAP });
    // Full with a stale slot: the create drops it and is admitted.
    const calls = await commandsOf(() =>
      store.create({ record: record(now, 60_000), arguments: {}, maxLiveTasksPerOwner: CAP }),
    );
    expect(calls['zremrangebyscore']).to.equal(1);
    expect(await inspect.zcard(ownerLive)).to.equal(CAP);
    let refused: unknown;
    await store
      .create({ record: record(now, 60_000), arguments: {}, maxLiveTasksPerOwner: CAP })
      .catch((error: unknown) => (refused = error));
    expect((refused as Error | undefined)?.message).to.match(/Owner already has 3 unfinished tasks/);
    expect(await inspect.zcard(ownerLive)).to.equal(CAP);
    expect(Number(await inspect.call('PEXPIRETIME', ownerLive))).to.equal(now + 60_000);
  });
});

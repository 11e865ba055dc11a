// create-task-6.lua writes the job of a task itself (issue 16), as BullMQ's `queue.add` would write it: a prioritized
// job in one of our tool queues, a standard one (the wait list) in an external consumer's queue `ext-<tool>` or a tool
// queue without a fair order. These tests tie that to the installed BullMQ: the version the script was checked
// against, the job hash, prioritized score, wait list, marker and events written by each side for the same options, a
// real BullMQ Worker and Queue reading and running a job the script added, and the reconciler, which never finds a
// task without its job. Shared redis-server, a prefix of this file's own.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';
import { type Job, type JobsOptions, type Queue, Worker } from 'bullmq';
import {
  BULLMQ_JOB_LAYOUT_VERSION,
  closeRedis,
  createEngine,
  createRedis,
  type Engine,
  Maintenance,
  TaskKeys,
  TaskService,
  type ToolJobData,
  toolJobOptions,
} from '@mcp-tasks/engine';
import { ConfigError, createLogger } from '@mcp-tasks/runtime';
import { externalQueueName, toolQueueName, type Scheduling, type TaskRecord } from '@mcp-tasks/protocol';
import { sharedRedisUrl, uniquePrefix } from '../support/redis-server.ts';
import { track } from '../support/resources.ts';

const TOOL = 'layout';
/** A tool served by an external consumer (docs/job-contract.md): its jobs go to `ext-layout-ext`, without priority. */
const EXT_TOOL = 'layout-ext';
const SCHEDULING: Scheduling = { retry: { attempts: 4, backoff: { type: 'fixed', delayMs: 10 }, maxDelayMs: 60_000 } };
const TWO_32 = 2 ** 32;

/** The options of an external consumer's job, as job contract v1 states them (docs/job-contract.md). */
/** A job as BullMQ reads it back, its id (which differs between the two adds compared) replaced by `id`. */
const jobView = (job: Job, id: string) => ({
  name: job.name,
  data: { ...(job.data as object), taskId: id },
  opts: { ...job.opts, jobId: id },
  priority: job.priority,
  delay: job.delay,
  attemptsMade: job.attemptsMade,
  attemptsStarted: job.attemptsStarted,
  stalledCounter: job.stalledCounter,
  progress: job.progress,
  returnvalue: job.returnvalue as unknown,
  parentKey: job.parentKey,
});

const contractOptions = (jobId: string, retrySafe = true): JobsOptions & { jobId: string } => {
  const kept = { age: 86_400, count: 10_000 };
  return {
    jobId,
    attempts: retrySafe ? 3 : 1,
    backoff: { type: 'exponential', delay: 1000 },
    removeOnComplete: kept,
    removeOnFail: kept,
  };
};

describe('the job create-task-6.lua adds, against BullMQ’s own queue.add (shared redis-server)', function () {
  this.timeout(30_000);
  let url: string;
  let redis: Redis;
  let inspect: Redis;
  let engine: Engine;
  let queue: Queue;
  let extQueue: Queue;
  let prefix: string;
  const releases: (() => Promise<void>)[] = [];

  before(async () => {
    url = await sharedRedisUrl();
    prefix = `{${uniquePrefix()}}`;
    redis = createRedis(url, 'job-layout');
    releases.push(track('job-layout redis', () => closeRedis(redis)));
    inspect = new Redis(url, { maxRetriesPerRequest: null });
    releases.push(track('job-layout inspect', () => inspect.disconnect()));
    engine = createEngine({ redis }, { REDIS_PREFIX: prefix, SESSION_IDLE_TTL_MS: 60_000 });
    releases.push(() => engine.close());
    queue = engine.externalQueues.get(toolQueueName(TOOL));
    extQueue = engine.externalQueues.get(externalQueueName(EXT_TOOL));
    // The meta BullMQ's Queue writes once it is ready (its version, opts.maxLenEvents) is there before the adds.
    await Promise.all([queue.getVersion(), extQueue.getVersion()]);
  });
  after(async () => {
    await queue?.obliterate({ force: true });
    await extQueue?.obliterate({ force: true });
    await inspect?.del(engine.keys.fairQueue(TOOL));
    for (const release of releases.reverse()) await release();
  });

  let sequence = 0;
  const create = (args: Record<string, unknown> = {}, retrySafe = true, owner = 'alice'): Promise<TaskRecord> =>
    engine.tasks.create({
      kind: 'task',
      owner,
      sessionId: `session-${owner}`,
      tool: TOOL,
      arguments: { n: ++sequence, ...args },
      retrySafe,
      requestedTtl: 60_000,
      scheduling: SCHEDULING,
    });

  /** A task of the external consumer's tool: its job is a standard one in `ext-layout-ext`. */
  const createExternal = (args: Record<string, unknown> = {}, retrySafe = true): Promise<TaskRecord> =>
    engine.tasks.create({
      kind: 'task',
      owner: 'alice',
      sessionId: 'session-alice',
      tool: EXT_TOOL,
      queue: externalQueueName(EXT_TOOL),
      arguments: { n: ++sequence, ...args },
      retrySafe,
      requestedTtl: 60_000,
    });

  /** The same external job added by BullMQ itself: same name, data (but for its id) and the contract's options. */
  async function referenceExternal(ours: TaskRecord, referenceId: string, retrySafe = true): Promise<void> {
    const hash = await inspect.hgetall(extQueue.toKey(ours.taskId));
    const data = { ...(JSON.parse(hash['data'] ?? '') as Record<string, unknown>), taskId: referenceId };
    await extQueue.add(EXT_TOOL, data, contractOptions(referenceId, retrySafe));
  }

  /** What TaskService gives the job as data: the same for the reference job added with queue.add. */
  const dataOf = (record: TaskRecord, args: unknown) => ({
    taskId: record.taskId,
    tool: TOOL,
    arguments: args,
    owner: record.owner,
  });

  /** The same job added by BullMQ itself: same name, data (but for its id) and options, same priority. */
  async function reference(ours: TaskRecord, referenceId: string, retrySafe = true): Promise<void> {
    const hash = await inspect.hgetall(queue.toKey(ours.taskId));
    const data = { ...(JSON.parse(hash['data'] ?? '') as Record<string, unknown>), taskId: referenceId };
    await queue.add(TOOL, data, {
      ...toolJobOptions(referenceId, retrySafe, SCHEDULING),
      priority: Number(hash['priority']),
    });
  }

  it(`the installed BullMQ is the version whose job layout create-task-6.lua writes (${BULLMQ_JOB_LAYOUT_VERSION})`, () => {
    // Resolved as the engine resolves it: the version its Queue and Worker come from.
    const fromEngine = createRequire(new URL('../../packages/engine/package.json', import.meta.url));
    const { version } = fromEngine('bullmq/package.json') as { version: string };
    expect(
      version,
      `BullMQ ${version} is installed, but create-task-6.lua writes the job layout of BullMQ ` +
        `${BULLMQ_JOB_LAYOUT_VERSION}. Follow docs/bullmq-upgrade.md: compare BullMQ's addPrioritizedJob-9.lua and ` +
        'its includes (storeJob, getOrSetMaxEvents, isQueuePausedOrMaxed, addJobWithPriority) and the options ' +
        'Queue.add stores with what lua/include/bullmq-job.lua and bullmq/job-layout.ts scriptedJob write; the ' +
        'lock, holder fields and stalled-job check that heldJobKeys and release-lost-3.lua rely on (moveToActive, ' +
        'moveStalledJobsToWait, Worker.startStalledCheckTimer); the Worker internals ToolQueueWorker reaches ' +
        '(mainLoop, processJob); run this file, tool-queue-worker.test.ts and lost-jobs.test.ts, then change ' +
        'BULLMQ_JOB_LAYOUT_VERSION (packages/engine/src/bullmq/job-layout.ts).',
    ).to.equal(BULLMQ_JOB_LAYOUT_VERSION);
  });

  it('createEngine refuses to start with another BullMQ installed, saying what to install or upgrade', () => {
    const config = { REDIS_PREFIX: prefix, SESSION_IDLE_TTL_MS: 60_000 };
    for (const installed of ['6.7.1', '5.76.0', '7.0.0']) {
      expect(() => createEngine({ redis }, config, { bullmqVersion: installed }))
        .to.throw(ConfigError, `BullMQ ${installed} is installed`)
        .with.property('message')
        .that.includes(`Install bullmq@${BULLMQ_JOB_LAYOUT_VERSION}`)
        .and.includes(`whose job layout test was checked against BullMQ ${installed}`);
    }
    // The installed one, read as the engine reads it (the engine of this file started with it, in `before`).
    const other = createEngine({ redis }, config, { bullmqVersion: BULLMQ_JOB_LAYOUT_VERSION });
    return other.close();
  });

  it('invariant 2: the job hash has the fields, data, options and priority queue.add writes for the same options', async () => {
    const ours = await create({ text: 'a/b "quoted" é' });
    const referenceId = randomUUID();
    await reference(ours, referenceId);
    const mine = await inspect.hgetall(queue.toKey(ours.taskId));
    const theirs = await inspect.hgetall(queue.toKey(referenceId));
    expect(Object.keys(mine).sort()).to.deep.equal(Object.keys(theirs).sort());
    expect(Object.keys(mine).sort()).to.deep.equal(['data', 'delay', 'name', 'opts', 'priority', 'timestamp']);
    expect(mine['name']).to.equal(theirs['name']).and.to.equal(TOOL);
    expect(mine['delay']).to.equal(theirs['delay']).and.to.equal('0');
    expect(mine['priority']).to.equal(theirs['priority']);
    expect(Number(mine['priority'])).to.be.at.least(1);
    expect(mine['timestamp']).to.equal(String(ours.createdAt));
    expect(theirs['timestamp']).to.match(/^\d+$/);
    const data = JSON.parse(mine['data'] ?? '') as Record<string, unknown>;
    expect(data).to.deep.equal(dataOf(ours, { n: sequence, text: 'a/b "quoted" é' }));
    expect({ ...data, taskId: referenceId }).to.deep.equal(JSON.parse(theirs['data'] ?? ''));
    const opts = JSON.parse(mine['opts'] ?? '') as Record<string, unknown>;
    expect({ ...opts, jobId: referenceId }).to.deep.equal(JSON.parse(theirs['opts'] ?? ''));
    expect(opts).to.deep.equal({
      jobId: ours.taskId,
      attempts: 4,
      backoff: { type: 'mcpt-retry' },
      priority: Number(mine['priority']),
      removeOnComplete: true,
      removeOnFail: true,
    });
  });

  it('invariant 2: the prioritized scores share BullMQ’s priority counter; the marker and the "added"/"waiting" events are BullMQ’s', async () => {
    const marker = queue.keys['marker'] as string;
    const events = queue.keys['events'] as string;
    const prioritized = queue.keys['prioritized'] as string;
    await inspect.del(marker);
    const since = (await inspect.xrevrange(events, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0';
    const counter = queue.keys['pc'] as string;
    const counted = Number(await inspect.get(counter));
    const ours = await create();
    expect(Number(await inspect.get(counter))).to.equal(counted + 1);
    expect(await inspect.zrange(marker, '0', '-1', 'WITHSCORES')).to.deep.equal(['0', '0']);
    await inspect.del(marker);
    const referenceId = randomUUID();
    await reference(ours, referenceId);
    expect(await inspect.zrange(marker, '0', '-1', 'WITHSCORES')).to.deep.equal(['0', '0']);
    // Same priority, consecutive counter values: ours first, BullMQ's next.
    const mine = Number(await inspect.zscore(prioritized, ours.taskId));
    const theirs = Number(await inspect.zscore(prioritized, referenceId));
    const priority = Number(await inspect.hget(queue.toKey(ours.taskId), 'priority'));
    expect(Math.floor(mine / TWO_32)).to.equal(priority);
    expect(Math.floor(theirs / TWO_32)).to.equal(priority);
    expect(theirs - mine).to.equal(1);
    expect(mine % TWO_32).to.equal(counted + 1);
    // The events since: "added" then "waiting" for each, with the same fields.
    const added = (await inspect.xrange(events, `(${since}`, '+')).map(([, fields]) => fields);
    const asId = (fields: string[], id: string) => fields.map((value) => (value === id ? '<id>' : value));
    expect(added.slice(0, 2).map((fields) => asId(fields, ours.taskId))).to.deep.equal(
      added.slice(2, 4).map((fields) => asId(fields, referenceId)),
    );
    expect(added.slice(0, 2)).to.deep.equal([
      ['event', 'added', 'jobId', ours.taskId, 'name', TOOL],
      ['event', 'waiting', 'jobId', ours.taskId],
    ]);
  });

  /**
   * Every key of a queue as one comparable value: keys named after the queue's prefix, job ids and stream entry ids
   * replaced, so that two queues that went through the same adds look the same.
   */
  async function queueState(of: Queue, jobId?: string): Promise<Record<string, unknown>> {
    const base = of.toKey('');
    const state: Record<string, unknown> = {};
    const named = (value: string) => (jobId === undefined ? value : value.replaceAll(jobId, '<id>'));
    for (const key of (await inspect.keys(`${base}*`)).sort()) {
      const name = named(key.slice(base.length));
      const type = await inspect.type(key);
      if (type === 'hash') {
        const hash = await inspect.hgetall(key);
        state[name] = Object.fromEntries(Object.entries(hash).map(([field, value]) => [field, named(value)]));
      } else if (type === 'zset') state[name] = (await inspect.zrange(key, '0', '-1', 'WITHSCORES')).map(named);
      else if (type === 'list') state[name] = (await inspect.lrange(key, '0', '-1')).map(named);
      else if (type === 'set') state[name] = (await inspect.smembers(key)).map(named).sort();
      else if (type === 'stream')
        state[name] = (await inspect.xrange(key, '-', '+')).map(([, fields]) => fields.map(named));
      else state[name] = named((await inspect.get(key)) ?? '');
    }
    return state;
  }

  /**
   * On two fresh queues of the same kind, a task's job written by the script in one and the same job added by BullMQ's
   * queue.add in the other: every key of each queue, as one comparable value (what queueState gives), for ours and
   * theirs.
   */
  async function freshQueues(
    kind: 'prioritized' | 'standard',
  ): Promise<{ ourState: Record<string, unknown>; theirState: Record<string, unknown> }> {
    const suffix = randomUUID().slice(0, 8);
    const ourTool = `fresh-${kind}-a-${suffix}`;
    // A prioritized job is one of our tool queues' (in the engine's fair order); a standard one an external consumer's.
    const queueOf = kind === 'prioritized' ? toolQueueName : externalQueueName;
    const mine = engine.externalQueues.get(queueOf(ourTool));
    const theirs = engine.externalQueues.get(queueOf(`fresh-${kind}-b-${suffix}`));
    try {
      await Promise.all([mine.getVersion(), theirs.getVersion()]);
      expect(await queueState(mine), 'both queues start alike').to.deep.equal(await queueState(theirs));
      const ours = await engine.tasks.create({
        kind: 'task',
        owner: 'fresh',
        sessionId: 'fresh',
        tool: ourTool,
        ...(kind === 'standard' ? { queue: queueOf(ourTool) } : {}),
        arguments: { text: 'x' },
        retrySafe: true,
        requestedTtl: 60_000,
        scheduling: SCHEDULING,
      });
      const job = await inspect.hgetall(mine.toKey(ours.taskId));
      const referenceId = randomUUID();
      await theirs.add(
        job['name'] as string,
        { ...(JSON.parse(job['data'] ?? '') as ToolJobData), taskId: referenceId },
        kind === 'prioritized'
          ? { ...toolJobOptions(referenceId, true, SCHEDULING), priority: Number(job['priority']) }
          : contractOptions(referenceId),
      );
      const ourState = await queueState(mine, ours.taskId);
      const theirState = await queueState(theirs, referenceId);
      for (const state of [ourState, theirState]) {
        const hash = state['<id>'] as Record<string, unknown>;
        // The job's own timestamp: the task's creation for ours, the time of queue.add for theirs.
        expect(hash['timestamp']).to.match(/^\d{13}$/);
        hash['timestamp'] = '<timestamp>';
        // BullMQ writes its options in the order of a Lua table's hash (cjson.encode); a reader parses them.
        hash['opts'] = JSON.parse(hash['opts'] as string);
      }
      // BullMQ counts every job it adds in its id counter, also one with its own id; the script leaves it out.
      expect(theirState['id']).to.equal('1');
      expect(ourState).to.not.have.property('id');
      delete theirState['id'];
      return { ourState, theirState };
    } finally {
      await mine.obliterate({ force: true });
      await theirs.obliterate({ force: true });
      await inspect.del(engine.keys.fairQueue(ourTool));
    }
  }

  it('invariant 2: on two fresh queues, the script changes every key of its queue as queue.add changes the other’s, but BullMQ’s id counter', async () => {
    const { ourState, theirState } = await freshQueues('prioritized');
    expect(ourState).to.deep.equal(theirState);
    // What was compared: the job hash, the prioritized set, the priority counter, the marker, the events.
    expect(Object.keys(ourState).sort()).to.include.members(['<id>', 'events', 'marker', 'meta', 'pc', 'prioritized']);
    expect(ourState).to.not.have.any.keys('wait', 'paused', 'delayed', 'active');
  });

  it('invariant 2: an external consumer’s job (standard, no priority): on two fresh ext- queues, the script changes every key as queue.add does, but BullMQ’s id counter', async () => {
    const { ourState, theirState } = await freshQueues('standard');
    expect(ourState).to.deep.equal(theirState);
    // What was compared: the job hash, the wait list, the marker, the events (and the meta's opts.maxLenEvents).
    expect(Object.keys(ourState).sort()).to.include.members(['<id>', 'events', 'marker', 'meta', 'wait']);
    expect(ourState['wait']).to.deep.equal(['<id>']);
    expect(ourState).to.not.have.any.keys('pc', 'prioritized', 'paused', 'delayed', 'active');
  });

  it('invariant 2: an external consumer’s job hash has the fields, data and options (job contract v1) queue.add writes, priority 0', async () => {
    for (const retrySafe of [true, false]) {
      const ours = await createExternal({ text: 'a/b "quoted" é' }, retrySafe);
      const referenceId = randomUUID();
      await referenceExternal(ours, referenceId, retrySafe);
      const mine = await inspect.hgetall(extQueue.toKey(ours.taskId));
      const theirs = await inspect.hgetall(extQueue.toKey(referenceId));
      expect(Object.keys(mine).sort()).to.deep.equal(Object.keys(theirs).sort());
      expect(Object.keys(mine).sort()).to.deep.equal(['data', 'delay', 'name', 'opts', 'priority', 'timestamp']);
      expect([mine['name'], mine['delay'], mine['priority']]).to.deep.equal([EXT_TOOL, '0', '0']);
      expect([theirs['name'], theirs['delay'], theirs['priority']]).to.deep.equal([EXT_TOOL, '0', '0']);
      expect(mine['timestamp']).to.equal(String(ours.createdAt));
      // The contract's data: the task id, the tool and its arguments (no owner: it is ours alone).
      const data = JSON.parse(mine['data'] ?? '') as Record<string, unknown>;
      expect(data).to.deep.equal({
        taskId: ours.taskId,
        tool: EXT_TOOL,
        arguments: { n: sequence, text: 'a/b "quoted" é' },
      });
      expect({ ...data, taskId: referenceId }).to.deep.equal(JSON.parse(theirs['data'] ?? ''));
      const opts = JSON.parse(mine['opts'] ?? '') as Record<string, unknown>;
      expect({ ...opts, jobId: referenceId }).to.deep.equal(JSON.parse(theirs['opts'] ?? ''));
      expect(opts).to.deep.equal(contractOptions(ours.taskId, retrySafe));
      // Read back by BullMQ alike, waiting in the queue's wait list as the contract says.
      const [ourJob, theirJob] = await Promise.all([extQueue.getJob(ours.taskId), extQueue.getJob(referenceId)]);
      expect(ourJob && theirJob).to.not.equal(undefined);
      expect(jobView(ourJob as Job, '<id>')).to.deep.equal(jobView(theirJob as Job, '<id>'));
      expect(await ourJob?.getState()).to.equal('waiting');
    }
  });

  it('invariant 2: external jobs join the wait list in arrival order, interleaved with queue.add’s (LPUSH, taken from the other end)', async () => {
    const wait = extQueue.keys['wait'] as string;
    await inspect.del(wait);
    const first = await createExternal();
    const referenceId = randomUUID();
    await referenceExternal(first, referenceId);
    const third = await createExternal();
    expect(await inspect.lrange(wait, 0, -1)).to.deep.equal([third.taskId, referenceId, first.taskId]);
  });

  it('invariant 2: a paused queue, or one at its global concurrency, gets no marker, as from queue.add: prioritized and standard (external) jobs alike', async () => {
    const kinds = [
      { of: queue, ours: () => create(), theirs: (model: TaskRecord) => reference(model, randomUUID()) },
      {
        of: extQueue,
        ours: () => createExternal(),
        theirs: (model: TaskRecord) => referenceExternal(model, randomUUID()),
      },
    ];
    for (const { of, ours, theirs } of kinds) {
      const marker = of.keys['marker'] as string;
      const active = of.keys['active'] as string;
      /** Whether an add left the marker that wakes workers (pause() and resume() may write one themselves). */
      const markedBy = async (add: () => Promise<unknown>) => {
        await inspect.del(marker);
        await add();
        return inspect.zcard(marker);
      };
      const markers = async () => {
        const mine = await markedBy(ours);
        // The model of the reference job (its data and priority), added before the marker is cleared.
        const model = await ours();
        return { mine, theirs: await markedBy(() => theirs(model)) };
      };
      await of.pause();
      try {
        expect(await markers(), of.name).to.deep.equal({ mine: 0, theirs: 0 });
      } finally {
        await of.resume();
      }
      expect(await markers(), of.name).to.deep.equal({ mine: 1, theirs: 1 });
      await of.setGlobalConcurrency(1);
      try {
        await inspect.rpush(active, 'held-by-this-test');
        try {
          expect(await markers(), of.name).to.deep.equal({ mine: 0, theirs: 0 });
        } finally {
          await inspect.lrem(active, 0, 'held-by-this-test');
        }
        // Below the concurrency: marked again.
        expect(await markers(), of.name).to.deep.equal({ mine: 1, theirs: 1 });
      } finally {
        await of.removeGlobalConcurrency();
      }
    }
  });

  it('invariant 2: a paused queue’s standard jobs go onto its wait list, as from queue.add (BullMQ keeps them there while paused)', async () => {
    const wait = extQueue.keys['wait'] as string;
    const paused = extQueue.keys['paused'] as string;
    await extQueue.pause();
    try {
      const ours = await createExternal();
      const referenceId = randomUUID();
      await referenceExternal(ours, referenceId);
      expect((await inspect.lrange(wait, 0, 1)).sort()).to.deep.equal([ours.taskId, referenceId].sort());
      expect(await inspect.exists(paused)).to.equal(0);
      expect(await (await extQueue.getJob(ours.taskId))?.getState()).to.equal(
        await (await extQueue.getJob(referenceId))?.getState(),
      );
    } finally {
      await extQueue.resume();
    }
  });

  it('invariant 2: the events stream is trimmed to the meta’s opts.maxLenEvents, which is set to 10000 when missing, as by BullMQ', async () => {
    const meta = queue.keys['meta'] as string;
    const events = queue.keys['events'] as string;
    await inspect.hdel(meta, 'opts.maxLenEvents');
    await create();
    expect(await inspect.hget(meta, 'opts.maxLenEvents')).to.equal('10000');
    // An approximate MAXLEN trims whole stream nodes (100 entries each by default): 300 events, 10 kept, is well
    // below 300 once trimmed.
    await inspect.hset(meta, 'opts.maxLenEvents', 10);
    for (let i = 0; i < 150; i++) await create();
    expect(await inspect.xlen(events)).to.be.below(200);
    await inspect.hset(meta, 'opts.maxLenEvents', 10000);
  });

  describe('a real BullMQ Worker and Queue', () => {
    let worker: Worker | undefined;
    const runs = new Map<string, number>();

    before(async () => {
      // Start from an empty queue: only the jobs of these tests run.
      await queue.obliterate({ force: true });
    });
    after(async () => {
      await worker?.close();
    });

    function startWorker(): Worker {
      const connection = new Redis(url, { maxRetriesPerRequest: null });
      const release = track('job-layout worker connection', () => connection.disconnect());
      const started = new Worker(
        toolQueueName(TOOL),
        (job: Job) => {
          const { taskId, arguments: args } = job.data as { taskId: string; arguments: { mode?: string } };
          runs.set(taskId, (runs.get(taskId) ?? 0) + 1);
          if (args.mode === 'fail' || (args.mode === 'fail-once' && job.attemptsMade === 0)) {
            return Promise.reject(new Error(`${args.mode} on run ${job.attemptsMade + 1}`));
          }
          return Promise.resolve('done');
        },
        { connection, prefix, concurrency: 1, settings: { backoffStrategy: () => 0 } },
      );
      const close = started.close.bind(started);
      started.close = async (force?: boolean) => {
        await close(force);
        await release();
      };
      return started;
    }

    const finished = (w: Worker, taskId: string, event: 'completed' | 'failed') =>
      new Promise<Job>((resolve) => {
        const listener = (job: Job | undefined) => {
          if (job?.id !== taskId) return;
          if (event === 'failed' && (job.attemptsMade ?? 0) < (job.opts.attempts ?? 1)) return;
          w.off(event, listener);
          resolve(job);
        };
        w.on(event, listener);
      });

    it('Queue.getJob reads a job the script added as it reads the one queue.add added', async () => {
      const ours = await create({ mode: 'ok' });
      const referenceId = randomUUID();
      await reference(ours, referenceId);
      const mine = await queue.getJob(ours.taskId);
      const theirs = await queue.getJob(referenceId);
      expect(mine && theirs).to.not.equal(undefined);
      expect(jobView(mine as Job, '<id>')).to.deep.equal(jobView(theirs as Job, '<id>'));
      expect(mine?.timestamp).to.equal(ours.createdAt);
      expect(await mine?.getState()).to.equal('prioritized');
      expect(await queue.getJobCounts('prioritized')).to.deep.equal({ prioritized: 2 });
    });

    it('runs it: retried after a failure while attempts are left, removed on completion and on final failure', async () => {
      const flaky = await create({ mode: 'fail-once' });
      const failing = await create({ mode: 'fail' }, false);
      expect(JSON.parse((await inspect.hget(queue.toKey(failing.taskId), 'opts')) ?? '')).to.include({ attempts: 4 });
      worker = startWorker();
      const [completed, failed] = await Promise.all([
        finished(worker, flaky.taskId, 'completed'),
        finished(worker, failing.taskId, 'failed'),
      ]);
      expect(runs.get(flaky.taskId)).to.equal(2);
      expect(completed.attemptsMade).to.equal(2);
      // The tool's retry policy: four runs in all, then it stays failed (and is removed).
      expect(runs.get(failing.taskId)).to.equal(4);
      expect(failed.attemptsMade).to.equal(4);
      expect(await queue.getJob(flaky.taskId)).to.equal(undefined);
      expect(await queue.getJob(failing.taskId)).to.equal(undefined);
      expect(await inspect.exists(queue.toKey(flaky.taskId), queue.toKey(failing.taskId))).to.equal(0);
      expect(await queue.getJobCounts('completed', 'failed')).to.deep.equal({ completed: 0, failed: 0 });
    });
  });

  it('invariant 2: without a fair order, the script adds the job as a standard one, in arrival order', async () => {
    // A TaskService the engine did not compose: no FairQueue (the engine always gives its services one).
    const plain = new TaskService(engine.store, redis, engine.subscriber, engine.tasks.timing).useExternalQueues(
      engine.externalQueues,
    );
    const record = await plain.create({
      kind: 'task',
      owner: 'plain',
      sessionId: 'plain',
      tool: TOOL,
      arguments: {},
      retrySafe: true,
    });
    const job = await queue.getJob(record.taskId);
    expect(job?.priority).to.equal(0);
    expect(job?.timestamp).to.equal(record.createdAt);
    expect(await job?.getState()).to.equal('waiting');
    expect(await engine.store.get(record.taskId)).to.deep.include({ taskId: record.taskId, status: 'working' });
    await job?.remove();
  });

  it('invariant 2: the reconciler, run the moment a create step returns, finds the job there: an external consumer’s task (and one without a fair order) is never failed as lost', async () => {
    // An engine of its own prefix: the reconciler sees only the tasks of this test.
    const own = createEngine({ redis }, { REDIS_PREFIX: `{${uniquePrefix()}}`, SESSION_IDLE_TTL_MS: 60_000 });
    const maintenance = new Maintenance(
      redis,
      own.store,
      own.queue,
      createLogger({ service: 'test', level: 'error' }),
      {
        intervalMs: 60_000,
        reconcileAfterMs: 0,
        batchSize: 100,
        externalQueues: own.externalQueues,
      },
    );
    // A reconciliation pass between the create script and whatever the create does next: before the job was written
    // in the same step, an external task's record stood there without its job and was failed as "lost".
    const settled: number[] = [];
    const createStep = own.store.create.bind(own.store);
    own.store.create = async (task) => {
      const created = await createStep(task);
      settled.push(await maintenance.reconcileStale(Date.now() + 1));
      return created;
    };
    const plain = new TaskService(own.store, redis, own.subscriber, own.tasks.timing).useExternalQueues(
      own.externalQueues,
    );
    const input = { kind: 'task' as const, owner: 'racer', sessionId: 'racer', arguments: {}, retrySafe: true };
    try {
      const external = await own.tasks.create({ ...input, tool: EXT_TOOL, queue: externalQueueName(EXT_TOOL) });
      const unfair = await plain.create({ ...input, tool: TOOL });
      const fair = await own.tasks.create({ ...input, tool: TOOL });
      expect(settled).to.deep.equal([0, 0, 0]);
      for (const task of [external, unfair, fair]) {
        expect((await own.store.get(task.taskId))?.status, task.tool).to.equal('working');
      }
      const queued = async (of: Queue, taskId: string) => (await of.getJob(taskId))?.getState();
      expect(await queued(own.externalQueues.get(externalQueueName(EXT_TOOL)), external.taskId)).to.equal('waiting');
      expect(await queued(own.externalQueues.get(toolQueueName(TOOL)), unfair.taskId)).to.equal('waiting');
      expect(await queued(own.externalQueues.get(toolQueueName(TOOL)), fair.taskId)).to.equal('prioritized');
      // The same pass once the job is gone fails the task: the check above did look.
      await (await own.externalQueues.get(externalQueueName(EXT_TOOL)).getJob(external.taskId))?.remove();
      expect(await maintenance.reconcileStale(Date.now() + 1)).to.equal(1);
      expect(await own.store.get(external.taskId)).to.deep.include({
        status: 'failed',
        statusMessage: 'The task was lost: its job no longer exists in the queue.',
      });
    } finally {
      for (const name of [externalQueueName(EXT_TOOL), toolQueueName(TOOL)]) {
        await own.externalQueues.get(name).obliterate({ force: true });
      }
      await inspect.del(own.keys.fairQueue(TOOL));
      await own.close();
    }
  });

  it('T-RSRC-1, invariant 2: a create refused by the owner cap writes no job either', async () => {
    const capped = createEngine(
      { redis },
      { REDIS_PREFIX: prefix, SESSION_IDLE_TTL_MS: 60_000, MAX_TASKS_PER_OWNER: 1 },
    );
    try {
      const owner = `capped-${randomUUID().slice(0, 8)}`;
      const input = {
        kind: 'task' as const,
        owner,
        sessionId: 'capped',
        tool: TOOL,
        arguments: {},
        retrySafe: true,
        scheduling: SCHEDULING,
      };
      await capped.tasks.create(input);
      const jobs = await queue.count();
      const tasks = await inspect.zcard(new TaskKeys(engine.keys).allTasks());
      let refused: unknown;
      await capped.tasks.create(input).catch((error: unknown) => (refused = error));
      expect((refused as Error | undefined)?.message).to.match(/Too many unfinished tasks/);
      expect(await queue.count()).to.equal(jobs);
      expect(await inspect.zcard(new TaskKeys(engine.keys).allTasks())).to.equal(tasks);
    } finally {
      await capped.close();
    }
  });

  it('invariant 2: a create whose job cannot be written leaves no record behind (a failing script keeps its writes)', async () => {
    // The events stream made a string: the script fails at the job's first XADD, after the record and its indexes.
    // (BullMQ's next XADD makes it again.)
    const events = queue.keys['events'] as string;
    await inspect.del(events);
    await inspect.set(events, 'not a stream');
    const taskKeys = new TaskKeys(engine.keys);
    const owner = `broken-${randomUUID().slice(0, 8)}`;
    const tasks = await inspect.zcard(taskKeys.allTasks());
    const jobs = await queue.count();
    let failure: unknown;
    try {
      await create({}, true, owner).catch((error: unknown) => (failure = error));
    } finally {
      await inspect.del(events);
    }
    expect(String(failure)).to.match(/WRONGTYPE/);
    expect(await inspect.zcard(taskKeys.allTasks()), 'no task in the all-tasks index').to.equal(tasks);
    expect(await inspect.zcard(taskKeys.ownerIndex(owner)), 'nor in its owner’s').to.equal(0);
    expect(await inspect.zcard(taskKeys.ownerLive(owner)), 'nor counted against its owner’s cap').to.equal(0);
    expect(await queue.count()).to.equal(jobs);
    const records = await inspect.keys(`${taskKeys.record('*')}`);
    for (const key of records) expect(await inspect.hget(key, 'owner')).to.not.equal(owner);
  });
});

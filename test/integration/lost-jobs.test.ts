// LostJobs (engine lost-jobs.ts) against a real Redis and real BullMQ Workers: a job whose holder's connections have
// all closed is released on a second look a gap later, and BullMQ's own stalled-job check moves it back to wait with
// the stall counted; the release is fenced by the lock's token, a connected holder is never a suspect, a holder
// without an instance (an earlier version) waits for its lock's term; and what a look costs in Redis commands.
import { expect } from 'chai';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { KeySpace, LostJobs, ToolQueueWorker, workerConnectionName, workerInstance, workerOf } from '@mcp-tasks/engine';
import { commandsDuring } from '../support/command-stats.ts';
import { eventually, sleep } from '../support/mcp-client.ts';
import { startRedisServer, type RedisServer, uniquePrefix } from '../support/redis-server.ts';

const INTERVAL_MS = 1000;

describe('LostJobs: jobs of a gone worker go back to the queue in seconds (real Redis and BullMQ)', function () {
  this.timeout(30_000);
  let server: RedisServer;
  let inspect: Redis;
  const connections: Redis[] = [];
  const workers: Worker[] = [];
  const connect = (connectionName?: string) => {
    const redis = new Redis(server.url, { maxRetriesPerRequest: null, ...(connectionName ? { connectionName } : {}) });
    connections.push(redis);
    return redis;
  };
  /** This process as the worker that looks: its connection, named after its instance, an interval old. */
  let looker: { instance: string; redis: Redis };

  before(async () => {
    server = await startRedisServer();
    inspect = new Redis(server.url);
    const instance = workerInstance('worker-looker-1');
    looker = { instance, redis: connect(workerConnectionName('mcpt-worker', instance)) };
    await looker.redis.ping();
    // A look trusts CLIENT LIST only once the looker's own connection is an interval old (a Redis restart).
    await sleep(INTERVAL_MS + 100);
  });
  afterEach(async () => {
    for (const worker of workers.splice(0)) await worker.close(true);
  });
  after(async () => {
    for (const redis of connections.splice(0)) redis.disconnect();
    inspect.disconnect();
    await server.stop();
  });

  /** A job taken by a worker named `holder` whose processor never ends; `die` closes its every connection. */
  async function heldJob(prefix: string, holder: string) {
    const connection = connect(workerConnectionName('mcpt-worker-bull', holder));
    const queue = new Queue('tool-hold', { connection: connect(), prefix });
    await queue.add('hold', {}, { jobId: 'job-1' });
    let taken: (job: Job) => void = () => undefined;
    const started = new Promise<Job>((resolve) => (taken = resolve));
    const worker = new Worker(
      'tool-hold',
      (job) => {
        taken(job);
        return new Promise(() => undefined);
      },
      { connection, prefix, name: holder, lockDuration: 60_000, stalledInterval: 60_000 },
    );
    workers.push(worker);
    const job = await started;
    return {
      queue,
      job,
      lock: `${prefix}:tool-hold:job-1:lock`,
      /** Stops the Worker's own commands (its loop, its lock renewals), its named connection left open. */
      async quiet() {
        await worker.close(true);
      },
      /** As a kill -9: no more lock renewals, and every connection closed at once. */
      async die() {
        await worker.close(true);
        connection.disconnect();
        await eventually(async () =>
          ((await inspect.client('LIST')) as string).includes(
            `name=${workerConnectionName('mcpt-worker-bull', holder)} `,
          )
            ? undefined
            : true,
        );
      },
    };
  }

  const lostJobs = (prefix: string) => new LostJobs(looker.redis, new KeySpace(prefix), looker.instance, INTERVAL_MS);

  it('files the job of a worker with no connection left, releases it a gap later, and BullMQ moves it back to wait with the stall counted', async () => {
    const prefix = uniquePrefix();
    const holder = workerInstance('worker-gone-1');
    const held = await heldJob(prefix, holder);
    await held.die();
    const finder = lostJobs(prefix);
    const first = await finder.look('tool-hold', held.queue);
    expect(first).to.deep.equal({ released: [], suspects: 1 });
    // Within the gap: another worker's look finds the lease taken, and does nothing.
    expect(await finder.look('tool-hold', held.queue)).to.deep.equal({ released: [], suspects: 0 });
    await sleep(finder.gapMs);
    const second = await finder.look('tool-hold', held.queue);
    expect(second.suspects).to.equal(0);
    expect(second.released).to.have.length(1);
    expect(second.released[0]).to.deep.include({ jobId: 'job-1', holder, attempt: 1 });
    expect(workerOf(String(second.released[0]?.holder))).to.equal('worker-gone-1');
    expect(await inspect.exists(held.lock)).to.equal(0);

    // BullMQ's own stalled-job check (ToolQueueWorker.checkStalledNow) moves it to wait, counting the stall.
    const next = new ToolQueueWorker('tool-hold', null, { connection: connect(), prefix, autorun: false }, () => false);
    workers.push(next);
    await next.checkStalledNow();
    await eventually(async () => ((await held.queue.getJobState('job-1')) === 'waiting' ? true : undefined));
    expect((await held.queue.getJob('job-1'))?.stalledCounter).to.equal(1);
  });

  it('releases only a lock seen twice with the same token, never a job another (connected) worker holds, nor one of a holder without an instance', async () => {
    const prefix = uniquePrefix();
    const held = await heldJob(prefix, workerInstance('worker-gone-2'));
    await held.die();
    const finder = lostJobs(prefix);
    expect((await finder.look('tool-hold', held.queue)).suspects).to.equal(1);
    // The lock under another token: filed again, not released (a release needs two looks at the same lock).
    await inspect.set(held.lock, 'another-token', 'PX', 60_000);
    await sleep(finder.gapMs);
    expect(await finder.look('tool-hold', held.queue)).to.deep.equal({ released: [], suspects: 1 });
    // Then taken by a connected worker (its lock, its name as the holder): the suspect is dropped, the lock left alone.
    await inspect.set(held.lock, 'live-worker-token', 'PX', 60_000);
    await inspect.hset(`${prefix}:tool-hold:job-1`, 'pb', looker.instance.replace('looker', 'other'));
    connect(workerConnectionName('mcpt-worker', looker.instance.replace('looker', 'other')));
    await eventually(async () =>
      ((await inspect.client('LIST')) as string).includes('worker-other-1') ? true : undefined,
    );
    await sleep(finder.gapMs);
    expect(await finder.look('tool-hold', held.queue)).to.deep.equal({ released: [], suspects: 0 });
    expect(await inspect.get(held.lock)).to.equal('live-worker-token');
    expect(await inspect.exists(`${prefix}:lost-jobs:tool-hold:suspects`)).to.equal(0);

    const livePrefix = uniquePrefix();
    const live = await heldJob(livePrefix, workerInstance('worker-live-1'));
    const liveFinder = lostJobs(livePrefix);
    expect(await liveFinder.look('tool-hold', live.queue)).to.deep.equal({ released: [], suspects: 0 });

    // A worker of an earlier version names its jobs' holder without an instance: its jobs wait for their lock's term.
    const oldPrefix = uniquePrefix();
    const old = await heldJob(oldPrefix, 'worker-old-1');
    await old.die();
    const oldFinder = lostJobs(oldPrefix);
    expect(await oldFinder.look('tool-hold', old.queue)).to.deep.equal({ released: [], suspects: 0 });
    await sleep(oldFinder.gapMs);
    expect(await oldFinder.look('tool-hold', old.queue)).to.deep.equal({ released: [], suspects: 0 });
    expect(await inspect.exists(old.lock)).to.equal(1);
  });

  it('costs one command when another worker looked this round, and a few per active job when it looks (CLIENT LIST only for jobs of other workers)', async () => {
    const prefix = uniquePrefix();
    const live = await heldJob(prefix, workerInstance('worker-live-2'));
    await live.quiet();
    const finder = lostJobs(prefix);
    const looked = await commandsDuring(inspect, () => finder.look('tool-hold', live.queue));
    const skipped = await commandsDuring(inspect, () => finder.look('tool-hold', live.queue));
    expect(skipped).to.deep.equal({ set: 1 });
    // The lease, the active list and the suspects' count, then the job's lock and holder, then CLIENT LIST.
    expect(looked).to.deep.equal({ set: 1, lrange: 1, hlen: 1, get: 1, hmget: 1, 'client|list': 1 });
  });
});

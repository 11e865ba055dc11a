// ToolQueueWorker (packages/engine/src/bullmq): settling a job tries to take the next one only while the queue has had more jobs
// than the worker took. Counted with INFO commandstats on a Redis the test has to itself: RPOPLPUSH runs once per
// look at the queue's wait list (a start, or the try to take a next job as one settles), whether it finds a job or
// not; BullMQ's own Worker, beside it, is the reference.
import { once } from 'node:events';
import { expect } from 'chai';
import { Queue, Worker, type Job, type WorkerOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { ToolQueueWorker } from '@mcp-tasks/engine';
import { commandsDuring } from '../support/command-stats.ts';
import { startRedisServer, type RedisServer, uniquePrefix } from '../support/redis-server.ts';

type Data = { n: number };
type Processor = (job: Job<Data>) => Promise<number>;
type MakeWorker = (name: string, processor: Processor, options: WorkerOptions) => Worker<Data>;

const bullmqWorker: MakeWorker = (name, processor, options) => new Worker<Data>(name, processor, options);
const toolQueueWorker: MakeWorker = (name, processor, options) =>
  new ToolQueueWorker<Data>(name, processor, options, () => false);

describe('ToolQueueWorker: a settling job tries for a next one only on a queue not found empty (issue 16; real Redis and BullMQ)', () => {
  let server: RedisServer;
  let inspect: Redis;
  const connections: Redis[] = [];
  const connect = () => {
    const redis = new Redis(server.url, { maxRetriesPerRequest: null });
    connections.push(redis);
    return redis;
  };

  before(async () => {
    server = await startRedisServer();
    inspect = new Redis(server.url);
  });
  afterEach(() => {
    for (const redis of connections.splice(0)) redis.disconnect();
  });
  after(async () => {
    inspect.disconnect();
    await server.stop();
  });

  /**
   * Until the worker waits on the queue's marker with nothing there to wake it: it has a free slot and has looked
   * for a job until it found none (taking a job sets the marker again, for other workers, which costs it a look).
   */
  async function blockedOnMarker(prefix: string): Promise<void> {
    for (;;) {
      const clients = (await inspect.client('LIST')) as string;
      // `cmd` is a connection's last command; `flags=b` says it is blocked in it now.
      const blocked = clients.split('\n').some((line) => line.includes('cmd=bzpopmin') && /\bflags=\w*b/.test(line));
      if (blocked && (await inspect.exists(`${prefix}:q:marker`)) === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /** Commands Redis ran while the one running job, started on an otherwise empty queue, settled. */
  async function settlingOnAnEmptyQueue(make: MakeWorker): Promise<Record<string, number>> {
    const prefix = uniquePrefix();
    const queue = new Queue<Data>('q', { connection: connect(), prefix });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const worker = make('q', async (job) => (await gate, job.data.n), {
      connection: connect(),
      prefix,
      concurrency: 4,
      // The longest blocking read BullMQ allows (10 s): one timing out would look at the queue on its own.
      drainDelay: 10,
    });
    try {
      await worker.waitUntilReady();
      const active = once(worker, 'active');
      await queue.add('t', { n: 1 }, { priority: 1, removeOnComplete: true });
      await active;
      // The worker has looked for a second job, found none, and waits for the marker with its free slots.
      await blockedOnMarker(prefix);
      return await commandsDuring(inspect, async () => {
        const completed = once(worker, 'completed');
        release();
        await completed;
      });
    } finally {
      await worker.close();
      await queue.close();
    }
  }

  /** Commands Redis ran while a worker with one slot worked through jobs that were all waiting when it started. */
  async function drainingABacklog(make: MakeWorker, jobs: number): Promise<Record<string, number>> {
    const prefix = uniquePrefix();
    const queue = new Queue<Data>('q', { connection: connect(), prefix });
    for (let n = 1; n <= jobs; n++) await queue.add('t', { n }, { priority: n, removeOnComplete: true });
    let worker: Worker<Data> | undefined;
    try {
      return await commandsDuring(inspect, async () => {
        let done = 0;
        let allDone!: () => void;
        const finished = new Promise<void>((resolve) => (allDone = resolve));
        worker = make('q', (job) => Promise.resolve(job.data.n), { connection: connect(), prefix, concurrency: 1 });
        worker.on('completed', () => {
          if (++done === jobs) allDone();
        });
        await finished;
      });
    } finally {
      await worker?.close();
      await queue.close();
    }
  }

  it('a job settling while the queue is found empty does not look for a next job (BullMQ Worker: it does)', async () => {
    const ours = await settlingOnAnEmptyQueue(toolQueueWorker);
    const bullmq = await settlingOnAnEmptyQueue(bullmqWorker);
    expect(bullmq.rpoplpush, 'BullMQ Worker looks for a next job').to.equal(1);
    expect(ours.rpoplpush ?? 0, 'ToolQueueWorker does not').to.equal(0);
    // The try costs BullMQ's worker more than the RPOPLPUSH: the queue's meta, the delayed and prioritized sets.
    const total = (calls: Record<string, number>) => Object.values(calls).reduce((sum, count) => sum + count, 0);
    expect(total(bullmq) - total(ours)).to.be.at.least(5);
  });

  it('a queue at its global concurrency starts its next job as a running one settles', async () => {
    // No marker wakes a worker for jobs that wait for the queue's limit: only the settling job's try starts them
    // (without it, the next job would wait for the worker's block timeout, up to 10 s).
    const prefix = uniquePrefix();
    const queue = new Queue<Data>('q', { connection: connect(), prefix });
    await queue.setGlobalConcurrency(1);
    // The first job runs until `release`, the others until `releaseRest`.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let releaseRest!: () => void;
    const rest = new Promise<void>((resolve) => (releaseRest = resolve));
    const worker = new ToolQueueWorker<Data>(
      'q',
      async (job) => {
        await (job.data.n === 1 ? gate : rest);
        return job.data.n;
      },
      // The longest blocking read BullMQ allows (10 s): without the try, the second job would start only after it.
      { connection: connect(), prefix, concurrency: 2, drainDelay: 10 },
      () => true,
    );
    try {
      let done = 0;
      const finished = new Promise<void>((resolve) =>
        worker.on('completed', () => {
          if (++done === 3) resolve();
        }),
      );
      const active = once(worker, 'active') as Promise<[Job<Data>]>;
      await queue.add('t', { n: 1 }, { priority: 1, removeOnComplete: true });
      const firstToken = (await active)[0].token;
      for (let n = 2; n <= 3; n++) await queue.add('t', { n }, { priority: n, removeOnComplete: true });
      // The queue is at its limit: the worker found nothing to take and waits on the marker, which no add set.
      await blockedOnMarker(prefix);
      // A job taken by the try of a settling job carries that job's lock token on; one taken by a look of its own
      // gets a new token.
      const tokens = new Map<number, string | undefined>();
      const secondActive = new Promise<void>((resolve) =>
        worker.on('active', (job) => {
          tokens.set(job.data.n, job.token);
          if (job.data.n === 2) resolve();
        }),
      );
      release();
      await secondActive;
      expect(tokens.get(2), 'the second job was taken by the first one as it settled').to.equal(firstToken);
      releaseRest();
      await finished;
    } finally {
      await worker.close();
      await queue.close();
    }
  });

  it('a backlog is worked through taking each next job as the last one settles, as BullMQ Worker does', async () => {
    const ours = await drainingABacklog(toolQueueWorker, 10);
    const bullmq = await drainingABacklog(bullmqWorker, 10);
    expect(ours.rpoplpush).to.equal(bullmq.rpoplpush);
    expect(ours.evalsha).to.equal(bullmq.evalsha);
  });
});

// Queues of tools served by consumers outside this codebase (docs/job-contract.md, contract v1): the api adds the
// jobs, an external consumer (any BullMQ port) processes them, and these listeners — run by every worker — map a
// job's return value or failure onto its task through the shared result mapping, and relay its progress.
import {
  isTerminal,
  progressFromJob,
  settleWithJobFailure,
  settleWithJobReturn,
  type Settlement,
} from '@mcp-tasks/protocol';
import { Queue, QueueEvents } from 'bullmq';
import type { ExternalTasks } from './tasks/external.ts';
import type { KeySpace } from './keys.ts';
import type { Logger } from '@mcp-tasks/runtime';
import type { ToolJobData } from './queue.ts';
import { isConnectionError } from './redis-log.ts';
import { createRedis, closeRedis, type RedisClient } from './redis.ts';
import type { RedisEnv } from './config.ts';
import type { TaskStore } from './records/store.ts';

/** Opens each external queue once, on first use. */
export class ExternalQueues {
  readonly #queues = new Map<string, Queue<ToolJobData>>();

  constructor(
    private readonly connection: RedisClient,
    private readonly prefix: string,
  ) {}

  get(name: string): Queue<ToolJobData> {
    let queue = this.#queues.get(name);
    if (!queue) {
      queue = new Queue<ToolJobData>(name, { connection: this.connection, prefix: this.prefix });
      // The shared connection's errors are its owner's to log (RedisConnectionLog); unheard, BullMQ prints stacks.
      queue.on('error', () => undefined);
      this.#queues.set(name, queue);
    }
    return queue;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#queues.values()].map((queue) => queue.close()));
    this.#queues.clear();
  }
}

const EVENT_CLAIM_MS = 10 * 60_000;

/**
 * Listens to one external queue's events. Every worker runs one per queue; a short-lived claim per event id lets
 * exactly one of them handle it (settling is atomic anyway; the claim keeps progress notifications single). The
 * last handled event id is kept in Redis, so listeners that all restart resume from there instead of missing
 * completions (the event stream is capped, about 10k events).
 */
export class ExternalQueueListener {
  #events: QueueEvents | undefined;
  #connection: RedisClient | undefined;

  constructor(
    private readonly queue: string,
    private readonly deps: {
      env: Pick<RedisEnv, 'REDIS_URL' | 'REDIS_CLUSTER_NODES'>;
      prefix: string;
      redis: RedisClient;
      keys: KeySpace;
      store: TaskStore;
      external: ExternalTasks;
      log: Logger;
    },
  ) {}

  async start(): Promise<void> {
    const { redis, keys, prefix, env } = this.deps;
    const lastEventId = (await redis.get(keys.externalEventCursor(this.queue))) ?? '$';
    this.#connection = createRedis(env, `mcpt-ext-events-${this.queue}`);
    this.#connection.on('error', () => undefined);
    const events = new QueueEvents(this.queue, { connection: this.#connection, prefix, lastEventId });
    this.#events = events;
    events.on('error', (error) => {
      // An outage is told once for the whole process, by its own connections' RedisConnectionLog.
      if (isConnectionError(error)) return;
      this.deps.log.warn('external queue events error', { queue: this.queue, error: String(error) });
    });
    events.on('completed', ({ jobId, returnvalue }, id) => {
      this.#handle(id, jobId, (tool) => settleWithJobReturn(tool, returnvalue));
    });
    events.on('failed', ({ jobId, failedReason }, id) => {
      this.#handle(id, jobId, (tool) => settleWithJobFailure(tool, failedReason));
    });
    events.on('progress', ({ jobId, data }, id) => {
      const report = progressFromJob(data);
      if (report) this.#handle(id, jobId, undefined, report);
    });
    await events.waitUntilReady();
  }

  async close(): Promise<void> {
    await this.#events?.close();
    if (this.#connection) await closeRedis(this.#connection);
  }

  #handle(
    eventId: string,
    taskId: string,
    settlement: ((tool: string) => Settlement) | undefined,
    progress?: { progress: number; total?: number; message?: string },
  ): void {
    const run = async () => {
      const { redis, keys, store, external, log } = this.deps;
      const claimed = await redis.set(keys.externalEventClaim(this.queue, eventId), '1', 'PX', EVENT_CLAIM_MS, 'NX');
      if (claimed !== 'OK') return;
      await redis.set(keys.externalEventCursor(this.queue), eventId);
      const record = await store.get(taskId);
      if (!record || isTerminal(record.status)) return;
      if (progress) {
        await external.progress(record, progress);
        return;
      }
      if (!settlement) return;
      const outcome = settlement(record.tool);
      const moved = await store.settle(record, outcome);
      if (moved.ok)
        log.info('task settled by its external consumer', { taskId, queue: this.queue, status: outcome.status });
    };
    run().catch((error: unknown) =>
      this.deps.log.warn('external queue event not handled', { queue: this.queue, taskId, error: String(error) }),
    );
  }
}

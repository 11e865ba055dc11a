// Per-tool limits on BullMQ's side (docs/scheduling.md): a tool's global concurrency and rate limit are settings of its
// queue (the queue's meta hash, read by every worker's fetch), applied by each worker serving the tool at start-up and
// at every catalog heartbeat (so they come back after a Redis restart without persistence). And what operators see of
// them: running/limit, queued per principal, the current rate-limit wait, retries, timeouts and parked jobs.
import type { CatalogEntry, Scheduling } from '@mcp-tasks/protocol';
import type { Queue } from 'bullmq';
import type { ExternalQueues } from '../external-queues.ts';
import type { KeySpace } from '../keys.ts';
import type { ToolJobData } from '../queue.ts';
import type { RedisClient } from '../redis.ts';
import { ownerLabel } from '@mcp-tasks/runtime';

/** Sets (or removes) the tool queue's global concurrency and rate limit from the tool's settings. */
export async function applyQueueLimits(queue: Queue, scheduling: Scheduling | undefined): Promise<void> {
  if (scheduling?.concurrency !== undefined) await queue.setGlobalConcurrency(scheduling.concurrency);
  else await queue.removeGlobalConcurrency();
  if (scheduling?.rateLimit !== undefined)
    await queue.setGlobalRateLimit(scheduling.rateLimit.max, scheduling.rateLimit.perMs);
  else await queue.removeGlobalRateLimit();
}

export const SchedulingCounter = {
  /** A run failed and another one was scheduled. */
  Retries: 'retries',
  /** A run was aborted at its timeoutMs. */
  Timeouts: 'timeouts',
  /** A job was held back by a per-principal cap. */
  Parked: 'parked',
} as const;
export type SchedulingCounter = (typeof SchedulingCounter)[keyof typeof SchedulingCounter];

/** Counts a scheduling event of a tool, for operators (one HINCRBY). */
export function countSchedulingEvent(
  redis: RedisClient,
  keys: KeySpace,
  tool: string,
  counter: SchedulingCounter,
): Promise<number> {
  return redis.hincrby(keys.schedulingCounters(), `${tool}:${counter}`, 1);
}

export interface ToolSchedulingView {
  tool: string;
  queue: string;
  scheduling: Scheduling;
  running: number;
  /** The global concurrency in force on the queue (what BullMQ enforces), if any. */
  limit?: number;
  /** Jobs ready to start when a slot frees (BullMQ's wait list and prioritized set). */
  queued: number;
  /** Jobs not to start before a time: a retry's backoff, held back by a per-principal cap, an external poll. */
  delayed: number;
  /**
   * Waiting jobs by principal (as operators see it: ownerLabel), counted over the first QUEUED_SAMPLE of them
   * (`queuedSampled` says when cut).
   */
  queuedByPrincipal: Record<string, number>;
  queuedSampled: boolean;
  /** How long the queue stays rate limited from now (0: not limited). */
  rateLimitedForMs: number;
  counters: Record<SchedulingCounter, number>;
}

/** The most waiting jobs read per tool to count them by principal. */
export const QUEUED_SAMPLE = 1000;

export class SchedulingView {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly queues: ExternalQueues,
  ) {}

  /** One row per tool the runner's workers serve (external consumers' queues are theirs to limit). */
  async tools(entries: Iterable<CatalogEntry>, sample = QUEUED_SAMPLE): Promise<ToolSchedulingView[]> {
    const own = [...entries].filter((entry) => !entry.external).sort((a, b) => (a.name < b.name ? -1 : 1));
    const counters = await this.redis.hgetall(this.keys.schedulingCounters());
    return Promise.all(own.map((entry) => this.#tool(entry, counters, sample)));
  }

  /** Jobs held back by per-principal caps, by principal as operators see it (ownerLabel). */
  async parked(): Promise<Record<string, number>> {
    const owners = await this.redis.smembers(this.keys.parkedOwners());
    const counts = await Promise.all(owners.map((owner) => this.redis.zcard(this.keys.ownerParked(owner))));
    const parked: Record<string, number> = {};
    owners.forEach((owner, i) => {
      const count = counts[i] ?? 0;
      if (count > 0) parked[ownerLabel(owner)] = count;
    });
    return parked;
  }

  async #tool(entry: CatalogEntry, counters: Record<string, string>, sample: number): Promise<ToolSchedulingView> {
    const queue: Queue<ToolJobData> = this.queues.get(entry.queue);
    const rateMax = entry.scheduling?.rateLimit?.max;
    const [counts, limit, waiting, ttl] = await Promise.all([
      queue.getJobCounts('active', 'wait', 'prioritized', 'delayed'),
      queue.getGlobalConcurrency(),
      sample > 0 ? queue.getJobs(['prioritized', 'wait'], 0, sample - 1, true) : Promise.resolve([]),
      rateMax !== undefined ? queue.getRateLimitTtl(rateMax) : Promise.resolve(0),
    ]);
    const queuedByPrincipal: Record<string, number> = {};
    for (const job of waiting) {
      // Operators' view (the CLI, the dashboard, /metrics labels): a session owner by its label, never its id.
      const owner = job.data.owner !== undefined ? ownerLabel(job.data.owner) : '(unknown)';
      queuedByPrincipal[owner] = (queuedByPrincipal[owner] ?? 0) + 1;
    }
    const queued = (counts['wait'] ?? 0) + (counts['prioritized'] ?? 0);
    const counter = (name: SchedulingCounter) => Number(counters[`${entry.name}:${name}`] ?? 0);
    return {
      tool: entry.name,
      queue: entry.queue,
      scheduling: entry.scheduling ?? {},
      running: counts['active'] ?? 0,
      ...(limit !== null ? { limit } : {}),
      queued,
      delayed: counts['delayed'] ?? 0,
      queuedByPrincipal,
      queuedSampled: queued > waiting.length,
      rateLimitedForMs: Math.max(0, ttl),
      counters: {
        retries: counter(SchedulingCounter.Retries),
        timeouts: counter(SchedulingCounter.Timeouts),
        parked: counter(SchedulingCounter.Parked),
      },
    };
  }
}
